"""Issue 14: public reads whose work does not grow with the catalogue (migration 0010).

Plans are read with the planner's statistics taken (`marketplace.db.analyze`, as migrations
and a SQLite start do) over a small catalogue where every plugin is listed and approved:
what a large real one looks like to the planner.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import httpx
import pytest
from alembic import command
from sqlalchemy import Connection, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.app import create_app, shutdown
from marketplace.catalog import service
from marketplace.catalog.schemas import BrowseSort
from marketplace.catalog.search import search_condition
from marketplace.config import Settings
from marketplace.db import analyze
from marketplace.kit.pagination import Page
from marketplace.migrate import alembic_config, upgrade
from marketplace.models import Plugin, PluginType, ReviewStatus
from tests.catalog.test_indexes import _plan, _sql
from tests.factories import Factory
from tests.helpers import ok
from tests.migrations import IGNORE_EXPRESSION_INDEXES, model_diff, run_now, table_names

CATEGORIES = ("productivity", "development", "ai")
TYPES = ("mcp", "tool", "skill")


async def _catalogue(factory: Factory, size: int = 24) -> list[Plugin]:
    owner = await factory.developer()
    plugins = []
    for index in range(size):
        plugin = await factory.plugin(
            owner,
            category=CATEGORIES[index % len(CATEGORIES)],
            type=TYPES[index % len(TYPES)],
            is_free=index % 4 != 3,
            download_count=index,
        )
        await factory.version(plugin, "1.0.0")
        await factory.version(plugin, "1.1.0")
        plugins.append(plugin)
    return plugins


async def _analyzed(session: AsyncSession) -> None:
    connection = await session.connection()
    await connection.run_sync(analyze)


def _query(
    category: str | None = None,
    type: PluginType | None = None,
    is_free: bool | None = None,
    sort: BrowseSort = BrowseSort.POPULAR,
    q: str | None = None,
) -> service.BrowseQuery:
    return service.BrowseQuery(q=q, category=category, type=type, is_free=is_free, sort=sort)


async def test_versions_are_read_through_the_plugin_version_index(factory: Factory) -> None:
    """Not through ix_plugin_versions_review_status, where every row of a big catalogue is
    approved: SQLite chose it without statistics (120 ms at 100,000 plugins)."""
    plugins = await _catalogue(factory, 6)
    async with factory.sessions() as session:
        dialect = session.get_bind().dialect.name
        for analyzed in (False, True):  # whatever the statistics say
            if analyzed:
                await _analyzed(session)
            stmt = service.listed_versions_statement(plugins[0].id)
            plan = await _plan(session, _sql(session, stmt))
            assert "ix_plugin_versions_review_status" not in plan, plan
            # By plugin: the (plugin_id, version) unique index, or the update check's
            # (plugin_id, review_status, ...) one of migration 0017, which serves as well.
            if dialect == "sqlite":
                assert any(
                    f"plugin_versions USING INDEX {name}" in plan
                    for name in ("sqlite_autoindex_plugin_versions", "ix_plugin_versions_delivery")
                ), plan
            else:
                assert any(
                    name in plan
                    for name in (
                        "uq_plugin_versions_plugin_id_version",
                        "ix_plugin_versions_delivery",
                    )
                ), plan
        _plugin, approved = await service.listed_plugin_versions(session, plugins[0].id)
        versions = [v.version for v in approved]
        await session.rollback()
    assert versions == ["1.1.0", "1.0.0"]


async def test_browse_with_one_filter_walks_its_filter_and_sort_index(factory: Factory) -> None:
    """category, type or isFree with any sort: one partial index walked in order up to the
    page, no sort step, whatever the catalogue size."""
    await _catalogue(factory)
    filters = {
        "category": _query(category="ai"),
        "type": _query(type=PluginType.TOOL),
        "free": _query(is_free=False),
    }
    async with factory.sessions() as session:
        dialect = session.get_bind().dialect.name
        await _analyzed(session)
        for (name, query), sort in itertools.product(filters.items(), BrowseSort):
            query = service.BrowseQuery(
                q=None, category=query.category, type=query.type, is_free=query.is_free, sort=sort
            )
            index = (
                "ix_plugins_listed_category"
                if (name, sort) == ("category", BrowseSort.POPULAR)
                else f"ix_plugins_listed_{name}_{sort.value}"
            )
            stmt = service.browse_ids_statement(dialect, query, Page(30, 20))
            sql = _sql(session, stmt)
            if dialect == "sqlite":
                # A 24-row table makes a plain scan as good as any: ask for the index by name
                # (INDEXED BY fails when the index cannot serve the query).
                sql = sql.replace("FROM plugins", f"FROM plugins INDEXED BY {index}", 1)
            else:
                # The same question to PostgreSQL: which index serves filter and order alone.
                # The sort-only index can serve the order too (filtering row by row), and on
                # a small table with other tests' rows the planner may price it lower: it is
                # dropped inside this transaction (rolled back below), so the question is
                # only whether the filter + sort index serves without a sort.
                await session.execute(text("SET LOCAL enable_sort = off"))
                await session.execute(text("SET LOCAL enable_bitmapscan = off"))
                await session.execute(text(f"DROP INDEX IF EXISTS ix_plugins_listed_{sort.value}"))
            plan = await _plan(session, sql)
            assert index in plan, (name, sort, plan)
            assert "TEMP B-TREE" not in plan, (name, sort, plan)
            assert "Sort" not in plan, (name, sort, plan)
        await session.rollback()


async def test_browse_total_without_q_reads_the_kept_counts(factory: Factory) -> None:
    await _catalogue(factory, 6)
    async with factory.sessions() as session:
        stmt = service.count_statement(_query(category="ai", type=PluginType.TOOL, is_free=True))
        plan = await _plan(session, _sql(session, stmt))
        assert "catalog_listing_counts" in plan, plan
        assert " plugins" not in plan.replace("catalog_listing_counts", ""), plan


async def _direct_count(session: AsyncSession, query: service.BrowseQuery) -> int:
    """Counted on the plugins rows themselves (never the kept counts or facets)."""
    conditions = [service.LISTED]
    if query.q is not None:
        dialect = session.get_bind().dialect.name
        conditions.append(search_condition(dialect, query.q))
    if query.category is not None:
        conditions.append(Plugin.category == query.category)
    if query.type is not None:
        conditions.append(Plugin.type == query.type.value)
    if query.is_free is not None:
        conditions.append(Plugin.is_free == query.is_free)
    return int(
        await session.scalar(select(func.count()).select_from(Plugin).where(*conditions)) or 0
    )


async def _assert_counts_exact(factory: Factory) -> None:
    async with factory.sessions() as session:
        for category, type_, is_free in itertools.product(
            (None, *CATEGORIES, "design"),
            (None, *(PluginType(t) for t in TYPES), PluginType.HOOK),
            (None, True, False),
        ):
            query = _query(category=category, type=type_, is_free=is_free)
            kept = await service.count_listed(session, query)
            assert kept == await _direct_count(session, query), query
            # With q: SQLite counts on the facets beside each search rowid (0011).
            for q in ("plugin", "插件"):
                searched = replace(query, q=q)
                kept = await service.count_listed(session, searched)
                assert kept == await _direct_count(session, searched), searched
        by_category = await service.listed_counts_by_category(session)
        for category in CATEGORIES:
            assert by_category.get(category, 0) == await _direct_count(
                session, _query(category=category)
            )


async def test_kept_counts_follow_every_kind_of_write(factory: Factory) -> None:
    """Exact totals (CONTRACT 6) through inserts, reviews, disabling, moves between
    categories, types and prices, deletes, and a bulk UPDATE no ORM hook sees."""
    plugins = await _catalogue(factory, 12)
    await factory.plugin(review_status=ReviewStatus.PENDING, category="ai")
    await factory.plugin(review_status=ReviewStatus.APPROVED, enabled=False, category="ai")
    await _assert_counts_exact(factory)
    await factory.update_plugin(plugins[0], review_status=ReviewStatus.TAKEN_DOWN.value)
    await factory.update_plugin(plugins[1], enabled=False)
    await factory.update_plugin(plugins[2], category="design", type="hook")
    await factory.update_plugin(plugins[3], is_free=False, price=9)
    await factory.update_plugin(plugins[4], download_count=1000)  # no listing change
    await _assert_counts_exact(factory)
    await factory.update_plugin(plugins[0], review_status=ReviewStatus.APPROVED.value)
    await factory.update_plugin(plugins[1], enabled=True)
    async with factory.sessions() as session:
        await session.execute(text("UPDATE plugins SET type = 'skill' WHERE category = 'ai'"))
        await session.execute(text("DELETE FROM plugins WHERE category = 'development'"))
        await session.commit()
    await _assert_counts_exact(factory)


async def test_migrations_leave_planner_statistics(factory: Factory, is_postgres: bool) -> None:
    """marketplace.db.analyze runs after the migrations (and at a SQLite start)."""
    async with factory.sessions() as session:
        if is_postgres:
            analyzed = await session.scalar(
                text(
                    "SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL "
                    "FROM pg_stat_user_tables WHERE relname = 'plugins'"
                )
            )
            assert analyzed
        else:
            tables = await session.scalar(
                text("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")
            )
            assert tables == 1


@IGNORE_EXPRESSION_INDEXES
def test_migration_0010_goes_down_and_up(scratch_url: str) -> None:
    upgrade(scratch_url)
    command.downgrade(alembic_config(scratch_url), "0009")
    assert "catalog_listing_counts" not in run_now(scratch_url, table_names)
    upgrade(scratch_url)
    assert "catalog_listing_counts" in run_now(scratch_url, table_names)
    assert run_now(scratch_url, model_diff({"catalog_listing_counts"})) == []


def _search_rowid_columns(connection: Connection) -> set[str]:
    if connection.dialect.name != "sqlite":
        return set()
    rows = connection.execute(text("PRAGMA table_info(plugin_search_rowids)"))
    return {row[1] for row in rows}


def _insert_trigger(connection: Connection) -> str:
    sql = connection.execute(
        text("SELECT sql FROM sqlite_master WHERE name = 'plugins_search_insert'")
    ).scalar_one()
    return str(sql)


def test_migration_0011_goes_down_and_up(scratch_url: str, is_postgres: bool) -> None:
    if is_postgres:
        pytest.skip("0011 changes SQLite's search tables only")
    upgrade(scratch_url)
    facets = {"listed", "category", "type", "is_free"}
    assert facets <= run_now(scratch_url, _search_rowid_columns)
    assert "new.category, new.type, new.is_free);" in run_now(scratch_url, _insert_trigger)
    command.downgrade(alembic_config(scratch_url), "0010")
    assert run_now(scratch_url, _search_rowid_columns) == {"rowid", "plugin_id"}
    assert "plugin_search_rowids (plugin_id) VALUES (new.id);" in run_now(
        scratch_url, _insert_trigger
    )
    upgrade(scratch_url)
    assert facets <= run_now(scratch_url, _search_rowid_columns)


async def test_an_empty_page_asks_no_page_query(
    client: httpx.AsyncClient, factory: Factory, statements: list[str], settings: Settings
) -> None:
    """The exact total already says the page is empty: a filter combination that matches
    nothing would otherwise walk every row of one filter's index (11-14 ms at 100,000)."""
    settings.search_index = False  # the SQL search's page query (the index asks none)
    await _catalogue(factory, 6)
    for params, total in (
        ({"category": "ai", "type": "hook"}, 0),  # nothing there
        ({"category": "ai", "page": 2, "pageSize": 20}, 2),  # past the last page
        ({"q": "no such words", "sort": "name"}, 0),
    ):
        statements.clear()
        body = ok(await client.get("/api/v1/plugins/browse", params=params))
        assert (body["items"], body["total"]) == ([], total), params
        pages = [s for s in statements if s.lstrip().startswith("SELECT plugins.id")]
        assert pages == [], params
    body = ok(await client.get("/api/v1/plugins/browse", params={"category": "ai"}))
    assert len(body["items"]) == body["total"] == 2


async def test_the_service_plans_with_its_postgresql_settings(
    settings: Settings, is_postgres: bool
) -> None:
    """1.1 by default: with PostgreSQL's 4.0 a common search word scanned the whole table
    (41 ms at 100,000 plugins) instead of the trigram index (15 ms)."""
    if not is_postgres:
        pytest.skip("a PostgreSQL planner setting")
    for changed, cost, work_mem in (
        ({}, "1.1", "32MB"),
        ({"db_random_page_cost": 4.0, "db_work_mem_mb": 4}, "4", "4MB"),
    ):
        app = create_app(settings.model_copy(update=changed))
        try:
            async with app.state.sessionmaker() as session:
                assert await session.scalar(text("SHOW random_page_cost")) == cost
                assert await session.scalar(text("SHOW work_mem")) == work_mem
        finally:
            await shutdown(app)
