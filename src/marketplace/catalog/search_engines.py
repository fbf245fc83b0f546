"""One interface for browse: which listed plugins, in which order, and how many.

Two engines stand behind it, held to the same golden tests (tests/catalog/test_search*.py):

- `IndexEngine`: the host's search index (catalog.search_index), for a browse with q.
  It answers only when it can show the request's generation; otherwise it declines.
- `DatabaseEngine`: the database's own indexes (catalog.search: pg_trgm on PostgreSQL,
  FTS5 on SQLite, and the sort indexes when there is no q). It always answers.

`browse_listed` asks them in order; the first answer wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.catalog import service
from marketplace.catalog.cache import CatalogCache, Generation, catalog_cache
from marketplace.catalog.search import walk_is_cheaper
from marketplace.catalog.search_index import SearchIndex, search_index
from marketplace.kit.pagination import Page


@dataclass(frozen=True)
class Browsed:
    """A browse's answer: the total, and the page's plugins in order."""

    total: int
    rows: Sequence[service.PluginRow]


class BrowseEngine(Protocol):
    async def browse(
        self,
        session: AsyncSession,
        generation: Generation,
        query: service.BrowseQuery,
        page: Page,
    ) -> Browsed | None:
        """The answer at `generation` (or a later one), or None to let the next engine."""
        ...


class IndexEngine:
    def __init__(self, index: SearchIndex) -> None:
        self.index = index

    async def browse(
        self,
        session: AsyncSession,
        generation: Generation,
        query: service.BrowseQuery,
        page: Page,
    ) -> Browsed | None:
        found = await self.index.find(session, generation.generation, query, page)
        if found is None:
            return None
        return Browsed(found.total, await service.plugins_in_order(session, found.ids))


class DatabaseEngine:
    """SQL, with exact totals cached per listing generation and filter (pages, sorts and
    generations moved by installs or ratings share them).

    `searches`, when given, is where a search's counts and ids are asked (SQLite: on
    aiosqlite's thread, while read sessions run on the loop's; db.make_read_engine). A
    search in SQL takes tens of milliseconds, hundreds at 1,000,000 plugins: the loop
    serves other requests meanwhile. The page's rows are read in the request's session."""

    def __init__(
        self, cache: CatalogCache, searches: async_sessionmaker[AsyncSession] | None = None
    ) -> None:
        self.cache = cache
        self.searches = searches

    async def browse(
        self,
        session: AsyncSession,
        generation: Generation,
        query: service.BrowseQuery,
        page: Page,
    ) -> Browsed:
        if query.q and self.searches is not None:
            async with self.searches() as searching:
                return await self._browse(searching, session, generation, query, page)
        return await self._browse(session, session, generation, query, page)

    async def _browse(
        self,
        searching: AsyncSession,
        session: AsyncSession,
        generation: Generation,
        query: service.BrowseQuery,
        page: Page,
    ) -> Browsed:
        total = await self._count(searching, generation, query)
        walk = False
        if query.q:
            candidates = await self._count(searching, generation, query.without_search())
            walk = walk_is_cheaper(total, candidates, page.offset + page.size)
        # The exact total says when the page is empty: no walk through an index to find out
        # (a filter combination that matches nothing would read every row of one filter).
        if page.offset >= total:
            return Browsed(total, [])
        ids = await service.browse_ids(searching, query, page, walk=walk)
        return Browsed(total, await service.plugins_in_order(session, ids))

    async def _count(
        self, session: AsyncSession, generation: Generation, query: service.BrowseQuery
    ) -> int:
        key = ("browse", *query.filter_key())
        total: int | None = self.cache.count(generation, key)
        if total is None:
            total = await service.count_listed(session, query)
            self.cache.store_count(generation, key, total)
        return total


def browse_engines(app: FastAPI, query: service.BrowseQuery) -> list[BrowseEngine]:
    """The engines a browse tries, in order: the index for a search (when it is on)."""
    index = search_index(app) if query.q else None
    return [IndexEngine(index)] if index is not None else []


async def browse_listed(
    app: FastAPI,
    session: AsyncSession,
    generation: Generation,
    query: service.BrowseQuery,
    page: Page,
) -> Browsed:
    """The first answer of the engines, the database's when none other answers."""
    for engine in browse_engines(app, query):
        browsed = await engine.browse(session, generation, query, page)
        if browsed is not None:
            return browsed
    searches = app.state.search_sessionmaker
    return await DatabaseEngine(catalog_cache(app), searches).browse(
        session, generation, query, page
    )
