"""The review queue: pending work in four tabs, oldest first, searchable, in pages."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import IdentityStatus, ReviewStatus, Role
from tests.admin_console.helpers import logged_in, scenario_with_version, set_findings, text_of
from tests.factories import Factory

NOW = datetime.now(UTC)


def _titles(page: str) -> list[str]:
    return re.findall(r'class="row-title">([^<]*)</a>', page)


async def test_pending_plugin_versions_oldest_first_with_age_developer_and_findings(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    developer = await factory.user(Role.DEVELOPER, name="Dana Dev")
    plugin = await factory.plugin(developer, plugin_key="alpha-tool", name="Alpha")
    await factory.version(plugin, "1.0.0")
    newer = await factory.version(
        plugin, "1.2.0", review_status=ReviewStatus.PENDING, created_at=NOW - timedelta(hours=3)
    )
    older = await factory.version(
        plugin, "1.1.0", review_status=ReviewStatus.PENDING, created_at=NOW - timedelta(days=2)
    )
    await set_findings(
        sessionmaker,
        older.id,
        [{"code": "X", "severity": "error", "path": "$", "message": "m"}] * 2,
    )
    await logged_in(client, admin)
    response = await client.get("/console", params={"tab": "plugin-versions"})
    assert response.status_code == 200
    page = response.text
    # Oldest first; the approved 1.0.0 is not in the queue.
    assert page.index(f"/console/plugins/versions/{older.id}") < page.index(
        f"/console/plugins/versions/{newer.id}"
    )
    assert "1.0.0" not in text_of(page)
    rows = text_of(page)
    assert "2 d Dana Dev Alpha (alpha-tool) version 1.1.0 2 errors" in rows
    assert "3 h Dana Dev Alpha (alpha-tool) version 1.2.0 none" in rows


async def test_every_tab_shows_its_pending_count(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    developer = await factory.developer()
    new_plugin = await factory.plugin(developer, review_status=ReviewStatus.PENDING)
    await factory.version(new_plugin, review_status=ReviewStatus.PENDING)
    await scenario_with_version(sessionmaker, developer, "morning-brief")
    await factory.user(Role.DEVELOPER, identity=IdentityStatus.PENDING)
    await factory.user(Role.DEVELOPER, identity=IdentityStatus.PENDING)
    await logged_in(client, admin)
    page = text_of((await client.get("/console")).text)
    assert "Plugins 1 Plugin versions 1 Scenario versions 1 Developer identities 2" in page


async def test_the_queue_opens_the_first_tab_with_work(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    version = await scenario_with_version(sessionmaker, await factory.developer(), "only-one")
    await logged_in(client, admin)
    page = (await client.get("/console")).text
    assert f"/console/scenarios/versions/{version.id}" in page
    assert 'class="tab active" aria-current="page">\n    Scenario versions' in page


async def test_pending_plugins_link_to_their_page(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    plugin = await factory.plugin(review_status=ReviewStatus.PENDING, name="Brand New")
    await factory.version(plugin, "0.1.0", review_status=ReviewStatus.PENDING)
    await logged_in(client, admin)
    page = (await client.get("/console", params={"tab": "plugins"})).text
    assert f'href="/console/plugins/{plugin.id}"' in page
    assert "first version 0.1.0" in page


async def test_pending_identities_link_to_the_developer(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    developer = await factory.user(Role.DEVELOPER, identity=IdentityStatus.PENDING)
    await factory.user(Role.DEVELOPER, identity=IdentityStatus.VERIFIED)
    await logged_in(client, admin)
    page = (await client.get("/console", params={"tab": "developers"})).text
    assert f'href="/console/developers/{developer.id}"' in page
    assert len(_titles(page)) == 1


async def test_search_narrows_the_queue_and_the_counts(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    for key in ("weather-now", "weather-later", "calendar-sync"):
        plugin = await factory.plugin(plugin_key=key, name=key.title())
        await factory.version(plugin, review_status=ReviewStatus.PENDING)
    await logged_in(client, admin)
    page = (await client.get("/console", params={"tab": "plugin-versions", "q": "weather"})).text
    assert sorted(_titles(page)) == ["Weather-Later (weather-later)", "Weather-Now (weather-now)"]
    assert "Plugin versions 2" in text_of(page)
    assert 'value="weather"' in page
    nothing = (await client.get("/console", params={"tab": "plugin-versions", "q": "zzz"})).text
    assert "Nothing pending matches" in text_of(nothing)


async def test_pages_of_twenty(client: httpx.AsyncClient, factory: Factory) -> None:
    admin = await factory.admin()
    plugin = await factory.plugin(plugin_key="many-versions")
    for i in range(23):
        await factory.version(
            plugin,
            f"1.0.{i}",
            review_status=ReviewStatus.PENDING,
            created_at=NOW - timedelta(minutes=100 - i),
        )
    await logged_in(client, admin)
    first = (await client.get("/console", params={"tab": "plugin-versions"})).text
    assert len(_titles(first)) == 20
    assert "Page 1 of 2" in first and "version 1.0.0 " in text_of(first)
    second = (await client.get("/console", params={"tab": "plugin-versions", "page": "2"})).text
    assert len(_titles(second)) == 3 and "version 1.0.22" in text_of(second)


async def test_an_empty_queue_says_so(client: httpx.AsyncClient, factory: Factory) -> None:
    await logged_in(client, await factory.admin())
    page = await client.get("/console/queue")
    assert page.status_code == 200
    assert "Nothing is waiting here" in page.text


async def test_bad_queue_parameters_are_a_400_page(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await logged_in(client, await factory.admin())
    response = await client.get("/console", params={"page": "-1"})
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("text/html")
