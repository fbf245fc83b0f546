"""`GET /` for a browser: the landing page (CONTRACT 17), a search over the listed plugins
whose results are the public browse's; API clients keep the JSON index (tests/test_front.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from marketplace.app import create_app, shutdown
from marketplace.models import ReviewStatus
from tests.conftest import make_settings
from tests.factories import Factory
from tests.helpers import ok
from tests.public_pages.helpers import (
    BROWSER,
    assert_security_headers,
    browse,
    canonical,
    linked_keys,
    meta,
    page_of,
    section,
    text_of,
)


async def test_a_browser_gets_a_search_form_and_the_ways_on(client: httpx.AsyncClient) -> None:
    response = await browse(client, "/")
    assert response.status_code == 200
    page = response.text
    assert '<form class="pub-search" method="get" action="/" role="search">' in page
    assert '<input id="q" name="q" type="search" value=""' in page
    assert '<select id="category" name="category">' in page
    assert '<option value="productivity">' in page  # the seeded categories
    assert '<select id="type" name="type">' in page
    assert '<option value="mcp">mcp</option>' in page
    for link in ("/portal", "/console", "/docs"):
        assert f'href="{link}"' in page
    assert '<link rel="stylesheet" href="/static/site.css">' in page
    assert "No plugin is listed yet." in text_of(section(page, "popular"))


async def test_the_landing_page_carries_open_graph_tags_and_security_headers(
    client: httpx.AsyncClient,
) -> None:
    response = await browse(client, "/")
    page = response.text
    assert meta(page, "og:title") == "Marketplace"
    assert meta(page, "og:type") == "website"
    assert meta(page, "og:url") == "http://test/"  # settings.public_url, not the Host header
    assert meta(page, "og:description").startswith("Plugins and scenarios")
    assert canonical(page) == "http://test/"
    assert 'property="og:image"' not in page
    assert "<script" not in page and "style=" not in page
    assert_security_headers(response)
    assert response.headers["cache-control"] == "public, no-cache"
    assert response.headers["vary"] == "Accept"
    assert response.headers["etag"].startswith('"')


async def test_an_api_client_keeps_the_json_index_whatever_the_query(
    client: httpx.AsyncClient,
) -> None:
    expected = {
        "name": "Plugin and Scenario Marketplace",
        "console": "/console",
        "docs": "/docs",
        "openapi": "/openapi.json",
    }
    for params in ({}, {"q": "weather"}, {"type": "nonsense", "page": "0"}):
        response = await client.get("/", params=params, headers={"Accept": "application/json"})
        assert ok(response) == expected
        assert response.headers["content-type"] == "application/json"


async def test_a_search_finds_a_listed_plugin_and_not_an_unlisted_one(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    listed = await factory.plugin(plugin_key="weather-radar", name="Weather Radar")
    await factory.plugin(
        plugin_key="weather-pending", name="Weather Pending", review_status=ReviewStatus.PENDING
    )
    await factory.plugin(plugin_key="weather-off", name="Weather Off", enabled=False)
    await factory.plugin(plugin_key="calendar-sync", name="Calendar Sync")

    page = await page_of(client, "/", q="weather")
    results = section(page, "results")
    assert linked_keys(results) == [listed.plugin_key]
    assert "1 plugin found for “weather”" in text_of(results)
    assert '<input id="q" name="q" type="search" value="weather"' in page
    assert meta(page, "robots") == "noindex"  # a results page; / is the canonical one
    api = ok(await client.get("/api/v1/plugins/browse", params={"q": "weather"}))
    assert [item["pluginKey"] for item in api["items"]] == linked_keys(results)


@pytest.mark.parametrize(
    "params",
    [
        {"q": "sync"},
        {"q": "SYNC", "category": "development"},
        {"type": "skill"},
        {"category": "productivity", "type": "mcp"},
        {"q": "插件"},
    ],
)
async def test_results_are_the_public_browse_results(
    client: httpx.AsyncClient, factory: Factory, params: dict[str, str]
) -> None:
    for n, (category, type_) in enumerate(
        [("productivity", "mcp"), ("development", "skill"), ("development", "mcp")] * 3
    ):
        await factory.plugin(
            plugin_key=f"sync-tool-{n}",
            name=f"Sync Tool {n}",
            category=category,
            type=type_,
            download_count=n * 7 % 5,
        )
    await factory.plugin(plugin_key="sync-hidden", name="Sync Hidden", enabled=False)

    page = await page_of(client, "/", **params)
    api = ok(await client.get("/api/v1/plugins/browse", params=params))
    assert api["total"] > 0
    assert linked_keys(section(page, "results")) == [item["pluginKey"] for item in api["items"]]
    assert f"{api['total']} plugin" in text_of(section(page, "results"))


async def test_results_come_in_pages_of_twenty(client: httpx.AsyncClient, factory: Factory) -> None:
    for n in range(25):
        await factory.plugin(plugin_key=f"paged-{n:02d}", name=f"Paged {n}", download_count=n)
    first = await page_of(client, "/", q="paged")
    assert len(linked_keys(section(first, "results"))) == 20
    assert '<a href="/?q=paged&amp;page=2" rel="next">Next</a>' in first
    second = await page_of(client, "/", q="paged", page="2")
    keys = linked_keys(section(second, "results"))
    assert keys == [f"paged-{n:02d}" for n in range(4, -1, -1)]  # popular: most downloads first
    assert '<a href="/?q=paged" rel="prev">Previous</a>' in second
    assert "Page 2 of 2" in text_of(second)


async def test_without_a_search_it_shows_featured_and_popular_plugins(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    star = await factory.plugin(plugin_key="star-plugin", featured=True, download_count=3)
    busy = await factory.plugin(plugin_key="busy-plugin", download_count=50)
    await factory.plugin(plugin_key="quiet-plugin", download_count=1)
    await factory.plugin(plugin_key="gone-plugin", download_count=99, enabled=False)
    page = await page_of(client, "/")
    assert linked_keys(section(page, "featured")) == [star.plugin_key]
    assert linked_keys(section(page, "popular")) == [
        busy.plugin_key,
        star.plugin_key,
        "quiet-plugin",
    ]
    assert 'id="results"' not in page


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": "x" * 201}, "at most 200 visible characters"),
        ({"q": "bell\x07"}, "at most 200 visible characters"),
        ({"type": "nonsense"}, "There is no such type of plugin."),
        ({"category": "c" * 65}, "There is no such category."),
        ({"q": "a", "page": "0"}, "The page number is not valid."),
        ({"q": "a", "page": "two"}, "The page number is not valid."),
        ({"q": "a", "page": "²"}, "The page number is not valid."),  # a digit, not a number
        ({"q": "a", "page": "9" * 5000}, "The page number is not valid."),
    ],
)
async def test_a_search_the_api_would_refuse_is_a_400_page(
    client: httpx.AsyncClient, params: dict[str, str], message: str
) -> None:
    response = await client.get("/", params=params, headers=BROWSER)
    assert response.status_code == 400
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["cache-control"] == "no-store"
    assert message in text_of(response.text)
    assert '<form class="pub-search"' in response.text  # the form, to try again


async def test_a_search_is_shown_escaped(client: httpx.AsyncClient) -> None:
    hostile = '"><script>alert(1)</script>'
    page = await page_of(client, "/", q=hostile)
    assert "<script>" not in page
    assert 'value="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in page
    assert "0 plugins found" in text_of(section(page, "results"))


async def test_a_browser_meets_an_unreadable_catalogue_with_an_html_503(
    scratch_url: str, tmp_path: Path
) -> None:
    application = create_app(make_settings(scratch_url, tmp_path))  # never migrated
    try:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            page = await http.get("/", headers=BROWSER)
            index = await http.get("/", headers={"Accept": "application/json"})
    finally:
        await shutdown(application)
    assert page.status_code == 503
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["retry-after"] == "5"
    assert "The catalogue cannot be read right now." in text_of(page.text)
    assert ok(index)["console"] == "/console"  # the index needs no database
