"""Writes through the API invalidate cached public reads in the same transaction (the session
hook), so a client never sees a taken-down plugin as listed."""

from __future__ import annotations

from typing import Any

import httpx

from tests.factories import Account, Factory
from tests.helpers import err, ok
from tests.plugins.helpers import create_version, publish, review_plugin

BROWSE = "/api/v1/plugins/browse"


async def _listed(
    client: httpx.AsyncClient, dev: Account, admin: Account, **overrides: Any
) -> dict[str, Any]:
    plugin = await publish(client, dev, **overrides)
    await create_version(client, dev, plugin, "1.0.0")
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    return plugin


async def _browse_keys(client: httpx.AsyncClient) -> list[str]:
    return [
        p["pluginKey"] for p in ok(await client.get(BROWSE, params={"sort": "newest"}))["items"]
    ]


async def test_takedown_removes_a_cached_listing_at_once(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await _listed(client, dev, admin)
    first = await client.get(BROWSE, params={"sort": "newest"})
    again = await client.get(BROWSE, params={"sort": "newest"})
    assert first.headers["etag"] == again.headers["etag"]  # served from the cache
    assert plugin["pluginKey"] in await _browse_keys(client)
    ok(await client.delete(f"/api/v1/developer/plugins/{plugin['id']}", headers=dev.headers))
    assert plugin["pluginKey"] not in await _browse_keys(client)
    err(await client.get(f"/api/v1/plugins/detail/{plugin['pluginKey']}"), 404, "PLUGIN_NOT_FOUND")


async def test_rejection_removes_a_cached_detail(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await _listed(client, dev, admin)
    ok(await client.get(f"/api/v1/plugins/detail/{plugin['id']}"))
    ok(await review_plugin(client, admin, plugin["id"], approved=False, reviewNote="no"))
    err(await client.get(f"/api/v1/plugins/detail/{plugin['id']}"), 404, "PLUGIN_NOT_FOUND")


async def test_admin_edit_shows_in_cached_browse(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await _listed(client, dev, admin)
    before = ok(await client.get(f"/api/v1/plugins/detail/{plugin['id']}"))
    ok(
        await client.put(
            f"/api/v1/admin/plugins/{plugin['id']}",
            json={"nameZh": "新的名字"},
            headers=admin.headers,
        )
    )
    after = ok(await client.get(f"/api/v1/plugins/detail/{plugin['id']}"))
    assert (before["nameZh"], after["nameZh"]) == ("天气", "新的名字")


async def test_new_current_version_shows_in_cached_versions(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await _listed(client, dev, admin)
    versions = f"/api/v1/plugins/versions/{plugin['id']}"
    assert [v["version"] for v in ok(await client.get(versions))["items"]] == ["1.0.0"]
    newer = await create_version(client, dev, plugin, "1.1.0")
    assert [v["version"] for v in ok(await client.get(versions))["items"]] == ["1.0.0"]
    ok(
        await client.post(
            f"/api/v1/admin/plugins/versions/{newer['id']}/review",
            json={"approved": True},
            headers=admin.headers,
        )
    )
    assert [v["version"] for v in ok(await client.get(versions))["items"]] == ["1.1.0", "1.0.0"]


async def test_category_rename_shows_in_cached_categories(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    names = {
        c["key"]: c["name"] for c in ok(await client.get("/api/v1/plugins/categories"))["items"]
    }
    assert names["ai"] == "AI"
    ok(
        await client.put(
            "/api/v1/admin/plugins/categories/ai",
            json={"name": "Artificial intelligence"},
            headers=admin.headers,
        )
    )
    names = {
        c["key"]: c["name"] for c in ok(await client.get("/api/v1/plugins/categories"))["items"]
    }
    assert names["ai"] == "Artificial intelligence"


async def test_install_count_shows_in_cached_detail(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, user = await factory.developer(), await factory.admin(), await factory.user()
    plugin = await _listed(client, dev, admin)
    assert ok(await client.get(f"/api/v1/plugins/detail/{plugin['id']}"))["downloadCount"] == 0
    ok(
        await client.post(
            f"/api/v1/plugins/install/{plugin['id']}",
            json={"version": "1.0.0"},
            headers=user.headers,
        ),
        201,
    )
    assert ok(await client.get(f"/api/v1/plugins/detail/{plugin['id']}"))["downloadCount"] == 1
