"""GET /api/v1/plugins/categories: the category table with listed-plugin counts (CONTRACT 6)."""

from __future__ import annotations

import httpx

from marketplace.models import SEED_CATEGORIES
from tests.factories import Factory
from tests.helpers import err, ok
from tests.plugins.helpers import publish, publish_body, review_plugin

URL = "/api/v1/plugins/categories"


def _counts(data: dict) -> dict[str, int]:
    return {item["key"]: item["count"] for item in data["items"]}


async def test_categories_are_public_in_table_order(client: httpx.AsyncClient) -> None:
    data = ok(await client.get(URL))
    assert [(i["key"], i["name"], i["nameZh"]) for i in data["items"]] == SEED_CATEGORIES
    assert set(_counts(data).values()) == {0}


async def test_categories_count_only_listed_plugins(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    await publish(client, dev, category="ai")  # pending: not listed
    approved = await publish(client, dev, category="ai")
    ok(await review_plugin(client, admin, approved["id"], approved=True))
    rejected = await publish(client, dev, category="design")
    ok(await review_plugin(client, admin, rejected["id"], approved=False))
    ok(
        await client.post(
            "/api/v1/admin/plugins",
            json=publish_body(category="design"),
            headers=admin.headers,
        ),
        201,
    )
    counts = _counts(ok(await client.get(URL, headers=dev.headers)))
    assert (counts["ai"], counts["design"], counts["productivity"]) == (1, 1, 0)


async def test_categories_refuse_an_invalid_token(client: httpx.AsyncClient) -> None:
    err(await client.get(URL, headers={"Authorization": "Bearer nope"}), 401, "UNAUTHORIZED")
