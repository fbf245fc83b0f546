"""Migration 0002: search indexes maintained by the database, sort orders index-backed."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import Select, text
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.catalog import service
from marketplace.catalog.schemas import BrowseSort
from marketplace.kit.pagination import Page
from tests.factories import Factory

# FTS5's own consistency check; fails loudly when an index and its deletes disagree.
_INTEGRITY_CHECK = "INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 0)"


_SORT_INDEXES = (
    "SELECT indexname FROM pg_indexes WHERE tablename = 'plugins' "
    "AND indexname LIKE 'ix\\_plugins\\_%' AND indexname NOT LIKE 'ix\\_plugins\\_search%'"
)


def _sql(session: AsyncSession, stmt: Select[str]) -> str:
    dialect = session.get_bind().dialect
    return str(stmt.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))


async def _plan(session: AsyncSession, sql: str, *, bitmap_only: bool = False) -> str:
    if session.get_bind().dialect.name == "sqlite":
        rows = await session.execute(text("EXPLAIN QUERY PLAN " + sql))
        return "\n".join(str(row[-1]) for row in rows)
    # Tiny test tables make a sequential scan cheapest; forbid it to see what indexes allow.
    await session.execute(text("SET LOCAL enable_seqscan = off"))
    if bitmap_only:  # GIN indexes serve through bitmap scans only
        await session.execute(text("SET LOCAL enable_indexscan = off"))
        await session.execute(text("SET LOCAL enable_indexonlyscan = off"))
    rows = await session.execute(text("EXPLAIN " + sql))
    return "\n".join(str(row[0]) for row in rows)


def _query(q: str | None = None, sort: BrowseSort = BrowseSort.POPULAR) -> service.BrowseQuery:
    return service.BrowseQuery(q=q, category=None, type=None, is_free=None, sort=sort)


async def test_every_browse_sort_can_walk_its_listed_index(factory: Factory) -> None:
    """The partial (and expression) indexes match the queries exactly: SQLite's INDEXED BY
    fails when an index cannot serve, and the plan must need no sort of its own."""
    await factory.plugin()
    expected = {
        BrowseSort.POPULAR: "ix_plugins_listed_popular",
        BrowseSort.NEWEST: "ix_plugins_listed_newest",
        BrowseSort.UPDATED: "ix_plugins_listed_updated",
        BrowseSort.NAME: "ix_plugins_listed_name",
        BrowseSort.RATING: "ix_plugins_listed_rating",
    }
    async with factory.sessions() as session:
        dialect = session.get_bind().dialect.name
        for sort, index in expected.items():
            stmt = service.browse_ids_statement(dialect, _query(sort=sort), Page(1, 20))
            sql = _sql(session, stmt)
            if dialect == "sqlite":
                # Tiny test tables make other plans cheapest; ask for the index by name.
                sql = sql.replace("FROM plugins", f"FROM plugins INDEXED BY {index}", 1)
            plan = await _plan(session, sql)
            assert index in plan, (sort, plan)
            assert "TEMP B-TREE" not in plan, (sort, plan)
            assert "Sort" not in plan, (sort, plan)


async def test_search_queries_use_the_search_indexes(factory: Factory) -> None:
    await factory.plugin()
    async with factory.sessions() as session:
        dialect = session.get_bind().dialect.name
        for q, index in (
            (
                "calendar",
                "plugin_search_trigrams" if dialect == "sqlite" else "ix_plugins_search_trgm",
            ),
            ("日历", "plugin_search_grams" if dialect == "sqlite" else "ix_plugins_search_grams"),
            ("c++", "plugin_search_trigrams" if dialect == "sqlite" else "ix_plugins_search_grams"),
        ):
            if dialect == "postgresql":
                # Any btree beats GIN on a one-row table: drop the other plugins indexes
                # inside this transaction (rolled back below) to leave the choice.
                for name in (await session.execute(text(_SORT_INDEXES))).scalars().all():
                    await session.execute(text(f'DROP INDEX "{name}"'))
            stmt = service.browse_ids_statement(dialect, _query(q), Page(1, 20))
            plan = await _plan(session, _sql(session, stmt), bitmap_only=True)
            assert index in plan, (q, plan)
        await session.rollback()


async def test_search_index_follows_inserts_updates_and_deletes(
    factory: Factory, is_postgres: bool
) -> None:
    if is_postgres:
        # A generated column: the database computes it on every write.
        plugin = await factory.plugin(name="Alpha", tags=["Beta"])
        async with factory.sessions() as session:
            stored = await session.scalar(
                text("SELECT search_text FROM plugins WHERE id = :id"), {"id": plugin.id}
            )
        assert stored is not None
        assert "alpha" in stored
        assert "beta" in stored
        return
    plugin = await factory.plugin(name="Alpha")
    async with factory.sessions() as session:
        for table in ("plugin_search_trigrams", "plugin_search_grams"):
            await session.execute(text(_INTEGRITY_CHECK.format(table=table)))
        rowids = await session.scalar(text("SELECT count(*) FROM plugin_search_rowids"))
    assert rowids == 1
    await factory.update_plugin(plugin, name="Beta", tags=["x"])
    async with factory.sessions() as session:
        await session.execute(text("DELETE FROM plugins"))
        await session.commit()
        left = await session.scalar(text("SELECT count(*) FROM plugin_search_rowids"))
        for table in ("plugin_search_trigrams", "plugin_search_grams"):
            # integrity-check fails loudly if a delete left stale entries behind.
            await session.execute(text(_INTEGRITY_CHECK.format(table=table)))
    assert left == 0


async def test_sqlite_search_count_is_driven_by_the_match_set(
    factory: Factory, is_postgres: bool
) -> None:
    """The count of a q reads the FTS matches first (CROSS JOIN fixes the order): left to
    itself, SQLite without statistics probed the FTS table once per listed plugin (5 s for
    one count at 100,000 plugins, bench/bench_browse.py). Then each match's rowid row with
    its facets (migration 0011), never the wide plugins row (27 -> 8 ms at 100,000)."""
    if is_postgres:
        pytest.skip("SQLite's join order")
    await factory.plugin(name_zh="数据分析助手", plugin_key="data-analysis")
    await factory.plugin(name_zh="天气预报", plugin_key="weather")
    async with factory.sessions() as session:
        for q in ("数据分析", "数据"):
            for query in (_query(q), replace(_query(q), category="ai", is_free=True)):
                stmt = service.search_count_statement("sqlite", q, query)
                plan = await _plan(session, _sql(session, stmt))
                first = plan.splitlines()[0]
                assert first.startswith("SCAN plugin_search_"), plan
                assert "plugin_search_rowids USING INTEGER PRIMARY KEY" in plan, plan
                assert " plugins " not in f"{plan} ", plan
            assert await service.count_listed(session, _query(q)) == 1


async def test_search_triggers_exist_at_head(factory: Factory, is_postgres: bool) -> None:
    async with factory.sessions() as session:
        if is_postgres:
            names = set(
                (
                    await session.execute(
                        text("SELECT indexname FROM pg_indexes WHERE tablename = 'plugins'")
                    )
                ).scalars()
            )
            assert {"ix_plugins_search_trgm", "ix_plugins_search_grams"} <= names
            return
        triggers = set(
            (
                await session.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'"))
            ).scalars()
        )
    assert {"plugins_search_insert", "plugins_search_update", "plugins_search_delete"} <= triggers


async def test_postgres_database_has_utf8_ctype_for_cjk_trigrams(
    factory: Factory, is_postgres: bool
) -> None:
    if not is_postgres:
        return
    async with factory.sessions() as session:
        ctype = await session.scalar(
            text("SELECT datctype FROM pg_database WHERE datname = current_database()")
        )
        trigrams = await session.scalar(text("SELECT show_trgm('数据库')"))
    assert "utf" in str(ctype).lower()
    assert trigrams  # with a C ctype pg_trgm extracts nothing from Chinese text
