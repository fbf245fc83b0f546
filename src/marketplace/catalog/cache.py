"""The catalogue generation and the per-process cache of public reads validated against it.

API processes stay stateless: a cached response is served only while the generation it was
built at is still the one in the database, read once per request. The database itself moves
the generation, by triggers on the listed tables (migration 0016), in the transaction of
every change whatever wrote it, so the new generation becomes visible exactly when the
change does, to every process at once. No Python code moves it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.util import greenlet_spawn

from marketplace.models import CatalogGeneration

V = TypeVar("V")

MAX_ENTRIES = 4096
MAX_BYTES = 64 * 1024 * 1024
MAX_COUNTS = 8192
MAX_LOOKUPS = 4096
MAX_DELIVERIES = 65536  # a few hundred bytes each: the update check's per-plugin answers


@dataclass(frozen=True)
class Generation:
    generation: int
    listing: int


GENERATION_SQL = "SELECT generation, listing_generation FROM catalog_generation WHERE id = 1"


def _generation(row: Any) -> Generation:
    return Generation(0, 0) if row is None else Generation(int(row[0]), int(row[1]))


class GenerationReader(Protocol):
    """A cheap read of the current generation; None when it cannot answer right now."""

    async def read(self) -> Generation | None: ...

    def close(self) -> None: ...


class SqliteGenerationReader:
    """SQLite: a read-only connection used on the event loop, a few microseconds a read.

    Through the async driver the same read costs a round trip to its thread (hundreds of
    microseconds), which would dominate a cached response. Each call is one autocommit
    SELECT (a fresh snapshot; WAL readers never wait for writers).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    async def read(self) -> Generation | None:
        try:
            if self._conn is None:
                # Used on the event loop only; check_same_thread=False lets the finaliser
                # close it from whichever thread collects the app.
                self._conn = sqlite3.connect(
                    f"file:{self.path}?mode=ro",
                    uri=True,
                    isolation_level=None,
                    timeout=0.05,
                    check_same_thread=False,
                )
            return _generation(self._conn.execute(GENERATION_SQL).fetchone())
        except sqlite3.Error:
            self.close()
            return None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()


class PostgresGenerationReader:
    """PostgreSQL: one autocommit SELECT on a pooled driver connection (no ORM session, no
    BEGIN/ROLLBACK round trips), about a tenth of the cost of a session's read.

    Reads are coalesced: at most one is in flight, and callers arriving meanwhile share the
    next one, which starts after they arrived. So every caller still gets a value read after
    its request came in (never an older one), at one read per burst instead of per request.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._next: asyncio.Future[Generation | None] | None = None
        self._drainer: asyncio.Task[None] | None = None

    async def read(self) -> Generation | None:
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        waiting = self._next
        if self._drainer is None:
            self._drainer = asyncio.create_task(self._drain())
        # Shielded: a caller that goes away must not cancel the read others wait for.
        return await asyncio.shield(waiting)

    async def _drain(self) -> None:
        try:
            while self._next is not None:
                waiting, self._next = self._next, None
                result = await self._read_once()
                if not waiting.done():
                    waiting.set_result(result)
        finally:
            self._drainer = None

    async def _read_once(self) -> Generation | None:
        try:
            connection = await self.engine.raw_connection()
        except Exception:  # the pool's own errors: let the session path report them
            return None
        try:
            driver: Any = connection.driver_connection  # the asyncpg connection
            return _generation(await driver.fetchrow(GENERATION_SQL))
        except Exception:
            return None
        finally:
            await greenlet_spawn(connection.close)

    def close(self) -> None:
        """The connections belong to the engine's pool."""


def generation_reader(engine: AsyncEngine) -> GenerationReader | None:
    url = engine.url
    if url.get_backend_name() == "sqlite":
        if url.database in (None, "", ":memory:"):
            return None
        return SqliteGenerationReader(url.database)
    if url.get_driver_name() == "asyncpg":
        return PostgresGenerationReader(engine)
    return None


async def read_generation(
    session: AsyncSession, reader: GenerationReader | None = None
) -> Generation:
    """The current numbers; read before the data they guard (so data is never older).

    A session already in a transaction (a route that loaded its caller first) reads them
    in it: on SQLite its snapshot is fixed, and numbers read elsewhere could be newer than
    the rows it reads next (a cached answer built from older rows under a newer number);
    on PostgreSQL the reader would wait for a second pooled connection while the request
    holds one, which starves the pool once as many requests do so at once."""
    if reader is not None and not session.in_transaction():
        fast = await reader.read()
        if fast is not None:
            return fast
    row = (
        await session.execute(
            select(CatalogGeneration.generation, CatalogGeneration.listing_generation).where(
                CatalogGeneration.id == 1
            )
        )
    ).first()
    if row is None:  # only until the first change after the row was deleted by hand
        return Generation(0, 0)
    return Generation(int(row[0]), int(row[1]))


class _GenerationLRU(Generic[V]):
    """Entries valid for one generation; a newer generation empties it, an older one misses."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.generation = -1
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0

    def _advance(self, generation: int) -> bool:
        if generation > self.generation:
            self._entries.clear()
            self._bytes = 0
            self.generation = generation
        return generation == self.generation

    def get(self, generation: int, key: Hashable) -> V | None:
        # A reader holding an older generation than this process has seen gets a miss: it
        # must not be served, nor fill, entries of the newer one.
        if not self._advance(generation):
            return None
        found = self._entries.get(key)
        if found is None:
            return None
        self._entries.move_to_end(key)
        return found[0]

    def put(self, generation: int, key: Hashable, value: V, size: int = 1) -> None:
        if not self._advance(generation) or size > self.max_bytes:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        self._entries[key] = (value, size)
        self._bytes += size
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            _, (_, evicted) = self._entries.popitem(last=False)
            self._bytes -= evicted

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True)
class CachedBody:
    """A public response, encoded once: the envelope bytes, their ETag, and where plugin
    representations sit in it (a logged-in caller's copy adds a purchase to each).

    Only bytes and a few strings are kept, never the decoded JSON: thousands of entries of
    nested dicts made every full garbage collection walk millions of objects (pauses of a
    quarter of a second under load). A copy that needs the data decodes the bytes."""

    body: bytes
    etag: str
    plugin_ids: tuple[str, ...]
    shape: str  # "items" (data["items"] are plugins), "plugin" (data is one), "none"
    # Copies made from it once and kept with it (a logged-in caller's unbought copy).
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


class CatalogCache:
    """Encoded public responses keyed by generation, and totals keyed by listing generation."""

    def __init__(
        self,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        max_counts: int = MAX_COUNTS,
        reader: GenerationReader | None = None,
    ) -> None:
        self.responses: _GenerationLRU[CachedBody] = _GenerationLRU(max_entries, max_bytes)
        self.counts: _GenerationLRU[Any] = _GenerationLRU(max_counts, max_counts)
        # Other reads that only writes moving the generation can change (download targets).
        self.lookups: _GenerationLRU[Any] = _GenerationLRU(MAX_LOOKUPS, MAX_LOOKUPS)
        # What the update check needs of each plugin: membership and versions only, so
        # keyed by the listing generation (installs and ratings leave it valid).
        self.deliveries: _GenerationLRU[Any] = _GenerationLRU(MAX_DELIVERIES, MAX_DELIVERIES)
        self.reader = reader

    async def generation(self, session: AsyncSession) -> Generation:
        return await read_generation(session, self.reader)

    def response(self, generation: Generation, key: Hashable) -> CachedBody | None:
        return self.responses.get(generation.generation, key)

    def store_response(self, generation: Generation, key: Hashable, entry: CachedBody) -> None:
        # The bytes, and a copy for logged-in callers who bought none of its plugins.
        self.responses.put(generation.generation, key, entry, size=2 * len(entry.body) + 256)

    def count(self, generation: Generation, key: Hashable) -> Any | None:
        return self.counts.get(generation.listing, key)

    def store_count(self, generation: Generation, key: Hashable, value: Any) -> None:
        self.counts.put(generation.listing, key, value)

    def lookup(self, generation: Generation, key: Hashable) -> Any | None:
        return self.lookups.get(generation.generation, key)

    def store_lookup(self, generation: Generation, key: Hashable, value: Any) -> None:
        self.lookups.put(generation.generation, key, value)

    def delivery(self, generation: Generation, key: Hashable) -> Any | None:
        return self.deliveries.get(generation.listing, key)

    def store_delivery(self, generation: Generation, key: Hashable, value: Any) -> None:
        self.deliveries.put(generation.listing, key, value)


def catalog_cache(app: FastAPI) -> CatalogCache:
    """This process's cache, made on first use."""
    cache: CatalogCache | None = getattr(app.state, "catalog_cache", None)
    if cache is None:
        cache = CatalogCache(reader=generation_reader(app.state.engine))
        app.state.catalog_cache = cache
        if cache.reader is not None:
            weakref.finalize(app, cache.reader.close)
    return cache
