"""Logged-in cache hits (issue 14): the shared page plus the caller's own purchase states,
answered without the route's full path, and exactly what the full path would answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import User
from tests.accounts.tokens import issue
from tests.factories import Factory
from tests.helpers import err, ok

API = "/api/v1/plugins"
NEVER = {"purchased": False, "active": False, "expiresAt": None}


def purchases_by_id(body: dict) -> dict[str, dict]:
    return {item["id"]: item["purchase"] for item in body["items"]}


async def test_each_caller_sees_only_their_own_purchases_on_a_shared_page(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    paid = await factory.plugin(is_free=False, price=300, download_count=10)
    free = await factory.plugin(download_count=5)
    buyer, stranger = await factory.user(), await factory.user()
    await factory.purchase(buyer, paid)
    anonymous = ok(await client.get(f"{API}/browse"))  # fills the shared entry
    assert all(item.get("purchase") is None for item in anonymous["items"])
    for _ in range(2):  # the second round is answered from the unbought copy kept
        mine = purchases_by_id(ok(await client.get(f"{API}/browse", headers=buyer.headers)))
        assert mine[paid.id] == {"purchased": True, "active": True, "expiresAt": None}
        assert mine[free.id] == NEVER
        theirs = purchases_by_id(ok(await client.get(f"{API}/browse", headers=stranger.headers)))
        assert theirs[paid.id] == NEVER and theirs[free.id] == NEVER
    again = await client.get(f"{API}/browse", headers=buyer.headers)
    assert again.headers["cache-control"] == "private, no-cache"


async def test_an_expired_subscription_is_inactive_on_a_hit(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin(is_free=False, price=300)
    buyer = await factory.user()
    await factory.purchase(buyer, plugin, expires_at=datetime.now(UTC) - timedelta(days=1))
    ok(await client.get(f"{API}/detail/{plugin.id}"))
    state = ok(await client.get(f"{API}/detail/{plugin.id}", headers=buyer.headers))["purchase"]
    assert state["purchased"] is True and state["active"] is False
    assert datetime.fromisoformat(state["expiresAt"]) < datetime.now(UTC)


async def test_a_deleted_account_is_401_on_a_cached_page(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    await factory.plugin()
    account = await factory.user()
    for path in (f"{API}/browse", f"{API}/categories"):
        ok(await client.get(path, headers=account.headers))  # the entry and a hit exist
    async with sessionmaker() as session:
        await session.delete(await session.get(User, account.id))
        await session.commit()
    for path in (f"{API}/browse", f"{API}/categories"):
        err(await client.get(path, headers=account.headers), 401, "UNAUTHORIZED")


async def test_a_publishing_token_keeps_its_scopes_on_a_cached_page(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin()
    dev = await factory.developer()
    ok(await client.get(f"{API}/browse"))
    publish_only = await issue(client, dev, scopes=["publish"])
    err(await client.get(f"{API}/browse", headers=publish_only.headers), 403, "FORBIDDEN")
    reader = await issue(client, dev, scopes=["read"])
    items = ok(await client.get(f"{API}/browse", headers=reader.headers))["items"]
    assert items and all(item["purchase"] == NEVER for item in items)


async def test_a_hit_answers_like_the_full_path(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """The first logged-in request builds the entry (full path), the second is a hit."""
    plugin = await factory.plugin(is_free=False, price=300)
    buyer = await factory.user()
    await factory.purchase(buyer, plugin)
    for path in (f"{API}/detail/{plugin.id}", f"{API}/popular", f"{API}/categories"):
        built = await client.get(path, headers=buyer.headers)
        hit = await client.get(path, headers=buyer.headers)
        assert (hit.status_code, hit.content) == (built.status_code, built.content), path
        for header in ("etag", "cache-control", "vary"):
            assert hit.headers[header] == built.headers[header], (path, header)
        lower = await client.get(
            path,
            headers={"Authorization": buyer.headers["Authorization"].replace("Bearer", "bearer")},
        )
        assert lower.content == built.content, path
    detail = await client.get(f"{API}/detail/{plugin.id}", headers=buyer.headers)
    revalidated = await client.get(
        f"{API}/detail/{plugin.id}",
        headers={**buyer.headers, "If-None-Match": detail.headers["etag"]},
    )
    assert revalidated.status_code == 304
