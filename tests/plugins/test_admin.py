"""Admin plugin group: create, update, delete, lists with counts, categories, audit logs."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest
from sqlalchemy import func, select

from marketplace.models import AuditLog, Plugin, Purchase
from tests.factories import Factory
from tests.helpers import err, field_names, ok
from tests.plugins.helpers import (
    create_version,
    publish,
    review_plugin,
    review_version,
    unique_key,
)

BASE = "/api/v1/admin/plugins"


def official(**overrides: object) -> dict[str, object]:
    body: dict[str, object] = {
        "pluginKey": unique_key("official"),
        "name": "Files",
        "nameZh": "文件",
        "description": "File tools",
        "descriptionZh": "文件工具",
        "type": "tool",
        "icon": "folder",
        "category": "utility",
        "tags": ["files"],
        "platforms": ["darwin", "win32", "linux"],
    }
    body.update(overrides)
    return body


async def test_admin_create_is_live_official_plugin(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    data = ok(await client.post(BASE, json=official(), headers=admin.headers), 201)
    assert data["id"] and data["reviewStatus"] == "approved" and data["enabled"] is True
    assert data["source"] == "official" and data["icon"] == "folder" and data["ownerId"] == admin.id
    assert data["platforms"] == ["darwin", "win32", "linux"]
    listed = ok(await client.get(BASE, params={"search": data["pluginKey"]}, headers=admin.headers))
    assert [p["id"] for p in listed["items"]] == [data["id"]]


async def test_admin_create_keeps_given_source(client: httpx.AsyncClient, factory: Factory) -> None:
    admin = await factory.admin()
    assert (
        ok(await client.post(BASE, json=official(source="partner"), headers=admin.headers), 201)[
            "source"
        ]
        == "partner"
    )


async def test_admin_create_errors(client: httpx.AsyncClient, factory: Factory) -> None:
    admin, dev = await factory.admin(), await factory.developer()
    body = official()
    err(await client.post(BASE, json=body, headers=dev.headers), 403, "FORBIDDEN")
    ok(await client.post(BASE, json=body, headers=admin.headers), 201)
    err(await client.post(BASE, json=body, headers=admin.headers), 409, "PLUGIN_KEY_EXISTS")
    err(
        await client.post(BASE, json=official(category="toys"), headers=admin.headers),
        400,
        "PLUGIN_INVALID_CATEGORY",
    )
    err(
        await client.post(BASE, json=official(platforms=["beos"]), headers=admin.headers),
        400,
        "VALIDATION_FAILED",
    )


async def test_admin_update_accepts_platform_fields(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    plugin = ok(await client.post(BASE, json=official(), headers=admin.headers), 201)
    data = ok(
        await client.put(
            f"{BASE}/{plugin['id']}",
            json={"featured": True, "enabled": False, "icon": "star", "nameZh": "文件夹"},
            headers=admin.headers,
        )
    )
    assert (data["featured"], data["enabled"], data["icon"], data["nameZh"]) == (
        True,
        False,
        "star",
        "文件夹",
    )


@pytest.mark.parametrize(
    "field", ["pluginKey", "source", "type", "price", "isFree", "validityDays", "reviewStatus"]
)
async def test_admin_update_refuses_immutable_field(
    client: httpx.AsyncClient, factory: Factory, sessionmaker, field: str
) -> None:
    admin = await factory.admin()
    plugin = ok(await client.post(BASE, json=official(), headers=admin.headers), 201)
    response = await client.put(f"{BASE}/{plugin['id']}", json={field: "x"}, headers=admin.headers)
    assert field in field_names(err(response, 400, "VALIDATION_FAILED"))
    async with sessionmaker() as session:
        row = await session.get(Plugin, plugin["id"])
        assert row is not None and row.plugin_key == plugin["pluginKey"] and row.type == "tool"


async def test_admin_update_of_developer_plugin_does_not_resubmit(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    ok(await review_plugin(client, admin, plugin["id"], approved=False))
    assert (
        ok(await client.put(f"{BASE}/{plugin['id']}", json={"nameZh": "x"}, headers=admin.headers))[
            "reviewStatus"
        ]
        == "rejected"
    )


async def test_admin_price_endpoint(client: httpx.AsyncClient, factory: Factory) -> None:
    admin = await factory.admin()
    plugin = ok(await client.post(BASE, json=official(), headers=admin.headers), 201)
    data = ok(
        await client.put(
            f"{BASE}/{plugin['id']}/price",
            json={"price": 30, "validityDays": 90},
            headers=admin.headers,
        )
    )
    assert (data["isFree"], data["price"], data["validityDays"]) == (False, 30, 90)


async def test_admin_delete_keeps_purchases_and_audit(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin, buyer = await factory.developer(), await factory.admin(), await factory.user()
    plugin = await publish(client, dev, isFree=False, price=2)
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    async with sessionmaker() as session:
        session.add(
            Purchase(
                user_id=buyer.id,
                plugin_id=plugin["id"],
                plugin_key=plugin["pluginKey"],
                price=Decimal("2"),
                status="paid",
                provider="builtin",
            )
        )
        await session.commit()
    assert ok(await client.delete(f"{BASE}/{plugin['id']}", headers=admin.headers)) == {
        "id": plugin["id"],
        "deleted": True,
    }
    async with sessionmaker() as session:
        assert await session.get(Plugin, plugin["id"]) is None
        purchase = await session.scalar(select(Purchase).where(Purchase.user_id == buyer.id))
        assert (
            purchase is not None
            and purchase.plugin_id is None
            and purchase.plugin_key == plugin["pluginKey"]
        )
        assert (
            await session.scalar(
                select(func.count())
                .select_from(AuditLog)
                .where(AuditLog.resource_id == plugin["id"])
            )
            == 1
        )
    err(
        await client.delete(f"{BASE}/{plugin['id']}", headers=admin.headers),
        404,
        "PLUGIN_NOT_FOUND",
    )


async def test_admin_list_counts_share_search_and_ignore_status(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    marker = unique_key("zeta")
    a = await publish(client, dev, pluginKey=f"{marker}-a")
    b = await publish(client, dev, pluginKey=f"{marker}-b")
    await publish(client, dev, pluginKey=f"{marker}-c")
    await publish(client, dev)  # outside the search
    ok(await review_plugin(client, admin, a["id"], approved=True))
    ok(await review_plugin(client, admin, b["id"], approved=False))
    data = ok(
        await client.get(
            BASE, params={"search": marker, "reviewStatus": "approved"}, headers=admin.headers
        )
    )
    assert [p["id"] for p in data["items"]] == [a["id"]]
    assert data["total"] == 1 and data["page"] == 1 and data["limit"] == 20
    assert data["counts"] == {"all": 3, "pending": 1, "approved": 1, "rejected": 1, "taken_down": 0}
    assert data["items"][0]["reviewerLabel"] == admin.name
    everything = ok(await client.get(BASE, params={"search": marker}, headers=admin.headers))
    assert everything["total"] == 3


async def test_admin_list_search_by_name_and_limit_clamp(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev, name="Quasar Unique Name")
    data = ok(
        await client.get(
            BASE, params={"search": "quasar unique", "limit": 1000}, headers=admin.headers
        )
    )
    assert [p["id"] for p in data["items"]] == [plugin["id"]] and data["limit"] == 100
    err(await client.get(BASE, params={"page": 0}, headers=admin.headers), 400, "VALIDATION_FAILED")
    err(
        await client.get(BASE, params={"reviewStatus": "nope"}, headers=admin.headers),
        400,
        "VALIDATION_FAILED",
    )


async def test_admin_list_search_treats_wildcards_literally(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    await publish(client, dev, name="Plain")
    assert ok(await client.get(BASE, params={"search": "%"}, headers=admin.headers))["total"] == 0


async def test_reviewer_label_falls_back_for_system(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    await create_version(client, dev, plugin, "1.0.0", config=[{"key": "a"}, {"key": "a"}])
    data = ok(
        await client.get(
            f"{BASE}/versions/pending", params={"reviewStatus": "rejected"}, headers=admin.headers
        )
    )
    assert [v["reviewerLabel"] for v in data["items"]] == ["system"]


async def test_pending_versions_list_defaults_to_pending(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    marker = unique_key("vlist")
    plugin = await publish(client, dev, pluginKey=marker)
    v1 = await create_version(client, dev, plugin, "1.0.0")
    v2 = await create_version(client, dev, plugin, "2.0.0")
    ok(await review_version(client, admin, v1["id"], approved=True))
    pending = ok(
        await client.get(
            f"{BASE}/versions/pending", params={"search": marker}, headers=admin.headers
        )
    )
    assert [v["id"] for v in pending["items"]] == [v2["id"]]
    assert (
        pending["items"][0]["pluginKey"] == marker
        and pending["items"][0]["pluginName"] == "Weather"
    )
    assert pending["counts"] == {
        "all": 2,
        "pending": 1,
        "approved": 1,
        "rejected": 0,
        "taken_down": 0,
    }
    everything = ok(
        await client.get(
            f"{BASE}/versions/pending",
            params={"search": marker, "reviewStatus": "all"},
            headers=admin.headers,
        )
    )
    assert {v["id"] for v in everything["items"]} == {v1["id"], v2["id"]} and everything[
        "total"
    ] == 2
    by_version = ok(
        await client.get(
            f"{BASE}/versions/pending",
            params={"search": "2.0.0", "reviewStatus": "all"},
            headers=admin.headers,
        )
    )
    assert v2["id"] in {v["id"] for v in by_version["items"]} and v1["id"] not in {
        v["id"] for v in by_version["items"]
    }


async def test_plugin_versions_lists_every_state_newest_first(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    v1 = await create_version(client, dev, plugin, "1.0.0")
    await create_version(client, dev, plugin, "1.10.0")
    await create_version(client, dev, plugin, "1.9.0")
    ok(await review_version(client, admin, v1["id"], approved=False))
    data = ok(await client.get(f"{BASE}/{plugin['id']}/versions", headers=admin.headers))
    assert [(v["version"], v["reviewStatus"]) for v in data["items"]] == [
        ("1.10.0", "pending"),
        ("1.9.0", "pending"),
        ("1.0.0", "rejected"),
    ]


async def test_admin_create_version_is_approved_and_current(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    plugin = ok(await client.post(BASE, json=official(type="mcp"), headers=admin.headers), 201)
    version = await create_version(client, admin, plugin, "1.0.0", admin=True)
    assert version["reviewStatus"] == "approved" and version["isLatest"] is True
    newer = await create_version(client, admin, plugin, "1.1.0", admin=True)
    states = {
        v["version"]: v["isLatest"]
        for v in ok(await client.get(f"{BASE}/{plugin['id']}/versions", headers=admin.headers))[
            "items"
        ]
    }
    assert states == {"1.0.0": False, "1.1.0": True} and newer["isLatest"] is True


async def test_categories_list_has_the_ten_seed_categories(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    data = ok(await client.get(f"{BASE}/categories", headers=admin.headers))
    assert [c["key"] for c in data["items"]] == [
        "productivity",
        "development",
        "automation",
        "database",
        "design",
        "frontend",
        "office",
        "ai",
        "utility",
        "channel",
    ]
    assert data["items"][0] == {
        "key": "productivity",
        "name": "Productivity",
        "nameZh": "效率",
        "sortOrder": 10,
    }


async def test_category_add_rename_delete(client: httpx.AsyncClient, factory: Factory) -> None:
    admin, dev = await factory.admin(), await factory.developer()
    added = ok(
        await client.post(
            f"{BASE}/categories",
            json={"key": "games", "name": "Games", "nameZh": "游戏", "sortOrder": 200},
            headers=admin.headers,
        ),
        201,
    )
    assert added["key"] == "games"
    err(
        await client.post(
            f"{BASE}/categories",
            json={"key": "games", "name": "G", "nameZh": "G"},
            headers=admin.headers,
        ),
        409,
        "INVALID_STATE",
    )
    renamed = ok(
        await client.put(f"{BASE}/categories/games", json={"name": "Fun"}, headers=admin.headers)
    )
    assert (renamed["name"], renamed["nameZh"]) == ("Fun", "游戏")
    plugin = await publish(client, dev, category="games")
    err(
        await client.delete(f"{BASE}/categories/games", headers=admin.headers), 409, "INVALID_STATE"
    )
    ok(
        await client.put(
            f"/api/v1/developer/plugins/{plugin['id']}",
            json={"category": "ai"},
            headers=dev.headers,
        )
    )
    ok(await client.delete(f"{BASE}/categories/games", headers=admin.headers))
    keys = [
        c["key"] for c in ok(await client.get(f"{BASE}/categories", headers=admin.headers))["items"]
    ]
    assert "games" not in keys
    err(
        await client.put(f"{BASE}/categories/games", json={"name": "x"}, headers=admin.headers),
        404,
        "NOT_FOUND",
    )
    err(await client.delete(f"{BASE}/categories/games", headers=admin.headers), 404, "NOT_FOUND")
    err(
        await client.post(
            f"{BASE}/categories",
            json={"key": "Bad Key", "name": "x", "nameZh": "x"},
            headers=admin.headers,
        ),
        400,
        "VALIDATION_FAILED",
    )
    err(await client.get(f"{BASE}/categories", headers=dev.headers), 403, "FORBIDDEN")


async def test_audit_logs_filter_and_shape(client: httpx.AsyncClient, factory: Factory) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    version = await create_version(client, dev, plugin, "1.0.0")
    ok(await review_plugin(client, admin, plugin["id"], approved=True, reviewNote="fine"))
    data = ok(
        await client.get(
            "/api/v1/admin/audit-logs", params={"resourceId": plugin["id"]}, headers=admin.headers
        )
    )
    assert data["total"] == 1 and data["limit"] == 20
    item = data["items"][0]
    assert (
        item["action"] == "REVIEW_APPROVE"
        and item["actorId"] == admin.id
        and item["createdAt"].endswith("Z")
    )
    assert item["detail"] == {
        "resourceType": "plugin",
        "resourceId": plugin["id"],
        "outcome": "approved",
        "trigger": "admin",
        "note": "fine",
    }
    linkage = ok(
        await client.get(
            "/api/v1/admin/audit-logs",
            params={"resourceId": version["id"], "action": "REVIEW_APPROVE"},
            headers=admin.headers,
        )
    )
    assert [i["detail"]["trigger"] for i in linkage["items"]] == ["linkage"]
    assert (
        ok(
            await client.get(
                "/api/v1/admin/audit-logs",
                params={"resourceType": "plugin_version", "action": "REVIEW_REJECT"},
                headers=admin.headers,
            )
        )["total"]
        == 0
    )
    err(await client.get("/api/v1/admin/audit-logs", headers=dev.headers), 403, "FORBIDDEN")


async def test_audit_logs_have_no_write_routes(client: httpx.AsyncClient, factory: Factory) -> None:
    admin = await factory.admin()
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        response = await client.request(method, "/api/v1/admin/audit-logs", headers=admin.headers)
        assert response.status_code == 405


@pytest.mark.parametrize("field", ["name", "nameZh"])
async def test_a_category_name_longer_than_its_column_is_refused_not_a_500(
    client: httpx.AsyncClient, factory: Factory, field: str
) -> None:
    admin = await factory.admin()
    body = {"key": "long-name", "name": "Long", "nameZh": "长", field: "n" * 101}

    response = await client.post(
        "/api/v1/admin/plugins/categories", json=body, headers=admin.headers
    )

    error = err(response, 400, "VALIDATION_FAILED")
    assert [f["field"] for f in error["details"]["fields"]] == [field]
    listed = ok(await client.get("/api/v1/admin/plugins/categories", headers=admin.headers))
    assert "long-name" not in [c["key"] for c in listed["items"]]
