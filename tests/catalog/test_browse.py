"""GET /api/v1/plugins/browse: listing rule, filters, sorts, pages, item shape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from marketplace.models import ReviewStatus
from tests.factories import Factory
from tests.helpers import err, field_names, ok

BROWSE = "/api/v1/plugins/browse"

PUBLIC_FIELDS = {
    "id",
    "pluginKey",
    "name",
    "nameZh",
    "description",
    "descriptionZh",
    "type",
    "category",
    "isFree",
    "price",
    "validityDays",
    "tags",
    "license",
    "homepage",
    "repository",
    "icon",
    "source",
    "platforms",
    "featured",
    "enabled",
    "reviewStatus",
    "latestVersion",
    "latestPrerelease",
    "downloadCount",
    "ratingAverage",
    "ratingCount",
    "createdAt",
    "updatedAt",
    "developer",
    "org",
    "purchase",
}


async def browse(client: httpx.AsyncClient, **params: Any) -> Any:
    return ok(await client.get(BROWSE, params=params))


def keys(data: Any) -> list[str]:
    return [item["pluginKey"] for item in data["items"]]


async def test_browse_shows_only_approved_and_enabled_plugins(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    listed = await factory.plugin(plugin_key="listed-one")
    await factory.plugin(plugin_key="pending-one", review_status="pending")
    await factory.plugin(plugin_key="rejected-one", review_status="rejected")
    await factory.plugin(plugin_key="taken-down-one", review_status="taken_down")
    await factory.plugin(plugin_key="approved-disabled", enabled=False)
    await factory.plugin(plugin_key="pending-enabled", review_status="pending", enabled=True)
    data = await browse(client)
    assert keys(data) == [listed.plugin_key]
    assert data["total"] == 1


async def test_browse_item_is_the_public_view(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await factory.plugin(
        dev, tags=["a", "b"], is_free=False, price="12.50", validity_days=30
    )
    await factory.update_plugin(plugin, review_note="internal", reviewed_by=dev.id)
    item = (await browse(client))["items"][0]
    assert set(item) == PUBLIC_FIELDS
    assert item["developer"] == {"id": dev.id, "name": dev.name}
    assert item["org"] is None
    assert item["price"] == 12.5
    assert item["validityDays"] == 30
    assert item["tags"] == ["a", "b"]
    assert item["reviewStatus"] == "approved"
    assert item["enabled"] is True


async def test_browse_developer_name_is_the_display_name(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    from marketplace.models import DeveloperProfile

    dev = await factory.developer()
    async with sessionmaker() as session:
        profile = await session.get(DeveloperProfile, dev.id)
        profile.display_name = "Acme Tools"
        await session.commit()
    await factory.plugin(dev)
    item = (await browse(client))["items"][0]
    assert item["developer"] == {"id": dev.id, "name": "Acme Tools"}


async def test_browse_anonymous_items_have_null_purchase(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(is_free=False)
    assert (await browse(client))["items"][0]["purchase"] is None


async def test_browse_items_carry_the_callers_purchase_state(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    buyer = await factory.user()
    bought = await factory.plugin(is_free=False, plugin_key="bought")
    expired = await factory.plugin(is_free=False, validity_days=30, plugin_key="expired")
    await factory.plugin(is_free=False, plugin_key="never")
    await factory.purchase(buyer, bought)
    past = datetime.now(UTC) - timedelta(days=1)
    await factory.purchase(buyer, expired, expires_at=past)
    data = ok(await client.get(BROWSE, params={"sort": "name"}, headers=buyer.headers))
    states = {item["pluginKey"]: item["purchase"] for item in data["items"]}
    assert states["bought"] == {"purchased": True, "active": True, "expiresAt": None}
    assert states["expired"]["purchased"] is True
    assert states["expired"]["active"] is False
    assert states["expired"]["expiresAt"].startswith(past.strftime("%Y-%m-%dT%H:%M"))
    assert states["never"] == {"purchased": False, "active": False, "expiresAt": None}


async def test_browse_purchase_state_is_one_query_per_page(
    client: httpx.AsyncClient, factory: Factory, statements: list[str]
) -> None:
    buyer = await factory.user()
    for _ in range(5):
        plugin = await factory.plugin(is_free=False)
        await factory.purchase(buyer, plugin)
    statements.clear()
    data = ok(await client.get(BROWSE, headers=buyer.headers))
    assert all(item["purchase"]["active"] for item in data["items"])
    assert len([s for s in statements if "FROM purchases" in s]) == 1


async def test_browse_pending_purchase_is_not_purchased(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    buyer = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.purchase(buyer, plugin, status="pending")
    data = ok(await client.get(BROWSE, headers=buyer.headers))
    assert data["items"][0]["purchase"] == {"purchased": False, "active": False, "expiresAt": None}


async def test_browse_invalid_token_is_401(client: httpx.AsyncClient) -> None:
    err(
        await client.get(BROWSE, headers={"Authorization": "Bearer not-a-token"}),
        401,
        "UNAUTHORIZED",
    )


async def test_browse_default_sort_is_by_download_count(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="few", download_count=3)
    await factory.plugin(plugin_key="many", download_count=30)
    await factory.plugin(plugin_key="some", download_count=10)
    assert keys(await browse(client)) == ["many", "some", "few"]


async def test_browse_sorts_by_newest(client: httpx.AsyncClient, factory: Factory) -> None:
    now = datetime.now(UTC)
    await factory.plugin(plugin_key="old", created_at=now - timedelta(days=2))
    await factory.plugin(plugin_key="new", created_at=now)
    await factory.plugin(plugin_key="mid", created_at=now - timedelta(days=1))
    assert keys(await browse(client, sort="newest")) == ["new", "mid", "old"]


async def test_browse_sorts_by_recently_updated(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    now = datetime.now(UTC)
    await factory.plugin(plugin_key="stale", updated_at=now - timedelta(days=3))
    await factory.plugin(plugin_key="fresh", updated_at=now - timedelta(minutes=1))
    assert keys(await browse(client, sort="updated")) == ["fresh", "stale"]


async def test_browse_sorts_by_name_ignoring_case(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="p-zeta", name="zeta")
    await factory.plugin(plugin_key="p-alpha", name="Alpha")
    await factory.plugin(plugin_key="p-beta", name="beta")
    assert keys(await browse(client, sort="name")) == ["p-alpha", "p-beta", "p-zeta"]


async def test_browse_sorts_by_rating_average_unrated_last(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="unrated")
    await factory.plugin(plugin_key="three", rating_sum=6, rating_count=2)
    await factory.plugin(plugin_key="five", rating_sum=5, rating_count=1)
    await factory.plugin(plugin_key="four-many", rating_sum=40, rating_count=10)
    await factory.plugin(plugin_key="four-few", rating_sum=8, rating_count=2)
    assert keys(await browse(client, sort="rating")) == [
        "five",
        "four-many",
        "four-few",
        "three",
        "unrated",
    ]


async def test_browse_unknown_sort_is_400(client: httpx.AsyncClient) -> None:
    error = err(await client.get(BROWSE, params={"sort": "price"}), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"sort"}


async def test_browse_filters_by_category(client: httpx.AsyncClient, factory: Factory) -> None:
    await factory.plugin(plugin_key="in-ai", category="ai")
    await factory.plugin(plugin_key="in-db", category="database")
    data = await browse(client, category="ai")
    assert keys(data) == ["in-ai"]
    assert data["total"] == 1


async def test_browse_unknown_category_is_an_empty_page(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin()
    data = await browse(client, category="no-such-category")
    assert data["items"] == []
    assert data["total"] == 0


async def test_browse_filters_by_type(client: httpx.AsyncClient, factory: Factory) -> None:
    await factory.plugin(plugin_key="a-skill", type="skill")
    await factory.plugin(plugin_key="a-tool", type="tool")
    assert keys(await browse(client, type="skill")) == ["a-skill"]


async def test_browse_unknown_type_is_400(client: httpx.AsyncClient) -> None:
    error = err(await client.get(BROWSE, params={"type": "widget"}), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"type"}


@pytest.mark.parametrize(("is_free", "expected"), [("true", ["free-one"]), ("false", ["paid-one"])])
async def test_browse_filters_by_is_free(
    client: httpx.AsyncClient, factory: Factory, is_free: str, expected: list[str]
) -> None:
    await factory.plugin(plugin_key="free-one")
    await factory.plugin(plugin_key="paid-one", is_free=False, price=Decimal("1.00"))
    assert keys(await browse(client, isFree=is_free)) == expected


async def test_browse_combines_filters(client: httpx.AsyncClient, factory: Factory) -> None:
    await factory.plugin(plugin_key="ai-tool-free", category="ai", type="tool")
    await factory.plugin(plugin_key="ai-tool-paid", category="ai", type="tool", is_free=False)
    await factory.plugin(plugin_key="ai-mcp-free", category="ai", type="mcp")
    await factory.plugin(plugin_key="db-tool-free", category="database", type="tool")
    data = await browse(client, category="ai", type="tool", isFree="true")
    assert keys(data) == ["ai-tool-free"]
    assert data["total"] == 1


async def test_browse_pages_with_exact_total(client: httpx.AsyncClient, factory: Factory) -> None:
    for n in range(5):
        await factory.plugin(plugin_key=f"plugin-{n}", download_count=n)
    first = await browse(client, page=1, pageSize=2)
    third = await browse(client, page=3, pageSize=2)
    beyond = await browse(client, page=4, pageSize=2)
    assert keys(first) == ["plugin-4", "plugin-3"]
    assert keys(third) == ["plugin-0"]
    assert beyond["items"] == []
    assert (first["total"], third["total"], beyond["total"]) == (5, 5, 5)
    assert (first["page"], first["pageSize"]) == (1, 2)


async def test_browse_defaults_to_page_1_of_20(client: httpx.AsyncClient) -> None:
    data = await browse(client)
    assert (data["page"], data["pageSize"], data["total"], data["items"]) == (1, 20, 0, [])


async def test_browse_page_zero_is_400(client: httpx.AsyncClient) -> None:
    error = err(await client.get(BROWSE, params={"page": 0}), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"page"}


async def test_browse_page_size_over_100_becomes_100(client: httpx.AsyncClient) -> None:
    assert (await browse(client, pageSize=500))["pageSize"] == 100


async def test_browse_rating_average_is_rounded_to_2_decimals(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(rating_sum=14, rating_count=3)
    item = (await browse(client))["items"][0]
    assert item["ratingAverage"] == 4.67
    assert item["ratingCount"] == 3


async def test_browse_rating_average_is_null_without_ratings(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin()
    item = (await browse(client))["items"][0]
    assert item["ratingAverage"] is None
    assert item["ratingCount"] == 0


async def test_browse_excludes_a_plugin_after_takedown(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    assert (await browse(client))["total"] == 1
    await factory.update_plugin(plugin, review_status=ReviewStatus.TAKEN_DOWN.value, enabled=False)
    data = await browse(client)
    assert data["items"] == []
    assert data["total"] == 0
