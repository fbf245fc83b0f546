"""The public pages are cached by the catalogue generation, as the API's public reads: a
repeated request reads no table, and a change the database records shows at once."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import Plugin, PluginInspection, Rating
from tests.factories import Factory
from tests.public_pages.helpers import (
    BROWSER,
    Statements,
    assert_security_headers,
    browse,
    inspected_version,
    linked_keys,
    page_of,
    section,
    text_of,
    tool,
)


async def test_a_second_request_for_a_plugin_page_reads_no_table(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin(plugin_key="cached-plugin", name="Cached Plugin")
    await inspected_version(factory, plugin, "1.0.0", "done", [tool("one", "The first.")])
    with Statements(app) as cold:
        first = await page_of(client, "/plugins/cached-plugin")
    assert cold.reading("plugins")  # built from the rows
    assert cold.reading("plugin_versions")
    with Statements(app) as warm:
        second = await page_of(client, "/plugins/cached-plugin")
    assert warm.reading("plugins") == []
    assert warm.reading("plugin_versions") == []
    assert second == first


async def test_a_second_search_reads_no_table(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="search-me", name="Search Me")
    first = await page_of(client, "/", q="search")
    with Statements(app) as warm:
        second = await page_of(client, "/", q="search")
        landing = await page_of(client, "/")
        again = await page_of(client, "/")
    assert second == first
    assert landing == again
    assert len(warm.reading("plugins")) > 0  # the plain landing page, once
    with Statements(app) as warm:
        await page_of(client, "/")
        await page_of(client, "/", q="search")
    assert warm.seen == []


async def test_a_change_that_moves_the_generation_shows_on_the_next_request(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin(plugin_key="changing-plugin", name="Old Name")
    await factory.version(plugin, "1.0.0")
    assert "Old Name" in await page_of(client, "/plugins/changing-plugin")
    assert linked_keys(section(await page_of(client, "/", q="name"), "results")) == [
        "changing-plugin"
    ]

    await factory.update_plugin(plugin, name="New Name")
    page = await page_of(client, "/plugins/changing-plugin")
    assert "New Name" in page and "Old Name" not in page
    assert "New Name" in await page_of(client, "/", q="name")

    await factory.version(plugin, "1.1.0")
    versions = text_of(section(await page_of(client, "/plugins/changing-plugin"), "versions"))
    assert "1.1.0 current" in versions

    await factory.update_plugin(plugin, enabled=False)  # taken off the listing
    assert (await browse(client, "/plugins/changing-plugin")).status_code == 404
    assert linked_keys(section(await page_of(client, "/", q="name"), "results")) == []


async def test_a_rating_shows_at_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    # Ratings move the generation but not the listing one: the page shows them, so it is
    # kept by the generation.
    plugin = await factory.plugin(plugin_key="rated-plugin")
    assert "no ratings yet" in await page_of(client, "/plugins/rated-plugin")
    rater = await factory.user()
    async with sessionmaker() as session:  # as a rating is recorded: row and counters
        session.add(Rating(user_id=rater.id, plugin_id=plugin.id, score=4, comment=None))
        await session.execute(
            update(Plugin).where(Plugin.id == plugin.id).values(rating_sum=4, rating_count=1)
        )
        await session.commit()
    facts = text_of(section(await page_of(client, "/plugins/rated-plugin"), "facts"))
    assert "★ 4.0 (1 rating)" in facts


async def test_a_page_whose_inspection_has_not_ended_is_not_kept(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    # An inspection that ends without new findings writes no row the catalogue's triggers
    # see: the generation stays, so a page showing "being inspected" must not be kept.
    plugin = await factory.plugin(plugin_key="inspecting-plugin")
    version = await inspected_version(factory, plugin, "1.0.0", "running")
    assert "being inspected" in await page_of(client, "/plugins/inspecting-plugin")
    async with sessionmaker() as session:
        await session.execute(
            update(PluginInspection)
            .where(PluginInspection.version_id == version.id)
            .values(
                status="done",
                report={
                    "server": None,
                    "tools": [tool("fresh_tool", "Listed at the end.")],
                    "prompts": [],
                    "resources": [],
                    "observed": {},
                    "undeclared": [],
                },
            )
        )
        await session.commit()
    tools = text_of(section(await page_of(client, "/plugins/inspecting-plugin"), "tools"))
    assert "fresh_tool Listed at the end." in tools


async def test_pages_revalidate_by_etag(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin(plugin_key="etag-plugin")
    etags = {}
    for path in ("/plugins/etag-plugin", "/"):
        etags[path] = (await browse(client, path)).headers["etag"]
        again = await client.get(path, headers={**BROWSER, "If-None-Match": etags[path]})
        assert again.status_code == 304
        assert again.content == b""
        assert again.headers["etag"] == etags[path]
        assert again.headers["cache-control"] == "public, no-cache"
    assert etags["/"] != etags["/plugins/etag-plugin"]
    await factory.update_plugin(plugin, description="Changed.")
    etag = etags["/plugins/etag-plugin"]
    changed = await client.get("/plugins/etag-plugin", headers={**BROWSER, "If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["etag"] != etag


async def test_the_stylesheet_is_served_for_the_public_pages(client: httpx.AsyncClient) -> None:
    response = await client.get("/static/site.css")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/css; charset=utf-8"
    assert "Public pages (issue 29)" in response.text
    assert ".pub-card" in response.text
    assert_security_headers(response)
    again = await client.get(
        "/static/site.css", headers={"If-None-Match": response.headers["etag"]}
    )
    assert again.status_code == 304
