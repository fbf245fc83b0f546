"""Browse's q from an in-process inverted index (Tantivy), kept at the catalogue generation.

SQLite's FTS5 and PostgreSQL's pg_trgm read every match of a common word to count it (the
exact total of CONTRACT 6): 17 ms at 100,000 plugins and 120-250 ms at 1,000,000 for a word
in 12 % of them. Tantivy answers the count, the filters and the sorted page from compressed
posting lists and column-stored sort keys in a few milliseconds (docs/performance.md).

What is indexed: each listed plugin, as

- `grams`: the trigrams of its searchable text (pluginKey, names, descriptions and tags,
  lower-cased, joined by newlines as PostgreSQL's search_text is), written one after another
  so their positions are consecutive. A q of 3+ characters is a phrase of its trigrams: a
  substring match, exactly, and never across two fields (a trigram holding the newline is
  never asked for, q has no control characters). Whitespace inside a trigram is mapped to
  private-use characters first, since the whitespace tokenizer splits on it.
- `short`: every 1- and 2-character substring of the same text, for q of 1-2 characters.
- the facets (category, type, isFree) and one key per sort: `key_<sort>`, a string whose
  byte order is the SQL order of catalog.service.ORDERS, ties broken by id as there; and
  for popular, newest and updated `rank_<sort>`, a 64-bit number that never orders two
  plugins against that order but may tie them. Tantivy turns every string key of the hits
  before a page into its text, so a page ordered by strings costs its offset (8 ms at page
  30); those pages are ordered by the number, and only plugins tying on it (rare: it holds
  the sort value and the id's first characters) are put in order by their string keys.

Only listed plugins are in the index. It lives on disk, one per host and database
(catalog.search_store): one process writes it and follows the catalogue, applying the
plugins noted since the generation it shows (migration 0012); every process memory-maps
it. A restart opens the files and catches up from the notes. Until the first build is
done, browse searches in SQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import tantivy
from fastapi import FastAPI
from sqlalchemy import Select, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.catalog.cache import GENERATION_SQL, catalog_cache
from marketplace.catalog.schemas import BrowseSort
from marketplace.catalog.search_store import (
    META_BUILD,
    META_GENERATION,
    META_ID,
    PLUGIN_ID,
    IndexStore,
    View,
    index_directory,
    meta_document,
    new_build,
)
from marketplace.catalog.service import BrowseQuery, count_statement
from marketplace.kit.pagination import Page
from marketplace.models import Plugin, ReviewStatus

log = logging.getLogger(__name__)

# Behind by more than this (migration 0012 keeps 100,000 generations of notes): rebuild.
KEPT_GENERATIONS = 90_000
# Catalogues this small are indexed inside the first search's request (a few ms); larger
# ones in the background while searches keep using SQL.
INLINE_BUILD_LIMIT = 2_000
BUILD_BATCH = 2_000
CHANGE_BATCH = 500
# The writer's arena: it grows as documents need and is flushed as a segment when full.
# One segment for up to about 1.5 million plugins: a sort by a string key reads each
# segment's top hits as text, so name and rating page 30 at 1,000,000 plugins cost 40 ms
# in three segments (a 1 GB arena) and 21 ms in one. The arena is taken only while a
# build runs (about 2 GB at 1,000,000, in the writer alone); commits of a few changed
# plugins use little of it.
HEAP_BYTES = 3 * 1024 * 1024 * 1024
# The writer looks this often for a reader waiting for a generation (one small file),
# so a reader in another process waits about this long plus a commit.
FOLLOW_SECONDS = 0.01
FOLLOW_RETRY_SECONDS = 1.0
# A reader behind its request's generation reloads every READER_POLL_SECONDS, and after
# READER_WAIT_SECONDS answers in SQL and claims the writer, if its process has gone.
READER_POLL_SECONDS = 0.002
READER_WAIT_SECONDS = 0.5
CLAIM_RETRY_SECONDS = 1.0
TRIGRAM = 3

GRAMS = "grams"
SHORT = "short"
U64 = (1 << 64) - 1
EPOCH = datetime(1970, 1, 1)
SEPARATOR = "\x00"  # before the id in every sort key; lower than any character of a name

# Every whitespace character Python knows, each to its own character of plane 16's private
# use area: a trigram never holds whitespace, and the mapping stays one to one.
_WHITESPACE = [chr(c) for c in range(0x110000) if chr(c).isspace()]
_UNSPLIT = str.maketrans({char: chr(0x100000 + i) for i, char in enumerate(_WHITESPACE)})

_DESCENDING = {
    BrowseSort.POPULAR: True,
    BrowseSort.NEWEST: True,
    BrowseSort.UPDATED: True,
    BrowseSort.RATING: True,
    BrowseSort.NAME: False,
}


@dataclass(frozen=True)
class Found:
    total: int
    ids: list[str]


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field(PLUGIN_ID, tokenizer_name="raw", index_option="basic", stored=True)
    builder.add_text_field(GRAMS, tokenizer_name="mkt_grams", index_option="position")
    builder.add_text_field(SHORT, tokenizer_name="mkt_short", index_option="basic")
    builder.add_text_field("category", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("type", tokenizer_name="raw", index_option="basic")
    builder.add_boolean_field("is_free", indexed=True)
    builder.add_unsigned_field(META_GENERATION, stored=True)  # the meta document's
    builder.add_text_field(META_BUILD, tokenizer_name="raw", index_option="basic", stored=True)
    for sort in BrowseSort:
        builder.add_text_field(_key_field(sort), fast=True, tokenizer_name="raw")
    for sort in RANKED:
        builder.add_unsigned_field(_rank_field(sort), fast=True, indexed=True)
    return builder.build()


def _key_field(sort: BrowseSort) -> str:
    return f"key_{sort.value}"


def _rank_field(sort: BrowseSort) -> str:
    return f"rank_{sort.value}"


def _open_index(schema: tantivy.Schema, path: Path) -> tantivy.Index:
    """The index in `path`, made empty there if there is none."""
    index = tantivy.Index(schema, path=str(path), reuse=True)
    index.register_tokenizer(
        "mkt_grams", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()
    )
    index.register_tokenizer(
        "mkt_short", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.ngram(1, 2, False)).build()
    )
    return index


def searchable(text_: str) -> str:
    """The form both the index and q are compared in (Unicode lower case)."""
    return text_.lower()


def trigrams(value: str) -> list[str]:
    mapped = value.translate(_UNSPLIT)
    return [mapped[i : i + TRIGRAM] for i in range(len(mapped) - TRIGRAM + 1)]


def _phrase(q: str) -> list[str | tuple[int, str]]:
    """Trigrams that cover q, at their offsets: every third one and the last. Consecutive
    positions in the index then mean the whole of q is there, with fewer posting lists to
    intersect than all of q's trigrams."""
    grams = trigrams(q)
    offsets = sorted({*range(0, len(grams), TRIGRAM), len(grams) - 1})
    return [(offset, grams[offset]) for offset in offsets]


def _utc(value: datetime) -> datetime:
    if value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _timestamp(value: datetime) -> str:
    return _utc(value).strftime("%Y%m%d%H%M%S%f")


def _micros(value: datetime) -> int:
    return (_utc(value) - EPOCH) // timedelta(microseconds=1)


def _rating(rating_sum: int, rating_count: int) -> str:
    # The SQL average as a double; a non-negative double's big-endian bytes sort as it does.
    average = rating_sum * 1.0 / rating_count if rating_count > 0 else 0.0
    return struct.pack(">d", average).hex()


def _sort_keys(row: Any) -> dict[BrowseSort, str]:
    tail = SEPARATOR + row.id
    return {
        BrowseSort.POPULAR: f"{row.download_count:020d}{tail}",
        BrowseSort.NEWEST: _timestamp(row.created_at) + tail,
        BrowseSort.UPDATED: _timestamp(row.updated_at) + tail,
        BrowseSort.NAME: row.lower_name + tail,
        BrowseSort.RATING: f"{_rating(row.rating_sum, row.rating_count)}"
        f"{row.rating_count:020d}{tail}",
    }


# Sorts whose order is a rank number first (see _ranks): their values rarely tie. Names
# share long prefixes and ratings cluster (many plugins with one 5-star rating), so those
# two are ordered by their string keys at once.
RANKED = (BrowseSort.POPULAR, BrowseSort.NEWEST, BrowseSort.UPDATED)
_ID_CHAR_BITS = 5


def _id_code(char: str) -> tuple[int, bool]:
    """A 5-bit code in the characters' order, exact for the lower-case hex digits of ids
    (so 6 characters carry 24 bits of a uuid4's randomness); any other character gets the
    code of the gap it falls in and is not exact."""
    if "0" <= char <= "9":
        return 1 + ord(char) - ord("0"), True
    if "a" <= char <= "f":
        return 12 + ord(char) - ord("a"), True
    if char < "0":
        return 0, False
    return (11, False) if char < "a" else (18, False)


def _id_bits(plugin_id: str, bits: int) -> int:
    """The id's first characters as a number of `bits` bits, never out of the ids' order;
    after an inexact character nothing more is added (it could order two ids wrongly)."""
    value = 0
    used = 0
    for char in plugin_id[: bits // _ID_CHAR_BITS]:
        code, exact = _id_code(char)
        value = value << _ID_CHAR_BITS | code
        used += _ID_CHAR_BITS
        if not exact:
            break
    return value << (bits - used)


def _ranks(row: Any) -> dict[BrowseSort, int]:
    """One number per ranked sort, in the order of `_sort_keys` (ties allowed, inversions
    never). A part of the number is followed by the next part of the sort only while it is
    exact: after a clamped part, two plugins it ties could be ordered wrongly by the next."""
    ranks: dict[BrowseSort, int] = {}
    count = row.download_count
    if count >= (1 << 32) - 1:
        ranks[BrowseSort.POPULAR] = U64
    else:
        ranks[BrowseSort.POPULAR] = max(count, 0) << 32 | _id_bits(row.id, 32)
    for sort, stamp in ((BrowseSort.NEWEST, row.created_at), (BrowseSort.UPDATED, row.updated_at)):
        micros = _micros(stamp)  # below 2^52 until the year 2112
        if micros <= 0:
            ranks[sort] = 0
        elif micros >= (1 << 52) - 1:
            ranks[sort] = U64
        else:
            ranks[sort] = micros << 12 | _id_bits(row.id, 12)
    return ranks


def document(row: Any) -> tantivy.Document:
    parts = [row.plugin_key, row.name, row.name_zh, row.description, row.description_zh]
    tags = row.tags if isinstance(row.tags, list) else []
    body = searchable("\n".join([*parts, *(str(tag) for tag in tags)]))
    doc = tantivy.Document()
    doc.add_text(PLUGIN_ID, row.id)
    doc.add_text(GRAMS, " ".join(trigrams(body)))
    doc.add_text(SHORT, body)
    doc.add_text("category", _value(row.category))
    doc.add_text("type", _value(row.type))
    doc.add_boolean("is_free", bool(row.is_free))
    for sort, key in _sort_keys(row).items():
        doc.add_text(_key_field(sort), key)
    for sort, rank in _ranks(row).items():
        doc.add_unsigned(_rank_field(sort), rank)
    return doc


def rows_statement() -> Select[Any]:
    """What a document is made of; lower(name) by the database, as its ORDER BY does."""
    p = Plugin
    columns: list[Any] = [
        p.id, p.plugin_key, p.name, p.name_zh, p.description, p.description_zh, p.tags,
        p.category, p.type, p.is_free, p.download_count, p.rating_sum, p.rating_count,
        p.created_at, p.updated_at, func.lower(p.name).label("lower_name"),
        (p.review_status == ReviewStatus.APPROVED).label("approved"), p.enabled,
    ]  # fmt: skip
    return select(*columns)


def _value(value: Any) -> str:
    return str(getattr(value, "value", value))


def _listed(row: Any) -> bool:
    return bool(row.approved) and bool(row.enabled)


class SearchIndex:
    """The index of this host, as this process sees it. `find` answers from it, or returns
    None (search in SQL) while it is not built, cannot show the request's generation, or
    fails.

    One process holds the writer (search_store): it builds the index, brings it up to the
    generation of each of its requests, and commits for readers in other processes that
    wait for a generation (the `wanted` file). A reader behind its request's generation
    waits briefly for that commit; if the writer has gone, a reader claims the writer."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        directory: Path,
        on_generation: Callable[[int], None] | None = None,
        current_generation: Callable[[], Awaitable[int | None]] | None = None,
    ) -> None:
        self._sessions = sessions
        self._on_generation = on_generation
        self._current_generation = current_generation or self._generation_by_session
        self._schema = _schema()
        self._store = IndexStore(directory, lambda path: _open_index(self._schema, path))
        self._view: View | None = None
        self._build_id: str | None = None  # the build `_view` comes from
        self._trusted_build: str | None = None  # a reader's: checked against the database
        self.generation = 0  # the catalogue generation the index shows (0: not built)
        self._lock = asyncio.Lock()
        self._building = False
        self._build_task: asyncio.Task[None] | None = None
        self._follower: asyncio.Task[None] | None = None
        self._preparing: asyncio.Task[None] | None = None
        self._started = False  # the writer's first look at what it opened
        self._claim_after = 0.0  # a reader's next attempt to claim the writer
        self._wait_after = 0.0  # a reader that waited in vain answers in SQL until then
        self._closed = False
        self.failures = 0

    @property
    def ready(self) -> bool:
        return self._view is not None and self._view.generation is not None

    @property
    def writing(self) -> bool:
        """Whether this process holds the writer."""
        return self._store.writer is not None

    async def find(
        self, session: AsyncSession, generation: int, query: Any, page: Page
    ) -> Found | None:
        """The total and the page's ids of a browse with q, or None when the index cannot
        answer. `generation` is the one the request read: the index is brought up to it
        first (or found there), so it never answers from an older catalogue."""
        if self._closed:
            return None
        try:
            if not self.writing and self._may_claim():
                self._claim()
            if self.writing:
                view = await self._writer_view(session, generation)
            else:
                view = await self._reader_view(session, generation)
            if view is None:
                return None
            return _search(self._schema, view.searcher, query, page)
        except Exception:  # a broken or unwritable index: the database answers instead
            self.failures += 1
            log.exception("search index failed; searching in SQL")
            return None

    def prepare(self) -> None:
        """At start, in the background: open the files, take the writer if it is free and
        bring the index up to the database (or start building it), so that the first
        searches find it ready instead of doing that work."""
        if not self._closed:
            self._preparing = asyncio.create_task(self._prepare())

    async def _prepare(self) -> None:
        try:
            async with self._sessions() as session:
                generation = await _read_generation(session)
                await self.find(session, generation, _PREPARING, Page(1, 1))
        except Exception:  # the first search tries again
            log.exception("search index preparation failed")

    def close(self) -> None:
        """Stop following and give the writer up (another process may claim it)."""
        self._closed = True
        for task in (self._preparing, self._follower, self._build_task):
            if task is not None:
                task.cancel()
        self._preparing = self._follower = self._build_task = None
        self._store.release()

    # The writer.

    def _may_claim(self) -> bool:
        return time.monotonic() >= self._claim_after

    def _claim(self) -> None:
        self._claim_after = time.monotonic() + CLAIM_RETRY_SECONDS
        if self.writing or self._closed:
            return
        if self._store.claim_writer(HEAP_BYTES):
            self._started = False
            self._follower = asyncio.create_task(self._follow())

    async def _writer_view(self, session: AsyncSession, generation: int) -> View | None:
        if not self._started:
            async with self._lock:
                if not self._started:
                    await self._start(session)
        if self._building:
            return None
        if not self.ready or generation - self.generation > KEPT_GENERATIONS:
            # Not built, or further behind than the notes kept: build from scratch.
            await self._ensure_build(session)
            if not self.ready or self._building:
                return None
        if self.generation < generation:
            async with self._lock:
                if self.generation < generation and not self._building:
                    await self._catch_up(session, generation)
        return self._view if not self._building else None

    async def _start(self, session: AsyncSession) -> None:
        """The writer's first look (under the lock): what the files show. Ahead of the
        database (an older copy restored, or another database at the same URL): emptied at
        once, in one commit, so that readers stop answering from them; a build follows."""
        self._store.clear_wanted()
        self._show(self._store.view())
        if self.ready:
            current = await _read_generation(session)
            if self.generation > current:
                log.warning(
                    "search index at generation %d is ahead of the database (%d): rebuilding",
                    self.generation, current,
                )  # fmt: skip
                writer = self._writer()
                writer.delete_all_documents()
                await _commit(writer)
                self._show(self._store.view())
        self._started = True

    async def _ensure_build(self, session: AsyncSession) -> None:
        if self._building:
            return
        self._building = True  # before any await: one build at a time
        self._build_task = asyncio.create_task(self._build())
        everything = BrowseQuery(
            q=None, category=None, type=None, is_free=None, sort=BrowseSort.POPULAR
        )
        listed = int(await session.scalar(count_statement(everything)) or 0)
        if listed <= INLINE_BUILD_LIMIT:
            await asyncio.shield(self._build_task)

    async def _build(self) -> None:
        writer = self._writer()
        try:
            async with self._lock, self._sessions() as session:
                if session.get_bind().dialect.name == "postgresql":
                    # One snapshot for the generation and every row read after it.
                    await session.connection(
                        execution_options={"isolation_level": "REPEATABLE READ"}
                    )
                generation = await _read_generation(session)
                try:
                    writer.delete_all_documents()
                    result = await session.stream(
                        rows_statement().execution_options(yield_per=BUILD_BATCH)
                    )
                    async for rows in result.partitions():
                        _add(writer, rows)
                        await asyncio.sleep(0)  # let requests in between batches
                    writer.add_document(meta_document(generation, new_build()))
                except BaseException:
                    writer.rollback()
                    raise
                await _commit(writer)
                self._show(self._store.view())
        except Exception:  # the service keeps searching in SQL; the next search retries
            self.failures += 1
            log.exception("search index build failed")
        finally:
            self._building = False

    async def _catch_up(self, session: AsyncSession, generation: int) -> None:
        """Apply the plugins noted up to `generation` (migration 0012) in one commit."""
        writer = self._writer()
        changed = list(
            await session.scalars(
                text(
                    "SELECT DISTINCT plugin_id FROM plugin_search_changes "
                    "WHERE generation > :done AND generation <= :target"
                ),
                {"done": self.generation, "target": generation},
            )
        )
        if not changed:
            # Nothing listed changed (a category, a rating's comment): the documents already
            # show `generation`. No commit; readers find the same by asking the notes.
            self._show_through(generation)
            return
        try:
            for start in range(0, len(changed), CHANGE_BATCH):
                ids = changed[start : start + CHANGE_BATCH]
                rows = (await session.execute(rows_statement().where(Plugin.id.in_(ids)))).all()
                # Deletes apply to documents added before them: delete first, then add anew.
                for plugin_id in ids:
                    writer.delete_documents_by_term(PLUGIN_ID, plugin_id)
                _add(writer, rows)
            writer.delete_documents_by_term(PLUGIN_ID, META_ID)
            writer.add_document(meta_document(generation, self._build_id or new_build()))
        except BaseException:
            writer.rollback()  # nothing half applied stays queued for the next commit
            raise
        await _commit(writer)
        self._show(self._store.view())

    async def _follow(self) -> None:
        """The writer's loop: when a reader in another process waits for a generation the
        index does not show yet, bring the index up to the database's. Only then: a commit
        costs milliseconds, and without readers waiting the writer's own searches catch up
        when they need to, many changes in one commit. The wanted number only wakes it:
        what it commits is the database's own generation."""
        while True:
            await asyncio.sleep(FOLLOW_SECONDS)
            try:
                wanted = self._store.wanted()
                if wanted is None or wanted <= self.generation or not self.ready:
                    continue
                if self._building:
                    continue
                current = await self._current_generation()
                if current is None:
                    current = await self._generation_by_session()
                if current is None or current <= self.generation:
                    continue
                if current - self.generation > KEPT_GENERATIONS:
                    continue  # (re)builds start from a search, as the first one does
                async with self._sessions() as session:
                    async with self._lock:
                        if current > self.generation and not self._building:
                            await self._catch_up(session, current)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("search index follower failed; retrying")
                await asyncio.sleep(FOLLOW_RETRY_SECONDS)

    def _writer(self) -> tantivy.IndexWriter:
        writer = self._store.writer
        assert writer is not None  # noqa: S101 - only the writer's paths call this
        return writer

    async def _generation_by_session(self) -> int | None:
        async with self._sessions() as session:
            return await _read_generation(session)

    # A reader.

    async def _reader_view(self, session: AsyncSession, generation: int) -> View | None:
        view = self._view
        if view is not None and self.generation >= generation and self._trusted():
            return view
        self._show(self._store.view())
        if not self.ready or not await self._trust():
            return None  # not built yet, being rebuilt, or not this database's: SQL
        if self.generation >= generation:
            return self._view
        if generation - self.generation > KEPT_GENERATIONS:
            return None  # the notes in between may be gone: the writer rebuilds
        if not await _noted_between(session, self.generation, generation):
            self._show_through(generation)
            return self._view
        # Plugins changed since: wait for the writer to commit them (unless a wait just
        # now came to nothing: then answer in SQL for a while).
        if time.monotonic() < self._wait_after or not self._store.want(generation):
            return None
        deadline = time.monotonic() + READER_WAIT_SECONDS
        while time.monotonic() < deadline:
            await asyncio.sleep(READER_POLL_SECONDS)
            self._show(self._store.view())
            if not self.ready or not self._trusted():
                return None
            if self.generation >= generation:
                return self._view
        # The writer is not following: its process may have gone. Claim the writer at the
        # next search (if it is free) and answer in SQL meanwhile.
        self._claim_after = 0.0
        self._wait_after = time.monotonic() + CLAIM_RETRY_SECONDS
        return None

    def _trusted(self) -> bool:
        return self._build_id is not None and self._build_id == self._trusted_build

    async def _trust(self) -> bool:
        """Whether this build's files can be this database's: a reader asks once per
        build whether they show a generation the database has reached (files ahead of it
        are an older copy's, which the writer empties and rebuilds)."""
        if self._trusted():
            return True
        current = await self._generation_by_session()
        if current is None or self._view is None or self._view.generation is None:
            return False
        if self._view.generation > current:
            return False
        self._trusted_build = self._build_id
        return True

    def _show(self, view: View) -> None:
        """Search `view` from now on, at its generation; within one build, unless this
        process already knows the documents hold for a later one (`_show_through`)."""
        self._view = view
        if view.generation is None:
            self._build_id = None
            self._moved_to(0)
        elif view.build != self._build_id:
            self._build_id = view.build  # another build: its numbers, lower ones too
            self._moved_to(view.generation)
        elif view.generation > self.generation:
            self._moved_to(view.generation)

    def _show_through(self, generation: int) -> None:
        """The documents shown hold for `generation` too: no plugin was noted since."""
        if generation > self.generation:
            self._moved_to(generation)

    def _moved_to(self, generation: int) -> None:
        if generation != self.generation:
            self.generation = generation
            if self._on_generation is not None:
                self._on_generation(generation)


# What `prepare` asks: any search brings the index up to the database.
_PREPARING = BrowseQuery(q="a", category=None, type=None, is_free=None, sort=BrowseSort.POPULAR)


async def _commit(writer: tantivy.IndexWriter) -> None:
    """writer.commit in a thread, waited for even when the caller is cancelled: Tantivy
    holds the writer until it returns, and the lock must not be released before."""
    done = asyncio.ensure_future(asyncio.to_thread(writer.commit))
    try:
        await asyncio.shield(done)
    except asyncio.CancelledError:
        await asyncio.wait([done])
        raise
    except Exception:
        with contextlib.suppress(Exception):
            writer.rollback()
        raise


def _add(writer: tantivy.IndexWriter, rows: Iterable[Any]) -> None:
    for row in rows:
        if _listed(row):
            writer.add_document(document(row))


async def _noted_between(session: AsyncSession, done: int, target: int) -> bool:
    """Whether a plugin was noted as changed after generation `done`, up to `target`."""
    found = await session.scalar(
        text(
            "SELECT 1 FROM plugin_search_changes "
            "WHERE generation > :done AND generation <= :target LIMIT 1"
        ),
        {"done": done, "target": target},
    )
    return found is not None


async def _read_generation(session: AsyncSession) -> int:
    row = (await session.execute(text(GENERATION_SQL))).first()
    return 0 if row is None else int(row[0])


def _matching(schema: tantivy.Schema, query: Any) -> tantivy.Query:
    """q and the filters of a browse."""
    q = searchable(query.q)
    clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
    if len(q) == TRIGRAM:
        clauses.append(
            (tantivy.Occur.Must, tantivy.Query.term_query(schema, GRAMS, trigrams(q)[0]))
        )
    elif len(q) > TRIGRAM:
        clauses.append((tantivy.Occur.Must, tantivy.Query.phrase_query(schema, GRAMS, _phrase(q))))
    else:
        clauses.append((tantivy.Occur.Must, tantivy.Query.term_query(schema, SHORT, q)))
    if query.category is not None:
        clauses.append(
            (tantivy.Occur.Must, tantivy.Query.term_query(schema, "category", query.category))
        )
    if query.type is not None:
        clauses.append(
            (tantivy.Occur.Must, tantivy.Query.term_query(schema, "type", query.type.value))
        )
    if query.is_free is not None:
        clauses.append(
            (tantivy.Occur.Must, tantivy.Query.term_query(schema, "is_free", query.is_free))
        )
    return tantivy.Query.boolean_query(clauses)


def _order(sort: BrowseSort) -> tantivy.Order:
    return tantivy.Order.Desc if _DESCENDING[sort] else tantivy.Order.Asc


def _key_ids(result: Any) -> list[str]:
    """The ids of hits ordered by a string key (each key ends with its plugin's id)."""
    return [str(key).rsplit(SEPARATOR, 1)[1] for key, _address in result.hits]


def _total(result: Any) -> int:
    # Searched with count=True, so the count is there (the type stubs leave it out).
    return int(getattr(result, "count", 0) or 0)


def _by_key(
    searcher: tantivy.Searcher,
    query: tantivy.Query,
    sort: BrowseSort,
    skip: int,
    take: int,
    *,
    from_end: bool = False,
) -> list[str]:
    """Ids in the exact order (the string keys), `take` after the first `skip`; from_end
    counts `skip` from the last hit instead and returns them in order. Tantivy reads the
    key of every hit up to the last one asked for as text, so a slice near the end is
    cheaper read from there."""
    order = _order(sort)
    if from_end:
        order = tantivy.Order.Asc if order == tantivy.Order.Desc else tantivy.Order.Desc
    result = searcher.search(
        query, limit=take, offset=skip, count=False, order_by_field=_key_field(sort), order=order
    )
    ids = _key_ids(result)
    return ids[::-1] if from_end else ids


def _with(query: tantivy.Query, condition: tantivy.Query) -> tantivy.Query:
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, query), (tantivy.Occur.Must, condition)]
    )


def _ahead_of(schema: tantivy.Schema, sort: BrowseSort, rank: int) -> tantivy.Query:
    """The plugins whose rank puts them before `rank`'s run."""
    unsigned = tantivy.FieldType.Unsigned
    if _DESCENDING[sort]:
        return tantivy.Query.range_query(
            schema, _rank_field(sort), unsigned, lower_bound=rank, include_lower=False
        )
    return tantivy.Query.range_query(
        schema, _rank_field(sort), unsigned, upper_bound=rank, include_upper=False
    )


def _count(searcher: tantivy.Searcher, query: tantivy.Query) -> int:
    # limit=1: tantivy refuses a top-0 collector.
    return _total(searcher.search(query, limit=1, count=True))


def _by_key_search(
    searcher: tantivy.Searcher, matching: tantivy.Query, sort: BrowseSort, page: Page
) -> Found:
    result = searcher.search(
        matching,
        limit=page.size,
        offset=page.offset,
        count=True,
        order_by_field=_key_field(sort),
        order=_order(sort),
    )
    return Found(_total(result), _key_ids(result))


def _search(schema: tantivy.Schema, searcher: tantivy.Searcher, query: Any, page: Page) -> Found:
    """The total and the page. Ranked sorts are ordered by the rank numbers: they put the
    plugins in runs of equal numbers whose places are the exact order's; only the order
    inside a run of several can differ from it, and a run can go on before or after the
    page. Those runs are ordered by their string keys: a run cut by the page's start ends
    on the page (its last members, read from its end), one cut by the page's end starts on
    it, and for one cut at both ends (a page inside a large tie) the plugins ranked before
    it are counted. Name and rating are ordered by their string keys alone."""
    matching = _matching(schema, query)
    sort = query.sort
    if sort not in RANKED:
        return _by_key_search(searcher, matching, sort, page)
    start = max(page.offset - 1, 0)
    lead = page.offset - start  # the hit before the page, when there is one
    result = searcher.search(
        matching,
        limit=lead + page.size + 1,  # and the hit after it
        offset=start,
        count=True,
        order_by_field=_rank_field(sort),
        order=_order(sort),
    )
    total = _total(result)
    hits: list[tuple[int, Any]] = [(int(rank), address) for rank, address in result.hits]
    shown = hits[lead : lead + page.size]
    before = hits[0][0] if lead and hits else None
    after = hits[lead + page.size][0] if len(hits) > lead + page.size else None
    runs: list[tuple[int, list[Any]]] = []
    for rank, address in shown:
        if runs and runs[-1][0] == rank:
            runs[-1][1].append(address)
        else:
            runs.append((rank, [address]))
    ids: list[str] = []
    for number, (rank, addresses) in enumerate(runs):
        cut_before = number == 0 and before == rank
        cut_after = number == len(runs) - 1 and after == rank
        if len(addresses) == 1 and not cut_before and not cut_after:
            ids.append(str(searcher.doc(addresses[0]).get_first(PLUGIN_ID)))
            continue
        tied = _with(matching, tantivy.Query.term_query(schema, _rank_field(sort), rank))
        if cut_before and cut_after:  # the page is inside the run
            ahead = _count(searcher, _with(matching, _ahead_of(schema, sort, rank)))
            skip = page.offset - ahead
            after_page = _count(searcher, tied) - skip - page.size
            if after_page < skip:
                page_ids = _by_key(searcher, tied, sort, after_page, page.size, from_end=True)
            else:
                page_ids = _by_key(searcher, tied, sort, skip, page.size)
            return Found(total, page_ids)
        # Cut by the page's start, the run ends on the page: its last members. Else it
        # starts on the page: its first ones.
        ids.extend(_by_key(searcher, tied, sort, 0, len(addresses), from_end=cut_before))
    return Found(total, ids)


def search_index(app: FastAPI) -> SearchIndex | None:
    """This process's view of the host's index, made on first use; None when the setting
    turns it off."""
    settings = app.state.settings
    if not settings.search_index:
        return None
    index: SearchIndex | None = getattr(app.state, "search_index", None)
    if index is None:
        reader = catalog_cache(app).reader

        async def current_generation() -> int | None:
            read = None if reader is None else await reader.read()
            return None if read is None else read.generation

        root = settings.search_index_dir or settings.data_dir / "search-index"
        index = SearchIndex(
            app.state.sessionmaker,
            index_directory(root, settings.database_url),
            app.state.metrics.search_index_generation.set,
            current_generation if reader is not None else None,
        )
        app.state.search_index = index
    return index


def close_search_index(app: FastAPI) -> None:
    index: SearchIndex | None = getattr(app.state, "search_index", None)
    if index is not None:
        index.close()
