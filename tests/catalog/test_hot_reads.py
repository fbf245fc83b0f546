"""Hot public reads do the minimum: one query for a cold detail or versions page, and
representations built from our own rows without validation that still equal validated
ones."""

from __future__ import annotations

from decimal import Decimal

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.catalog.schemas import (
    PublicPluginOut,
    PublicVersionOut,
    public_plugin,
    public_version,
)
from marketplace.orgs.schemas import OrgRef
from tests.catalog.listing_changes import change_listing
from tests.factories import Factory
from tests.helpers import err, ok

API = "/api/v1/plugins"


async def _cold(sessionmaker: async_sessionmaker[AsyncSession]) -> None:
    """Every cached response stale: the next read does its full work."""
    async with sessionmaker() as session:
        await change_listing(session)
        await session.commit()


def _queries(statements: list[str]) -> list[str]:
    """The statements that ask something (SQLite's driver sends BEGIN as one)."""
    return [s for s in statements if s.split()[0].upper() not in ("BEGIN", "COMMIT", "ROLLBACK")]


async def test_a_cold_detail_is_one_query(
    client: httpx.AsyncClient,
    factory: Factory,
    statements: list[str],
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    plugin = await factory.plugin(plugin_key="one-query")
    ok(await client.get(f"{API}/categories"))  # the schema gate's first look, once per app
    for ref in (plugin.id, "one-query"):
        await _cold(sessionmaker)
        statements.clear()
        data = ok(await client.get(f"{API}/detail/{ref}"))
        assert (data["id"], data["developer"]["id"]) == (plugin.id, plugin.owner_id)
        assert data["developer"]["name"]
        assert len(_queries(statements)) == 1, statements


async def test_a_cold_versions_page_is_one_query(
    client: httpx.AsyncClient,
    factory: Factory,
    statements: list[str],
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    plugin = await factory.plugin()
    for version in ("1.0.0", "1.10.0", "1.2.0"):
        await factory.version(plugin, version)
    await factory.version(plugin, "2.0.0", review_status="pending")
    ok(await client.get(f"{API}/categories"))  # the schema gate's first look, once per app
    await _cold(sessionmaker)
    statements.clear()
    items = ok(await client.get(f"{API}/versions/{plugin.plugin_key}"))["items"]
    assert [item["version"] for item in items] == ["1.10.0", "1.2.0", "1.0.0"]
    assert len(_queries(statements)) == 1, statements
    bare = await factory.plugin()  # listed, no approved version: an empty list, not 404
    assert ok(await client.get(f"{API}/versions/{bare.id}"))["items"] == []


async def test_an_id_names_its_plugin_before_a_key_equal_to_it(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """CONTRACT 3: by id first. Another plugin whose key spells that id is not found by it,
    even when the plugin with the id is not listed."""
    named = await factory.plugin()
    await factory.version(named, "1.0.0")
    impostor = await factory.plugin(plugin_key=named.id)
    await factory.version(impostor, "9.9.9")
    assert ok(await client.get(f"{API}/detail/{named.id}"))["id"] == named.id
    items = ok(await client.get(f"{API}/versions/{named.id}"))["items"]
    assert [item["version"] for item in items] == ["1.0.0"]
    await factory.update_plugin(named, enabled=False)
    err(await client.get(f"{API}/detail/{named.id}"), 404, "PLUGIN_NOT_FOUND")
    err(await client.get(f"{API}/versions/{named.id}"), 404, "PLUGIN_NOT_FOUND")


async def test_unvalidated_representations_equal_validated_ones(factory: Factory) -> None:
    owner = await factory.developer()
    plugins = [
        await factory.plugin(owner),
        await factory.plugin(
            owner,
            is_free=False,
            price=Decimal("12.50"),
            tags=["a", "天气"],
            rating_sum=9,
            rating_count=2,
            download_count=7,
        ),
    ]
    orgs = [None, OrgRef.model_construct(slug="acme-tools", name="Acme Tools")]
    for plugin, org in zip(plugins, orgs, strict=True):
        built = public_plugin(plugin, "Dev Name", org)
        validated = PublicPluginOut.model_validate(built.model_dump())
        assert built.model_dump(mode="json", by_alias=True) == validated.model_dump(
            mode="json", by_alias=True
        )
        version = await factory.version(plugin, "1.0.0", manifest={"name": "x", "mcp": {}})
        for paid in (False, True):
            shown = public_version(version, paid=paid)
            again = PublicVersionOut.model_validate(shown.model_dump())
            assert shown.model_dump(mode="json", by_alias=True) == again.model_dump(
                mode="json", by_alias=True
            )
