"""The in-process search index (catalog.search_index): the same answers as the SQL search,
on every write, on both databases, and a fallback to SQL while it is not built."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.catalog import search_index as search_index_module
from marketplace.catalog import service
from marketplace.catalog.cache import GENERATION_SQL
from marketplace.catalog.schemas import BrowseSort
from marketplace.catalog.search_index import SearchIndex, search_index
from marketplace.config import Settings
from marketplace.kit.pagination import Page
from marketplace.models import Plugin, PluginType
from tests.catalog.conftest import OpenIndex
from tests.catalog.listing_changes import change_listing
from tests.factories import Factory
from tests.helpers import ok

BASE = datetime(2026, 1, 1, tzinfo=UTC)


# (name, description, tags, category, type, free, downloads, rating_sum, rating_count, age)
CORPUS = [
    ("Weather Report", "Daily weather for your city", ["weather", "天气"], "ai", "mcp", True, 5, 9, 2, 0),
    ("weather station", "Reads a WEATHER station", ["iot"], "ai", "tool", False, 5, 9, 2, 0),
    ("天气预报", "中文天气预报插件", ["天气", "预报"], "productivity", "mcp", True, 7, 0, 0, 1),
    ("Data  Analysis", "two  spaces inside", ["数据分析"], "development", "skill", True, 0, 5, 1, 2),
    ("data analysis tool", "数据分析 and charts", [], "development", "tool", False, 0, 5, 1, 2),
    ("Mail Sync", "ends with ns", ["mail"], "productivity", "mcp", True, 100, 20, 4, 3),
    ("Calendar", "A calendar; weather-aware", ["cal"], "ai", "hook", True, 3, 3, 1, 4),
    ("abc", "abcabd", ["xyz"], "ai", "mcp", True, 3, 0, 0, 5),
    ("Tab\there", "line one", ["tagged words"], "productivity", "tool", True, 1, 12, 3, 5),
    ("混合 mixed 脚本", "天气weather mixed", ["mix"], "ai", "skill", False, 9, 4, 1, 6),
    ("zeta", "last by name", [], "development", "mcp", True, 9, 4, 1, 6),
    ("Alpha", "first by name", ["a"], "development", "mcp", True, 2, 8, 2, 7),
]  # fmt: skip

QUERIES = [
    "weather", "WEATHER", "Weather Report", "天气", "天", "气预", "数据分析", "a", "ab", "abc",
    "abd", "cabd", "ns", "ns a", "spaces inside", "two  spaces", "two spaces", "data  analysis",
    "天气weather", "mixed 脚", "tagged words", "d words", "er", "e", "zz", "no such words",
    "weather-aware", "; w", "plugin-",
]  # fmt: skip


AFTER_WRITES = ["weather", "天", "er", "storm", "nothing to see", "插件"]


async def _corpus(factory: Factory) -> list[Plugin]:
    owner = await factory.developer()
    plugins = []
    for name, description, tags, category, type_, free, downloads, r_sum, r_count, age in CORPUS:
        created = BASE + timedelta(days=age)
        plugins.append(
            await factory.plugin(
                owner,
                name=name,
                description=description,
                tags=tags,
                category=category,
                type=type_,
                is_free=free,
                download_count=downloads,
                rating_sum=r_sum,
                rating_count=r_count,
                created_at=created,
                updated_at=created + timedelta(hours=age % 3),
            )
        )
    # One that is not listed: never found.
    await factory.plugin(owner, name="Weather hidden", review_status="pending")
    return plugins


async def _generation(session: AsyncSession) -> int:
    row = (await session.execute(text(GENERATION_SQL))).first()
    return 0 if row is None else int(row[0])


async def _by_sql(
    session: AsyncSession, query: service.BrowseQuery, page: Page
) -> tuple[int, list[str]]:
    total = await service.count_listed(session, query)
    rows = await service.browse_page(session, query, page)
    return total, [row.plugin.id for row in rows]


async def _by_index(
    index: SearchIndex, session: AsyncSession, query: service.BrowseQuery, page: Page
) -> tuple[int, list[str]]:
    found = await index.find(session, await _generation(session), query, page)
    assert found is not None
    return found.total, found.ids


def _queries(queries: list[str]) -> list[service.BrowseQuery]:
    filters: list[tuple[str | None, PluginType | None, bool | None]] = [
        (None, None, None),
        ("ai", None, None),
        (None, PluginType.MCP, None),
        (None, None, False),
        ("development", PluginType.TOOL, False),
    ]
    return [
        service.BrowseQuery(q=q, category=c, type=t, is_free=f, sort=sort)
        for q, (c, t, f), sort in itertools.product(queries, filters, BrowseSort)
    ]


async def _assert_same_as_sql(
    sessionmaker: async_sessionmaker[AsyncSession],
    index: SearchIndex,
    sizes: tuple[int, ...],
    queries: list[str] = QUERIES,
) -> int:
    """Every query, page by page: the index's total and ids are SQL's. Returns how many
    queries matched something (so the corpus is known to exercise the index)."""
    matched = 0
    async with sessionmaker() as session:
        for query in _queries(queries):
            for size in sizes:
                for number in (1, 2, 3):
                    page = Page(number, size)
                    expected = await _by_sql(session, query, page)
                    assert await _by_index(index, session, query, page) == expected, (query, page)
                    matched += expected[0] > 0 and number == 1 and size == sizes[0]
    return matched


async def test_the_index_answers_what_sql_answers(
    factory: Factory,
    app: FastAPI,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
) -> None:
    """Totals and pages for English, Chinese, mixed, 1-2 character, whitespace and
    punctuation queries, with every filter combination tried and every sort, ties included
    (equal downloads, ratings and dates are broken by id as in SQL)."""
    await _corpus(factory)
    index = open_index()
    matched = await _assert_same_as_sql(sessionmaker, index, (2, 5))
    assert index.ready
    assert matched > 150


async def test_the_index_follows_every_write(
    factory: Factory,
    app: FastAPI,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
) -> None:
    """Listing, unlisting, a move, a price change, a rename, counters and a deletion: the
    next search applies the plugins noted since its generation and agrees with SQL."""
    plugins = await _corpus(factory)
    index = open_index()
    query = service.BrowseQuery(
        q="weather", category=None, type=None, is_free=None, sort=BrowseSort.POPULAR
    )
    async with sessionmaker() as session:
        before = await _by_index(index, session, query, Page(1, 20))
    assert before[0] == 4
    built_at = index.generation

    writes: list[dict[str, Any]] = [
        {"enabled": False},  # unlisted
        {"enabled": True},
        {"category": "development"},
        {"is_free": False, "price": 3},
        {"name": "Renamed storm"},  # the name held the match; the description still does
        {"download_count": 1000},  # to the top of popular
        {"rating_sum": 50, "rating_count": 10},
        {"description": "nothing to see"},
    ]
    for values in writes:
        await factory.update_plugin(plugins[0], **values)
        await _assert_same_as_sql(sessionmaker, index, (3,), AFTER_WRITES)
    assert index.generation > built_at

    pending = await factory.plugin(name="Weather Later", review_status="pending")
    await factory.update_plugin(pending, review_status="approved", enabled=True)
    async with sessionmaker() as session:
        total, ids = await _by_index(index, session, query, Page(1, 20))
        assert total == 5  # the first still matches by its tag; one listed now
        assert pending.id in ids
        await session.execute(text("DELETE FROM plugins WHERE id = :id"), {"id": plugins[1].id})
        await session.commit()
    async with sessionmaker() as session:
        after = await _by_index(index, session, query, Page(1, 20))
        assert plugins[1].id not in after[1]
        assert after == await _by_sql(session, query, Page(1, 20))


async def test_browse_serves_q_from_the_index_and_follows_api_writes(
    factory: Factory, app: FastAPI, client: httpx.AsyncClient
) -> None:
    """Through the API: the first search builds the index, answers agree with the SQL
    search, and an install (a counter) reorders popular at once."""
    plugins = await _corpus(factory)
    params: dict[str, str | int] = {"q": "weather", "sort": "popular", "pageSize": 3}
    first = ok(await client.get("/api/v1/plugins/browse", params=params))
    index = app.state.search_index
    assert index.ready and index.generation > 0
    metrics = (await client.get("/metrics")).text
    assert f"search_index_generation {float(index.generation)}" in metrics
    assert first["total"] == 4
    # Downloads 9, then two with 5 (ties by id, descending, as SQL breaks them).
    tied = sorted([p.id for p in plugins[:2]], reverse=True)
    assert [item["id"] for item in first["items"]] == [plugins[9].id, *tied]

    user = await factory.user()
    await factory.version(plugins[6], "1.0.0")
    for _ in range(7):  # Calendar (3 downloads) past everything, the mixed one (9) too
        installer = await factory.user()
        response = await client.post(
            f"/api/v1/plugins/install/{plugins[6].id}",
            json={"version": "1.0.0"},
            headers=installer.headers,
        )
        assert response.status_code == 201, response.text
    generation = index.generation
    second = ok(await client.get("/api/v1/plugins/browse", params=params))
    assert index.generation > generation
    assert [item["name"] for item in second["items"]][:2] == ["Calendar", "混合 mixed 脚本"]
    assert second["items"][0]["downloadCount"] == 10

    app.state.settings.search_index = False
    await factory.update_plugin(plugins[6], featured=True)  # a new generation: no cached copy
    by_sql = ok(await client.get("/api/v1/plugins/browse", params=params, headers=user.headers))
    app.state.settings.search_index = True
    await factory.update_plugin(plugins[6], featured=False)
    by_index = ok(await client.get("/api/v1/plugins/browse", params=params, headers=user.headers))
    assert [i["id"] for i in by_sql["items"]] == [i["id"] for i in by_index["items"]]
    assert by_sql["total"] == by_index["total"]


async def test_unicode_case_is_folded_by_the_index(
    factory: Factory,
    app: FastAPI,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
) -> None:
    """CONTRACT 6 says case-insensitive: the index folds every script's case, for short
    queries too (SQLite's own lower() folds ASCII only)."""
    owner = await factory.developer()
    plugin = await factory.plugin(owner, name="ÄRGER Über Straße", description="Ωmega")
    index = open_index()
    async with sessionmaker() as session:
        for q in ("ä", "är", "über", "ÜBER", "ωmega", "ΩMEGA", "straße"):
            query = service.BrowseQuery(
                q=q, category=None, type=None, is_free=None, sort=BrowseSort.NAME
            )
            assert await _by_index(index, session, query, Page(1, 5)) == (1, [plugin.id]), q


async def test_a_large_catalogue_is_built_in_the_background_meanwhile_sql_answers(
    factory: Factory,
    app: FastAPI,
    sessionmaker: async_sessionmaker[AsyncSession],
    monkeypatch: pytest.MonkeyPatch,
    open_index: OpenIndex,
) -> None:
    await _corpus(factory)
    monkeypatch.setattr(search_index_module, "INLINE_BUILD_LIMIT", 0)
    index = open_index()
    query = service.BrowseQuery(
        q="weather", category=None, type=None, is_free=None, sort=BrowseSort.NAME
    )
    async with sessionmaker() as session:
        assert await index.find(session, await _generation(session), query, Page(1, 5)) is None
        task = index._build_task
        assert task is not None
        await task
        assert index.ready
        assert await _by_index(index, session, query, Page(1, 5)) == await _by_sql(
            session, query, Page(1, 5)
        )


async def test_a_failed_build_leaves_sql_answering_and_is_retried(
    factory: Factory,
    app: FastAPI,
    client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await _corpus(factory)
    calls = []

    def broken(_row: object) -> object:
        calls.append(1)
        raise RuntimeError("disk full")

    monkeypatch.setattr(search_index_module, "document", broken)
    params = {"q": "weather", "sort": "name"}
    body = ok(await client.get("/api/v1/plugins/browse", params=params))
    assert body["total"] == 4  # answered by SQL
    index = app.state.search_index
    assert not index.ready and index.failures == 1 and calls
    monkeypatch.undo()
    await factory.update_plugin((await _corpus(factory))[0], featured=True)  # a new generation
    body = ok(await client.get("/api/v1/plugins/browse", params=params))
    assert index.ready and body["total"] == 8


async def test_concurrent_searches_and_writes_agree_with_sql(
    factory: Factory,
    app: FastAPI,
    client: httpx.AsyncClient,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    """Searches racing counter updates: each answer is some generation's exact answer, and
    once the writes stop the index and SQL agree."""
    plugins = await _corpus(factory)
    params: dict[str, str | int] = {"q": "插件", "sort": "popular", "pageSize": 100}

    async def search() -> None:
        for _ in range(5):
            body = ok(await client.get("/api/v1/plugins/browse", params=params))
            assert body["total"] == len(body["items"]) == 12

    async def write() -> None:
        for step in range(5):
            await factory.update_plugin(plugins[step], download_count=500 + step)

    await asyncio.gather(search(), search(), write())
    index = app.state.search_index
    query = service.BrowseQuery(
        q="插件", category=None, type=None, is_free=None, sort=BrowseSort.POPULAR
    )
    async with sessionmaker() as session:
        assert await _by_index(index, session, query, Page(1, 100)) == await _by_sql(
            session, query, Page(1, 100)
        )


async def test_changes_are_noted_and_stamped_with_the_generation(
    factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    """Every plugin write, raw SQL included, is noted, and the generation move of its
    transaction (migration 0016's triggers) stamps the note with the new number."""
    plugin = await factory.plugin()
    async with sessionmaker() as session:
        await session.execute(text("DELETE FROM plugin_search_changes"))
        before = await _generation(session)
        await session.commit()
    async with sessionmaker() as session:
        await session.execute(
            text("UPDATE plugins SET download_count = 7 WHERE id = :id"), {"id": plugin.id}
        )
        await session.commit()
    async with sessionmaker() as session:
        generation = await _generation(session)
        notes = (
            await session.execute(text("SELECT plugin_id, generation FROM plugin_search_changes"))
        ).all()
        assert generation == before + 1
        assert [tuple(n) for n in notes] == [(plugin.id, generation)]
        await session.execute(text("DELETE FROM plugins WHERE id = :id"), {"id": plugin.id})
        await session.commit()
    async with sessionmaker() as session:
        stamped = (
            (
                await session.execute(
                    text("SELECT generation FROM plugin_search_changes ORDER BY id")
                )
            )
            .scalars()
            .all()
        )
        assert stamped == [generation, generation + 1]


async def test_old_notes_are_pruned(
    sessionmaker: async_sessionmaker[AsyncSession], factory: Factory
) -> None:
    """Notes more than 100,000 generations old go at the next bump (migration 0012)."""
    plugin = await factory.plugin()
    async with sessionmaker() as session:
        await session.execute(text("UPDATE catalog_generation SET generation = 200000"))
        await session.execute(text("UPDATE plugin_search_changes SET generation = 1"))
        await session.execute(
            text("INSERT INTO plugin_search_changes (plugin_id, generation) VALUES (:id, 150000)"),
            {"id": plugin.id},
        )
        await change_listing(session)
        await session.commit()
    async with sessionmaker() as session:
        kept = (
            (await session.execute(text("SELECT generation FROM plugin_search_changes")))
            .scalars()
            .all()
        )
        assert kept == [150000]


async def test_an_index_too_far_behind_is_rebuilt(
    factory: Factory,
    app: FastAPI,
    sessionmaker: async_sessionmaker[AsyncSession],
    settings: Settings,
    open_index: OpenIndex,
) -> None:
    plugins = await _corpus(factory)
    index = open_index()
    query = service.BrowseQuery(
        q="weather", category=None, type=None, is_free=None, sort=BrowseSort.NAME
    )
    async with sessionmaker() as session:
        await _by_index(index, session, query, Page(1, 20))
    async with sessionmaker() as session:
        await session.execute(text("UPDATE catalog_generation SET generation = generation + 95000"))
        await session.execute(
            text("UPDATE plugins SET enabled = false WHERE id = :id"), {"id": plugins[0].id}
        )
        await session.commit()
    async with sessionmaker() as session:
        generation = await _generation(session)
        # Too far behind: no answer from the old index, a rebuild instead.
        assert (
            await index.find(session, generation, query, Page(1, 20)) is None
            or index.generation == generation
        )
        if index._build_task is not None:
            await index._build_task
        assert index.generation == generation
        assert await _by_index(index, session, query, Page(1, 20)) == await _by_sql(
            session, query, Page(1, 20)
        )
        assert settings.search_index


def test_search_index_can_be_turned_off(app: FastAPI) -> None:
    app.state.settings.search_index = False
    assert search_index(app) is None
