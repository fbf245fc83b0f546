"""`GET /plugins/{pluginKey}`: the public page of a listed plugin (CONTRACT 17), an HTML 404
for anything else, and publisher text always escaped."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import Distribution, Organization, ReviewStatus
from tests.factories import Factory
from tests.public_pages.helpers import (
    BROWSER,
    assert_security_headers,
    browse,
    canonical,
    inspected_version,
    meta,
    page_of,
    section,
    text_of,
    tool,
)

PNG_ICON = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


async def test_the_page_shows_what_a_visitor_needs_to_choose_and_install(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    plugin = await factory.plugin(
        developer,
        plugin_key="docs-search",
        name="Docs Search",
        description="Searches your documentation.\nFast.",
        tags=["docs", "search"],
        rating_sum=9,
        rating_count=2,
        download_count=42,
        icon=PNG_ICON,
        license="MIT",
    )
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.2.0")
    await inspected_version(
        factory,
        plugin,
        "1.10.0",
        "done",
        [tool("search_docs", "Find pages about a topic."), tool("open_page", None)],
    )
    await factory.version(plugin, "2.0.0", review_status=ReviewStatus.PENDING)

    response = await browse(client, "/plugins/docs-search")
    assert response.status_code == 200
    page = response.text
    assert '<h1 id="plugin-name">Docs Search</h1>' in page
    assert f"by {developer.name}" in text_of(page)
    assert "Searches your documentation.\nFast." in section(page, "about")
    assert f'<img class="icon pub-icon" src="{PNG_ICON}"' in page
    versions = text_of(section(page, "versions"))
    assert versions.index("1.10.0 current") < versions.index("1.2.0") < versions.index("1.0.0")
    assert "2.0.0" not in versions  # not approved
    tools = text_of(section(page, "tools"))
    assert "search_docs Find pages about a topic." in tools
    assert "open_page" in tools
    assert "marketplace install docs-search" in text_of(section(page, "install"))
    assert "★ 4.5 (2 ratings)" in text_of(section(page, "facts"))
    assert "Installs 42" in text_of(section(page, "facts"))
    assert meta(page, "og:title") == "Docs Search"
    assert meta(page, "og:description") == "Searches your documentation. Fast."
    assert meta(page, "og:type") == "website"
    assert meta(page, "og:url") == "http://test/plugins/docs-search"
    assert canonical(page) == "http://test/plugins/docs-search"
    assert 'property="og:image"' not in page  # a data URL is no card image
    assert_security_headers(response)
    assert response.headers["cache-control"] == "public, no-cache"
    assert "vary" not in response.headers


async def test_a_plugin_of_an_organization_shows_the_organization(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    developer = await factory.developer()
    org = Organization(
        slug="acme-tools",
        name="Acme Tools Ltd",
        created_at=datetime.now(UTC),
        created_by=developer.id,
    )
    async with sessionmaker() as session:
        session.add(org)
        await session.commit()
    plugin = await factory.plugin(developer, plugin_key="acme-widget", org_id=org.id)
    await factory.version(plugin)
    page = await page_of(client, "/plugins/acme-widget")
    assert "by Acme Tools Ltd organization" in text_of(page)
    assert "Organization Acme Tools Ltd" in text_of(section(page, "facts"))
    assert developer.name not in page


@pytest.mark.parametrize(
    "state",
    ["queued", "running", "failed", "not_applicable", "no_version"],
)
async def test_the_tools_section_says_why_there_is_no_list(
    client: httpx.AsyncClient, factory: Factory, state: str
) -> None:
    plugin = await factory.plugin(plugin_key="stateful-plugin")
    if state == "not_applicable":
        await factory.version(plugin, distribution=Distribution.CONFIG_ONLY)
    elif state != "no_version":
        await inspected_version(factory, plugin, "1.0.0", state)
    tools = text_of(section(await page_of(client, "/plugins/stateful-plugin"), "tools"))
    expected = {
        "queued": "being inspected",
        "running": "being inspected",
        "failed": "inspection could not finish",
        "not_applicable": "nothing to inspect",
        "no_version": "No version is approved yet.",
    }
    assert expected[state] in tools
    assert "crashed" not in tools  # a failure's reason is for the publisher and reviewers


async def test_unknown_and_unlisted_keys_are_an_html_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="waiting-plugin", review_status=ReviewStatus.PENDING)
    await factory.plugin(plugin_key="rejected-plugin", review_status=ReviewStatus.REJECTED)
    await factory.plugin(plugin_key="disabled-plugin", enabled=False)
    for key in ("no-such-plugin", "waiting-plugin", "rejected-plugin", "disabled-plugin"):
        response = await client.get(f"/plugins/{key}", headers=BROWSER)
        assert response.status_code == 404, key
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert response.headers["cache-control"] == "no-store"
        assert "There is no listed plugin with that key." in text_of(response.text)
        assert key not in response.text
        assert 'property="og:title"' not in response.text


@pytest.mark.parametrize(
    "path",
    [
        "/plugins/Capitalised",
        "/plugins/-leading-hyphen",
        "/plugins/a/b",
        "/plugins/",
        "/plugins/%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        "/plugins/" + "x" * 65,
        "/plugins/0b6f6a8e-2f0c-4f43-9d55-3a1c8f0e7b21",  # a plugin id, fixed: xdist workers must collect the same tests
        "/plugins/..%2F..%2Fetc%2Fpasswd",
    ],
)
async def test_a_key_no_plugin_could_have_is_an_html_404(
    client: httpx.AsyncClient, factory: Factory, path: str
) -> None:
    plugin = await factory.plugin()  # by id: the page is by key only
    for target in (path, f"/plugins/{plugin.id}"):
        response = await client.get(target, headers={"Accept": "application/json"})
        assert response.status_code == 404, target
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert "<script>" not in response.text
        assert_security_headers(response)


async def test_publisher_text_is_escaped_and_addresses_are_not_links(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    name = "<script>alert(\"name\")</script> & 'quotes'"
    description = '"><img src=x onerror=alert(1)> <b>bold</b>'
    plugin = await factory.plugin(
        plugin_key="hostile-plugin",
        name=name,
        name_zh="<i>中文</i>",
        description=description,
        description_zh="<iframe src=javascript:alert(2)>",
        tags=["<svg onload=alert(3)>"],
        homepage="javascript:alert(document.cookie)",
        repository='https://example.com/"onmouseover="alert(4)',
        license="<u>MIT</u>",
        icon="https://evil.example/icon.png",
    )
    await inspected_version(
        factory, plugin, "1.0.0", "done", [tool("<b>tool</b>", "<script>alert(5)</script>")]
    )
    page = await page_of(client, "/plugins/hostile-plugin")

    for raw in ("<script>", "<img src=x", "<b>", "<i>", "<iframe", "<svg", "<u>", 'onmouseover="'):
        assert raw not in page, raw
    assert "&lt;script&gt;alert(&#34;name&#34;)&lt;/script&gt; &amp; &#39;quotes&#39;" in page
    assert meta(page, "og:title") == name
    assert meta(page, "og:description") == description
    assert 'href="javascript:' not in page and "href='javascript:" not in page
    assert (
        '<span class="mono small break" id="homepage">javascript:alert(document.cookie)</span>'
        in page
    )
    assert "evil.example" not in page  # an icon that is not an image data URL is not shown
    assert 'src="https:' not in page
    assert "&lt;b&gt;tool&lt;/b&gt;" in section(page, "tools")


async def test_an_unlisted_plugin_is_not_found_in_any_way(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin(plugin_key="soon-hidden")
    await factory.version(plugin)
    assert (await browse(client, "/plugins/soon-hidden")).status_code == 200
    await factory.update_plugin(plugin, review_status=ReviewStatus.REJECTED.value, enabled=False)
    assert (await browse(client, "/plugins/soon-hidden")).status_code == 404
