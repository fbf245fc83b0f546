"""The catalogue generation and the per-process cache of public reads validated against it.

API processes stay stateless: a cached response is served only while the generation it was
built at is still the one in the database, read once per request. Every write that changes
what the public group shows calls `bump_catalog_generation` in its own transaction, so the
new generation becomes visible exactly when the change does, to every process at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import CatalogGeneration

V = TypeVar("V")

MAX_ENTRIES = 4096
MAX_BYTES = 64 * 1024 * 1024
MAX_COUNTS = 8192


@dataclass(frozen=True)
class Generation:
    generation: int
    listing: int


async def bump_catalog_generation(session: AsyncSession, *, listing: bool = True) -> None:
    """Invalidate every cached public read, in the caller's transaction.

    Call it in the same transaction as any write that changes listed content: a review
    decision, a takedown, an update of fields, price or icon, a version becoming current,
    a category change, a deletion. `listing=False` is for changes that cannot move a plugin
    in or out of a filter or search result (download counts, ratings): cached totals stay.

    It updates one row, held until commit: call it last, after any plugin row lock, so all
    writers take the locks in one order (plugin, then generation) and never deadlock.
    """
    row = CatalogGeneration
    values = {"id": 1, "generation": 1, "listing_generation": 1}
    changes = {
        "generation": row.generation + 1,
        "listing_generation": row.listing_generation + (1 if listing else 0),
    }
    # An upsert: a database emptied by hand (the tests do) gets its row back.
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(
            postgresql_insert(row)
            .values(values)
            .on_conflict_do_update(index_elements=[row.id], set_=changes)
        )
    else:
        await session.execute(
            sqlite_insert(row)
            .values(values)
            .on_conflict_do_update(index_elements=[row.id], set_=changes)
        )


async def read_generation(session: AsyncSession) -> Generation:
    """The current numbers; read before the data they guard (so data is never older)."""
    row = (
        await session.execute(
            select(CatalogGeneration.generation, CatalogGeneration.listing_generation).where(
                CatalogGeneration.id == 1
            )
        )
    ).first()
    if row is None:  # only before the first bump of a database emptied by hand (tests)
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
    """A public response, encoded once: the envelope bytes, their ETag, and what a logged-in
    caller's copy needs (the JSON data, and where plugin representations sit in it)."""

    data: Any
    body: bytes
    etag: str
    plugin_ids: tuple[str, ...]
    shape: str  # "items" (data["items"] are plugins), "plugin" (data is one), "none"


class CatalogCache:
    """Encoded public responses keyed by generation, and totals keyed by listing generation."""

    def __init__(
        self,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        max_counts: int = MAX_COUNTS,
    ) -> None:
        self.responses: _GenerationLRU[CachedBody] = _GenerationLRU(max_entries, max_bytes)
        self.counts: _GenerationLRU[Any] = _GenerationLRU(max_counts, max_counts)

    def response(self, generation: Generation, key: Hashable) -> CachedBody | None:
        return self.responses.get(generation.generation, key)

    def store_response(self, generation: Generation, key: Hashable, entry: CachedBody) -> None:
        # The JSON data is kept beside the bytes: count both, roughly.
        self.responses.put(generation.generation, key, entry, size=2 * len(entry.body) + 256)

    def count(self, generation: Generation, key: Hashable) -> Any | None:
        return self.counts.get(generation.listing, key)

    def store_count(self, generation: Generation, key: Hashable, value: Any) -> None:
        self.counts.put(generation.listing, key, value)


def catalog_cache(app: FastAPI) -> CatalogCache:
    """This process's cache, made on first use."""
    cache: CatalogCache | None = getattr(app.state, "catalog_cache", None)
    if cache is None:
        cache = CatalogCache()
        app.state.catalog_cache = cache
    return cache
