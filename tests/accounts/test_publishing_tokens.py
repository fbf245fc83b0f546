"""Publishing tokens (CONTRACT 11): issue, list, revoke, and every refusal of a token."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.auth import pat as pat_module
from marketplace.auth.pat import TOUCH_EVERY
from marketplace.errors import DatabaseUnavailable
from marketplace.models import Plugin, PublishingToken
from tests.accounts.tokens import TOKENS, expire, issue, listed
from tests.factories import Factory
from tests.helpers import err, field_names, ok
from tests.plugins.helpers import publish, publish_body, unique_key
from tests.plugins.test_upload import tool_package, upload

SHAPE = {
    "id",
    "name",
    "scopes",
    "plugins",
    "expiresAt",
    "createdAt",
    "lastUsedAt",
    "revokedAt",
    "revokedReason",
}


async def token_row(sessions: async_sessionmaker[AsyncSession], token_id: str) -> PublishingToken:
    async with sessions() as session:
        row = await session.get(PublishingToken, token_id)
        assert row is not None
        return row


# ---------- issue, list, revoke ----------


async def test_create_shows_the_token_once_and_stores_only_its_hash(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    dev = await factory.developer()
    before = datetime.now(UTC)
    pat = await issue(client, dev, scopes=["publish"], plugins=["alpha-one"], days=7)
    assert set(pat.data) == SHAPE | {"token"}
    assert pat.token.startswith("mkt_pat_") and len(pat.token) == len("mkt_pat_") + 43
    assert pat.data["scopes"] == ["publish"] and pat.data["plugins"] == ["alpha-one"]
    assert pat.data["lastUsedAt"] is None and pat.data["revokedAt"] is None
    expires = datetime.fromisoformat(pat.data["expiresAt"])
    assert before + timedelta(days=7) <= expires <= datetime.now(UTC) + timedelta(days=7)
    row = await token_row(sessionmaker, pat.id)
    assert row.token_hash == hashlib.sha256(pat.token.encode()).hexdigest()
    stored = [str(getattr(row, column)) for column in PublishingToken.__table__.columns.keys()]
    assert all(pat.token not in value for value in stored)
    items = await listed(client, dev)
    assert set(items[pat.id]) == SHAPE  # no token in the list
    assert pat.token not in str(items)


async def test_list_shows_only_own_tokens_newest_first(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, other = await factory.developer(), await factory.developer()
    first = await issue(client, dev, name="first")
    second = await issue(client, dev, name="second")
    await issue(client, other)
    data = ok(await client.get(TOKENS, headers=dev.headers))
    assert [item["id"] for item in data["items"]] == [second.id, first.id]


async def test_delete_revokes_the_token_which_then_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    pat = await issue(client, dev)
    ok(await client.get("/api/v1/developer/plugins", headers=pat.headers))
    gone = ok(await client.delete(f"{TOKENS}/{pat.id}", headers=dev.headers))
    assert gone["revokedReason"] == "deleted by its owner" and gone["revokedAt"] is not None
    assert "token" not in gone
    err(await client.get("/api/v1/developer/plugins", headers=pat.headers), 401, "UNAUTHORIZED")
    assert (await listed(client, dev))[pat.id]["revokedReason"] == "deleted by its owner"
    again = ok(await client.delete(f"{TOKENS}/{pat.id}", headers=dev.headers))
    assert again["revokedAt"] == gone["revokedAt"]


async def test_delete_of_another_accounts_token_is_404_and_leaves_it_alive(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, other = await factory.developer(), await factory.developer()
    pat = await issue(client, dev)
    err(await client.delete(f"{TOKENS}/{pat.id}", headers=other.headers), 404, "NOT_FOUND")
    err(await client.delete(f"{TOKENS}/not-an-id", headers=other.headers), 404, "NOT_FOUND")
    ok(await client.get("/api/v1/developer/plugins", headers=pat.headers))


async def test_token_endpoints_need_a_login(client: httpx.AsyncClient) -> None:
    err(await client.get(TOKENS), 401, "UNAUTHORIZED")
    body = {"name": "ci", "scopes": ["read"], "expiresInDays": 1}
    err(await client.post(TOKENS, json=body), 401, "UNAUTHORIZED")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "a\u202eb"}, "name"),
        ({"scopes": []}, "scopes"),
        ({"scopes": ["admin"]}, "scopes"),
        ({"scopes": ["read", "read"]}, "scopes"),
        ({"scopes": "read"}, "scopes"),
        ({"plugins": []}, "plugins"),
        ({"plugins": ["Not A Key"]}, "plugins"),
        ({"plugins": ["alpha-one", "alpha-one"]}, "plugins"),
        ({"plugins": [7]}, "plugins"),
        ({"expiresInDays": 0}, "expiresInDays"),
        ({"expiresInDays": 366}, "expiresInDays"),
        ({"expiresInDays": "30"}, "expiresInDays"),
        ({"expiresInDays": 1.5}, "expiresInDays"),
        ({"expiresInDays": True}, "expiresInDays"),
        ({"expiresInDays": None}, "expiresInDays"),
        ({"owner": "me"}, "owner"),
    ],
)
async def test_create_refuses_bad_input_with_validation_failed(
    client: httpx.AsyncClient, factory: Factory, change: dict[str, Any], field: str
) -> None:
    dev = await factory.developer()
    body = {"name": "ci", "scopes": ["publish"], "expiresInDays": 30, **change}
    error = err(await client.post(TOKENS, json=body, headers=dev.headers), 400, "VALIDATION_FAILED")
    assert any(name.split(".")[0] == field for name in field_names(error)), error
    assert (await listed(client, dev)) == {}


async def test_create_accepts_the_bounds_of_expiry(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    await issue(client, dev, days=1)
    await issue(client, dev, days=365)
    assert len(await listed(client, dev)) == 2


# ---------- what a token reaches ----------


async def test_publish_token_publishes_and_uploads_like_its_owner(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    pat = await issue(client, dev, scopes=["publish"])
    created = ok(
        await client.post(
            "/api/v1/developer/plugins/publish",
            json=publish_body(type="tool", category="utility"),
            headers=pat.headers,
        ),
        201,
    )
    data = tool_package(created["pluginKey"], "1.0.0")
    version = ok(await upload(client, pat, created, data), 201)  # type: ignore[arg-type]
    assert version["reviewStatus"] == "pending"
    mine = ok(await client.get("/api/v1/developer/plugins", headers=dev.headers))
    assert [item["id"] for item in mine["items"]] == [created["id"]]


async def test_unknown_token_is_401(client: httpx.AsyncClient) -> None:
    headers = {"Authorization": "Bearer mkt_pat_" + "A" * 43}
    error = err(await client.get("/api/v1/plugins/browse", headers=headers), 401, "UNAUTHORIZED")
    assert "mkt_pat_" not in error["message"]


async def test_expired_token_is_401(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    dev = await factory.developer()
    pat = await issue(client, dev)
    await expire(sessionmaker, pat.id)
    error = err(
        await client.get("/api/v1/developer/plugins", headers=pat.headers), 401, "UNAUTHORIZED"
    )
    assert "expired" in error["message"]
    body = publish_body()
    err(
        await client.post("/api/v1/developer/plugins/publish", json=body, headers=pat.headers),
        401,
        "UNAUTHORIZED",
    )


async def test_read_token_cannot_write(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    pat = await issue(client, dev, scopes=["read"])
    ok(await client.get("/api/v1/developer/plugins", headers=pat.headers))
    ok(await client.get("/api/v1/plugins/browse", headers=pat.headers))
    body = publish_body()
    err(
        await client.post("/api/v1/developer/plugins/publish", json=body, headers=pat.headers),
        403,
        "FORBIDDEN",
    )
    mine = ok(await client.get("/api/v1/developer/plugins", headers=dev.headers))
    assert mine["items"] == []


async def test_publish_token_cannot_read_outside_the_developer_group(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    pat = await issue(client, dev, scopes=["publish"])
    ok(await client.get("/api/v1/developer/plugins", headers=pat.headers))
    ok(await client.get("/api/v1/plugins/categories", headers=pat.headers))  # the tool needs it
    ok(await client.get("/api/v1/limits", headers=pat.headers))  # and this, before writing
    err(await client.get("/api/v1/plugins/browse", headers=pat.headers), 403, "FORBIDDEN")
    err(await client.get("/api/v1/plugins/installed", headers=pat.headers), 403, "FORBIDDEN")


async def test_token_limited_to_plugins_cannot_touch_another(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    dev = await factory.developer()
    allowed = await publish(client, dev)
    other = await publish(client, dev)
    pat = await issue(client, dev, scopes=["publish"], plugins=[allowed["pluginKey"]])
    price = {"isFree": True}
    path = "/api/v1/developer/plugins"
    ok(await client.put(f"{path}/{allowed['id']}", json={"name": "Renamed"}, headers=pat.headers))
    err(
        await client.put(f"{path}/{other['id']}", json={"name": "Renamed"}, headers=pat.headers),
        403,
        "FORBIDDEN",
    )
    err(
        await client.put(f"{path}/{other['id']}/price", json=price, headers=pat.headers),
        403,
        "FORBIDDEN",
    )
    err(await client.delete(f"{path}/{other['id']}", headers=pat.headers), 403, "FORBIDDEN")
    data = tool_package(other["pluginKey"], "1.0.0")
    err(await upload(client, pat, other, data), 403, "FORBIDDEN")  # type: ignore[arg-type]
    body = publish_body(pluginKey=unique_key())
    err(await client.post(f"{path}/publish", json=body, headers=pat.headers), 403, "FORBIDDEN")
    async with sessionmaker() as session:
        names = {row.id: row.name for row in await session.scalars(select(Plugin))}
    assert names[allowed["id"]] == "Renamed" and names[other["id"]] == other["name"]
    assert len(names) == 2
    # Scenarios have no pluginKey: a token limited to plugins cannot write them.
    scenario = {"id": "scen-abcdef", "version": "1.0.0", "name": "S", "type": "programmatic"}
    err(
        await client.post(
            "/api/v1/marketplace/developer/publish",
            json={**scenario, "category": "development"},
            headers=pat.headers,
        ),
        403,
        "FORBIDDEN",
    )


async def test_role_lowered_after_issue_lowers_the_token(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    boss = await factory.super_admin()
    pat = await issue(client, dev, scopes=["publish", "read"])
    ok(await client.get("/api/v1/developer/plugins", headers=pat.headers))
    ok(
        await client.put(
            f"/api/v1/admin/users/{dev.id}/role", json={"role": "USER"}, headers=boss.headers
        )
    )
    err(await client.get("/api/v1/developer/plugins", headers=pat.headers), 403, "FORBIDDEN")
    err(
        await client.post(
            "/api/v1/developer/plugins/publish", json=publish_body(), headers=pat.headers
        ),
        403,
        "FORBIDDEN",
    )


async def test_admin_token_does_not_reach_admin_writes(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    pat = await issue(client, admin, scopes=["publish", "read"])
    body = {"key": "tokens-cat", "name": "Cat", "nameZh": "猫", "sortOrder": 1}
    err(
        await client.post("/api/v1/admin/plugins/categories", json=body, headers=pat.headers),
        403,
        "FORBIDDEN",
    )
    ok(await client.get("/api/v1/admin/plugins/categories", headers=pat.headers))
    categories = ok(await client.get("/api/v1/admin/plugins/categories", headers=admin.headers))
    assert "tokens-cat" not in str(categories)


async def test_token_cannot_buy_install_or_rate(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    pat = await issue(client, user, scopes=["publish", "read"])
    for path, body in [
        (f"/api/v1/plugins/purchase/{plugin.id}", {"idempotencyKey": "k-123456789"}),
        (f"/api/v1/plugins/install/{plugin.id}", {"version": "1.0.0"}),
        (f"/api/v1/plugins/rate/{plugin.id}", {"score": 5}),
    ]:
        err(await client.post(path, json=body, headers=pat.headers), 403, "FORBIDDEN")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", TOKENS),
        ("POST", TOKENS),
        ("DELETE", f"{TOKENS}/SELF"),
        ("GET", "/api/v1/auth/me"),
        ("POST", "/api/v1/developer/register"),
        ("POST", "/api/v1/developer/identity"),
        ("GET", "/api/v1/developer/identity/status"),
    ],
)
async def test_token_cannot_manage_tokens_or_the_account(
    client: httpx.AsyncClient, factory: Factory, method: str, path: str
) -> None:
    dev = await factory.developer()
    pat = await issue(client, dev, scopes=["publish", "read"])
    body = {"name": "more", "scopes": ["read"], "expiresInDays": 1}
    response = await client.request(
        method,
        path.replace("SELF", pat.id),
        json=body if method == "POST" else None,
        headers=pat.headers,
    )
    err(response, 403, "FORBIDDEN")
    tokens = await listed(client, dev)
    assert list(tokens) == [pat.id] and tokens[pat.id]["revokedAt"] is None


async def test_last_used_moves_at_most_once_a_minute(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    dev = await factory.developer()
    pat = await issue(client, dev, scopes=["read"])
    ok(await client.get("/api/v1/developer/plugins", headers=pat.headers))
    first = (await token_row(sessionmaker, pat.id)).last_used_at
    assert first is not None
    ok(await client.get("/api/v1/developer/plugins", headers=pat.headers))
    assert (await token_row(sessionmaker, pat.id)).last_used_at == first
    # A minute later (moved back rather than waited for), the next use moves it again.
    async with sessionmaker.begin() as session:
        await session.execute(
            update(PublishingToken)
            .where(PublishingToken.id == pat.id)
            .values(last_used_at=first - TOUCH_EVERY)
        )
    ok(await client.get("/api/v1/developer/plugins", headers=pat.headers))
    later = (await token_row(sessionmaker, pat.id)).last_used_at
    assert later is not None and later >= first
    assert (await listed(client, dev))[pat.id]["lastUsedAt"] is not None


async def test_last_used_is_kept_on_a_write(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    dev = await factory.developer()
    pat = await issue(client, dev, scopes=["publish"])
    ok(
        await client.post(
            "/api/v1/developer/plugins/publish", json=publish_body(), headers=pat.headers
        ),
        201,
    )
    assert (await token_row(sessionmaker, pat.id)).last_used_at is not None


async def test_a_read_is_not_failed_when_last_used_cannot_be_written(
    client: httpx.AsyncClient, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    dev = await factory.developer()
    pat = await issue(client, dev, scopes=["read"])

    async def unavailable(*_args: object) -> None:
        raise DatabaseUnavailable()

    monkeypatch.setattr(pat_module, "touch_apart", unavailable)
    ok(await client.get("/api/v1/developer/plugins", headers=pat.headers))
    assert (await listed(client, dev))[pat.id]["lastUsedAt"] is None
