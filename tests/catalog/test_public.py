"""Public reads other than browse: featured, popular, categories, detail, versions, reviews."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from marketplace.models import Plugin, Rating
from tests.factories import Account, Factory
from tests.helpers import err, field_names, ok

API = "/api/v1/plugins"

UNLISTED = [
    {"review_status": "pending"},
    {"review_status": "rejected"},
    {"review_status": "taken_down"},
    {"review_status": "approved", "enabled": False},
]


def keys(data: dict[str, Any]) -> list[str]:
    return [item["pluginKey"] for item in data["items"]]


# ---------------------------------------------------------------- featured and popular


async def test_featured_lists_featured_listed_plugins_by_downloads(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="feat-low", featured=True, download_count=1)
    await factory.plugin(plugin_key="feat-high", featured=True, download_count=5)
    await factory.plugin(plugin_key="plain", download_count=99)
    await factory.plugin(plugin_key="feat-down", featured=True, review_status="taken_down")
    data = ok(await client.get(f"{API}/featured"))
    assert keys(data) == ["feat-high", "feat-low"]
    assert set(data) == {"items"}


async def test_featured_limit_defaults_to_10(client: httpx.AsyncClient, factory: Factory) -> None:
    for _ in range(12):
        await factory.plugin(featured=True)
    assert len(ok(await client.get(f"{API}/featured"))["items"]) == 10


async def test_featured_limit_zero_is_400(client: httpx.AsyncClient) -> None:
    error = err(await client.get(f"{API}/featured", params={"limit": 0}), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"limit"}


async def test_popular_sorts_by_download_count(client: httpx.AsyncClient, factory: Factory) -> None:
    await factory.plugin(plugin_key="mid", download_count=5)
    await factory.plugin(plugin_key="top", download_count=50)
    await factory.plugin(plugin_key="low", download_count=0)
    await factory.plugin(plugin_key="hidden", download_count=500, review_status="pending")
    assert keys(ok(await client.get(f"{API}/popular"))) == ["top", "mid", "low"]


async def test_popular_honours_limit(client: httpx.AsyncClient, factory: Factory) -> None:
    for n in range(4):
        await factory.plugin(download_count=n)
    assert len(ok(await client.get(f"{API}/popular", params={"limit": 2}))["items"]) == 2


async def test_popular_limit_over_50_becomes_50(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    for _ in range(52):
        await factory.plugin()
    assert len(ok(await client.get(f"{API}/popular", params={"limit": 80}))["items"]) == 50


async def test_popular_items_carry_purchase_state_for_a_logged_in_caller(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    buyer = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.purchase(buyer, plugin)
    item = ok(await client.get(f"{API}/popular", headers=buyer.headers))["items"][0]
    assert item["purchase"] == {"purchased": True, "active": True, "expiresAt": None}


# ---------------------------------------------------------------- categories


async def test_categories_count_listed_plugins_only(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(category="ai")
    await factory.plugin(category="ai")
    await factory.plugin(category="ai", review_status="pending")
    await factory.plugin(category="database", enabled=False)
    items = ok(await client.get(f"{API}/categories"))["items"]
    counts = {item["key"]: item["count"] for item in items}
    assert counts["ai"] == 2
    assert counts["database"] == 0
    assert len(items) == 10


async def test_categories_are_in_sort_order_with_names(client: httpx.AsyncClient) -> None:
    items = ok(await client.get(f"{API}/categories"))["items"]
    assert items[0] == {"key": "productivity", "name": "Productivity", "nameZh": "效率", "count": 0}
    assert [item["key"] for item in items][:3] == ["productivity", "development", "automation"]


# ---------------------------------------------------------------- detail


async def test_detail_by_id(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin()
    data = ok(await client.get(f"{API}/detail/{plugin.id}"))
    assert data["id"] == plugin.id
    assert data["pluginKey"] == plugin.plugin_key
    assert data["purchase"] is None


async def test_detail_by_plugin_key(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin(plugin_key="by-key")
    assert ok(await client.get(f"{API}/detail/by-key"))["id"] == plugin.id


@pytest.mark.parametrize("state", UNLISTED)
async def test_detail_of_unlisted_plugin_is_404(
    client: httpx.AsyncClient, factory: Factory, state: dict[str, Any]
) -> None:
    plugin = await factory.plugin(**state)
    err(await client.get(f"{API}/detail/{plugin.id}"), 404, "PLUGIN_NOT_FOUND")


async def test_detail_of_unknown_plugin_is_404(client: httpx.AsyncClient) -> None:
    err(await client.get(f"{API}/detail/no-such-plugin"), 404, "PLUGIN_NOT_FOUND")


async def test_detail_shows_active_subscription_to_its_buyer(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    buyer = await factory.user()
    plugin = await factory.plugin(is_free=False, validity_days=30)
    expires = (datetime.now(UTC) + timedelta(days=10)).replace(microsecond=0)
    await factory.purchase(buyer, plugin, expires_at=expires)
    data = ok(await client.get(f"{API}/detail/{plugin.id}", headers=buyer.headers))
    assert data["purchase"] == {
        "purchased": True,
        "active": True,
        "expiresAt": expires.isoformat().replace("+00:00", "Z"),
    }


async def test_detail_shows_not_purchased_to_another_user(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    buyer, other = await factory.user(), await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.purchase(buyer, plugin)
    data = ok(await client.get(f"{API}/detail/{plugin.id}", headers=other.headers))
    assert data["purchase"] == {"purchased": False, "active": False, "expiresAt": None}


async def test_detail_with_invalid_token_is_401(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    err(
        await client.get(f"{API}/detail/{plugin.id}", headers={"Authorization": "Bearer x.y.z"}),
        401,
        "UNAUTHORIZED",
    )


# ---------------------------------------------------------------- versions


async def test_versions_lists_approved_versions_newest_semver_first(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    for version in ["1.0.0-alpha.9", "1.0.0", "1.0.0-alpha.10", "0.9.0"]:
        await factory.version(plugin, version, is_latest=False)
    await factory.version(plugin, "1.1.0")
    await factory.version(plugin, "2.0.0", review_status="pending")
    await factory.version(plugin, "1.2.0", review_status="rejected")
    items = ok(await client.get(f"{API}/versions/{plugin.plugin_key}"))["items"]
    assert [v["version"] for v in items] == [
        "1.1.0",
        "1.0.0",
        "1.0.0-alpha.10",
        "1.0.0-alpha.9",
        "0.9.0",
    ]
    assert [v["isLatest"] for v in items] == [True, False, False, False, False]


async def test_versions_item_is_the_public_view(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    version = await factory.version(plugin, "1.0.0", changelog="first")
    item = ok(await client.get(f"{API}/versions/{plugin.id}"))["items"][0]
    assert item == {
        "id": version.id,
        "pluginId": plugin.id,
        "version": "1.0.0",
        "changelog": "first",
        "manifest": version.manifest,
        "sha256": version.sha256,
        "size": 4096,
        "distribution": "tarball",
        "channel": "stable",
        "rollout": {
            "percent": 100,
            "state": "full",
            "haltedReason": None,
            "updatedAt": item["createdAt"],
        },
        "isLatest": True,
        "reviewStatus": "approved",
        "createdAt": item["createdAt"],
    }


async def test_versions_never_show_inline_code(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0", distribution="inline")
    manifest = ok(await client.get(f"{API}/versions/{plugin.id}"))["items"][0]["manifest"]
    assert "inlineCode" not in manifest
    assert manifest["id"] == plugin.plugin_key


async def test_versions_of_a_paid_plugin_hide_the_mcp_launch_block(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    free = await factory.plugin()
    paid = await factory.plugin(is_free=False)
    await factory.version(free, "1.0.0", distribution="config_only")
    await factory.version(paid, "1.0.0", distribution="config_only")
    free_manifest = ok(await client.get(f"{API}/versions/{free.id}"))["items"][0]["manifest"]
    paid_manifest = ok(await client.get(f"{API}/versions/{paid.id}"))["items"][0]["manifest"]
    assert "mcp" in free_manifest
    assert "mcp" not in paid_manifest


@pytest.mark.parametrize("state", UNLISTED)
async def test_versions_of_unlisted_plugin_is_404(
    client: httpx.AsyncClient, factory: Factory, state: dict[str, Any]
) -> None:
    plugin = await factory.plugin(**state)
    await factory.version(plugin, review_status="approved", is_latest=False)
    err(await client.get(f"{API}/versions/{plugin.id}"), 404, "PLUGIN_NOT_FOUND")


# ---------------------------------------------------------------- reviews


async def _rating(
    factory: Factory, plugin: Plugin, score: int, comment: str | None, age_days: int
) -> Account:
    user = await factory.user(name=f"Rater {score}{age_days}")
    async with factory.sessions() as session:
        when = datetime.now(UTC) - timedelta(days=age_days)
        session.add(
            Rating(
                user_id=user.id,
                plugin_id=plugin.id,
                score=score,
                comment=comment,
                created_at=when,
                updated_at=when,
            )
        )
        await session.commit()
    return user


async def test_reviews_list_newest_first_with_average_and_count(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin(rating_sum=9, rating_count=2)
    await _rating(factory, plugin, 5, "great", age_days=2)
    await _rating(factory, plugin, 4, None, age_days=1)
    data = ok(await client.get(f"{API}/reviews/{plugin.id}"))
    assert [(i["userName"], i["score"], i["comment"]) for i in data["items"]] == [
        ("Rater 41", 4, None),
        ("Rater 52", 5, "great"),
    ]
    assert set(data["items"][0]) == {"id", "userName", "score", "comment", "createdAt"}
    assert (data["total"], data["page"], data["pageSize"]) == (2, 1, 20)
    assert (data["average"], data["count"]) == (4.5, 2)


async def test_reviews_paginate(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin(rating_sum=12, rating_count=3)
    for age in range(3):
        await _rating(factory, plugin, 4, f"c{age}", age_days=age)
    data = ok(await client.get(f"{API}/reviews/{plugin.id}", params={"page": 2, "pageSize": 2}))
    assert [i["comment"] for i in data["items"]] == ["c2"]
    assert data["total"] == 3


async def test_reviews_of_unrated_plugin_have_null_average(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    data = ok(await client.get(f"{API}/reviews/{plugin.id}"))
    assert (data["items"], data["total"], data["average"], data["count"]) == ([], 0, None, 0)


@pytest.mark.parametrize("state", UNLISTED)
async def test_reviews_of_unlisted_plugin_is_404(
    client: httpx.AsyncClient, factory: Factory, state: dict[str, Any]
) -> None:
    plugin = await factory.plugin(**state)
    err(await client.get(f"{API}/reviews/{plugin.id}"), 404, "PLUGIN_NOT_FOUND")


async def test_reviews_page_zero_is_400(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin()
    err(
        await client.get(f"{API}/reviews/{plugin.id}", params={"page": 0}),
        400,
        "VALIDATION_FAILED",
    )


async def test_openapi_describes_public_and_user_endpoints(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    paths = spec["paths"]
    for path in (
        "/api/v1/plugins/browse",
        "/api/v1/plugins/featured",
        "/api/v1/plugins/popular",
        "/api/v1/plugins/categories",
        "/api/v1/plugins/detail/{plugin_id}",
        "/api/v1/plugins/versions/{plugin_id}",
        "/api/v1/plugins/reviews/{plugin_id}",
        "/api/v1/plugins/download/{plugin_id}/{version}",
        "/api/v1/plugins/install/{plugin_id}",
        "/api/v1/plugins/installed",
        "/api/v1/plugins/purchase/{plugin_id}",
        "/api/v1/plugins/rate/{plugin_id}",
    ):
        assert path in paths, path
    browse = paths["/api/v1/plugins/browse"]["get"]
    assert "304" in browse["responses"]
    assert "$ref" in str(browse["responses"]["200"]["content"]["application/json"]["schema"])
    assert "PublicPluginOut" in spec["components"]["schemas"]
