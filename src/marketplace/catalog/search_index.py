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

Only listed plugins are in the index. Every process builds its own (shared-nothing, as the
response cache is) and brings it up to the generation its request read by applying the
plugins noted since (migration 0012); until the first build is done, browse searches in SQL.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import tantivy
from fastapi import FastAPI
from sqlalchemy import Select, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.catalog.cache import GENERATION_SQL
from marketplace.catalog.schemas import BrowseSort
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
# One segment for up to about 1.5 million plugins (see finish_build); the arena takes what
# the documents need, not the whole budget (1,000,000 plugins: about 2 GB while building).
BUILD_HEAP_BYTES = 3 * 1024 * 1024 * 1024
UPDATE_HEAP_BYTES = 32 * 1024 * 1024
TRIGRAM = 3

GRAMS = "grams"
SHORT = "short"
PLUGIN_ID = "pid"
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
    for sort in BrowseSort:
        builder.add_text_field(_key_field(sort), fast=True, tokenizer_name="raw")
    for sort in RANKED:
        builder.add_unsigned_field(_rank_field(sort), fast=True, indexed=True)
    return builder.build()


def _key_field(sort: BrowseSort) -> str:
    return f"key_{sort.value}"


def _rank_field(sort: BrowseSort) -> str:
    return f"rank_{sort.value}"


def _new_index(schema: tantivy.Schema) -> tantivy.Index:
    index = tantivy.Index(schema)
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


class _Built:
    """One index with its writer and current searcher."""

    def __init__(self, schema: tantivy.Schema) -> None:
        self.schema = schema
        self.index = _new_index(schema)
        self.writer = self.index.writer(BUILD_HEAP_BYTES, 1)
        self.searcher: tantivy.Searcher | None = None

    def add(self, rows: Iterable[Any]) -> None:
        for row in rows:
            if _listed(row):
                self.writer.add_document(document(row))

    def replace(self, plugin_ids: Sequence[str], rows: Iterable[Any]) -> None:
        # Deletes apply to documents added before them: delete first, then add anew.
        for plugin_id in plugin_ids:
            self.writer.delete_documents_by_term(PLUGIN_ID, plugin_id)
        self.add(rows)

    def commit(self) -> None:
        self.writer.commit()
        self.index.reload()
        self.searcher = self.index.searcher()

    def finish_build(self) -> None:
        self.commit()
        # The commit starts merging the segments the build wrote (one per heap's worth); a
        # search reads every segment, and a sort by a string key turns each segment's top
        # hits into text (13 segments made page 30 of a 100,000 catalogue 54 ms, not 8).
        self.writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        # Later commits carry a few changed plugins: a smaller writer is enough.
        self.writer = self.index.writer(UPDATE_HEAP_BYTES, 1)


class SearchIndex:
    """This process's index. `find` answers from it, or returns None (search in SQL)."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        on_generation: Callable[[int], None] | None = None,
    ) -> None:
        self._sessions = sessions
        self._on_generation = on_generation
        self._schema = _schema()
        self._built: _Built | None = None
        self.generation = 0  # the catalogue generation the index shows
        self._lock = asyncio.Lock()
        self._build_task: asyncio.Task[None] | None = None
        self.failures = 0

    @property
    def ready(self) -> bool:
        return self._built is not None

    async def find(
        self, session: AsyncSession, generation: int, query: Any, page: Page
    ) -> Found | None:
        """The total and the page's ids of a browse with q, or None when the index cannot
        answer yet. `generation` is the one the request read: the index applies the plugins
        changed up to it first, so it never answers from an older catalogue."""
        behind = generation - self.generation > KEPT_GENERATIONS
        if self._built is None or behind:
            # Not built yet, or further behind than the notes kept: build from scratch.
            await self._ensure_build(session, restart=behind)
            if self._built is None:
                return None
        if self.generation < generation:
            async with self._lock:
                if self.generation < generation:
                    await self._catch_up(session, generation)
        built = self._built
        assert built is not None  # noqa: S101 - set just above
        return _search(built, query, page)

    async def _ensure_build(self, session: AsyncSession, *, restart: bool = False) -> None:
        if restart:
            self._built = None
            self._moved_to(0)
        if self._build_task is not None and not self._build_task.done():
            return
        everything = BrowseQuery(
            q=None, category=None, type=None, is_free=None, sort=BrowseSort.POPULAR
        )
        listed = int(await session.scalar(count_statement(everything)) or 0)
        self._build_task = asyncio.create_task(self._build())
        if listed <= INLINE_BUILD_LIMIT:
            await asyncio.shield(self._build_task)

    async def _build(self) -> None:
        try:
            async with self._sessions() as session:
                if session.get_bind().dialect.name == "postgresql":
                    # One snapshot for the generation and every row read after it.
                    await session.connection(
                        execution_options={"isolation_level": "REPEATABLE READ"}
                    )
                row = (await session.execute(text(GENERATION_SQL))).first()
                generation = 0 if row is None else int(row[0])
                built = _Built(self._schema)
                result = await session.stream(
                    rows_statement().execution_options(yield_per=BUILD_BATCH)
                )
                async for rows in result.partitions():
                    built.add(rows)
                    await asyncio.sleep(0)  # let requests in between batches
                await asyncio.to_thread(built.finish_build)
            async with self._lock:
                self._built = built
                self._moved_to(generation)
        except Exception:  # the service keeps searching in SQL; the next search retries
            self.failures += 1
            log.exception("search index build failed")

    async def _catch_up(self, session: AsyncSession, generation: int) -> None:
        built = self._built
        assert built is not None  # noqa: S101 - checked by the caller
        changed = list(
            await session.scalars(
                text(
                    "SELECT DISTINCT plugin_id FROM plugin_search_changes "
                    "WHERE generation > :done AND generation <= :target"
                ),
                {"done": self.generation, "target": generation},
            )
        )
        for start in range(0, len(changed), CHANGE_BATCH):
            ids = changed[start : start + CHANGE_BATCH]
            rows = (await session.execute(rows_statement().where(Plugin.id.in_(ids)))).all()
            built.replace(ids, rows)
        if changed:
            built.commit()
        self._moved_to(generation)

    def _moved_to(self, generation: int) -> None:
        self.generation = generation
        if self._on_generation is not None:
            self._on_generation(generation)


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


def _search(built: _Built, query: Any, page: Page) -> Found:
    """The total and the page. Ranked sorts are ordered by the rank numbers: they put the
    plugins in runs of equal numbers whose places are the exact order's; only the order
    inside a run of several can differ from it, and a run can go on before or after the
    page. Those runs are ordered by their string keys: a run cut by the page's start ends
    on the page (its last members, read from its end), one cut by the page's end starts on
    it, and for one cut at both ends (a page inside a large tie) the plugins ranked before
    it are counted. Name and rating are ordered by their string keys alone."""
    searcher = built.searcher
    assert searcher is not None  # noqa: S101 - committed before it is used
    matching = _matching(built.schema, query)
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
        tied = _with(matching, tantivy.Query.term_query(built.schema, _rank_field(sort), rank))
        if cut_before and cut_after:  # the page is inside the run
            ahead = _count(searcher, _with(matching, _ahead_of(built.schema, sort, rank)))
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
    """This process's index, made on first use; None when the setting turns it off."""
    if not app.state.settings.search_index:
        return None
    index: SearchIndex | None = getattr(app.state, "search_index", None)
    if index is None:
        gauge = app.state.metrics.search_index_generation
        index = SearchIndex(app.state.sessionmaker, gauge.set)
        app.state.search_index = index
    return index
