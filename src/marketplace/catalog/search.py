"""Substring search over pluginKey, names, descriptions and tags, index-backed on both databases.

The indexes are made by migration 0002 (read its docstring). Each database then has two
plans: driven by the search index (visit every match, then sort) or driven by the sort
index (walk listed plugins in order, test each one). The planner cannot tell a query
matching 70% of the catalogue from one matching 0.1% (it guesses), so the caller chooses
with the exact totals it caches anyway (`walk_is_cheaper`).

Case-insensitivity follows each database's own folding, on the indexed text and the query
alike: SQLite's FTS5 trigram tokenizer folds Unicode letters for 3+ character queries,
while 1-2 character queries there fold ASCII only (SQLite's lower()); PostgreSQL folds by
its ctype.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    FromClause,
    Integer,
    String,
    Text,
    TextualSelect,
    and_,
    column,
    func,
    literal_column,
    select,
    table,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.selectable import Join

from marketplace.kit.sql import escape_like
from marketplace.models import Plugin

TRIGRAM = 3


def _fts_phrase(query: str) -> str:
    # One FTS5 string token: with the trigram tokenizer a phrase is a substring match.
    return '"' + query.replace('"', '""') + '"'


# A stable integer per plugin, the FTS tables' rowids (migration 0002), with the plugin's
# listing facets kept beside it by triggers (migration 0011).
SEARCH_ROWIDS = table(
    "plugin_search_rowids",
    column("rowid", Integer),
    column("plugin_id", String),
    column("listed", Boolean),
    column("category", String),
    column("type", String),
    column("is_free", Boolean),
)


def sqlite_matches(query: str) -> TextualSelect:
    """FTS rowids of the plugins whose text contains `query`."""
    if len(query) >= TRIGRAM:
        return (
            text(
                "SELECT rowid FROM plugin_search_trigrams WHERE plugin_search_trigrams MATCH :q_fts"
            )
            .bindparams(q_fts=_fts_phrase(query))
            .columns(rowid=Integer)
        )
    # The gram table holds every distinct 1- and 2-character substring as a hex token.
    return (
        text(
            "SELECT rowid FROM plugin_search_grams "
            "WHERE plugin_search_grams MATCH '\"' || hex(lower(:q_gram)) || '\"'"
        )
        .bindparams(q_gram=query)
        .columns(rowid=Integer)
    )


def _sqlite(query: str, walk: bool) -> ColumnElement[bool]:
    matches = sqlite_matches(query)
    if walk:
        # Each walked plugin's rowid, probed in the match set (materialised once).
        rowid = (
            select(SEARCH_ROWIDS.c.rowid)
            .where(SEARCH_ROWIDS.c.plugin_id == Plugin.id)
            .scalar_subquery()
        )
        return rowid.in_(matches)
    return Plugin.id.in_(
        select(SEARCH_ROWIDS.c.plugin_id).where(SEARCH_ROWIDS.c.rowid.in_(matches))
    )


class _OrderedJoin(Join):
    """An inner join that SQLite runs in the order written: its CROSS JOIN.

    Without statistics SQLite's planner may put `plugins` outside and probe the FTS table
    by rowid once per listed plugin: 5 s for one count at 100,000 plugins, instead of
    10 ms when the match set drives. Other databases get a plain JOIN.
    """

    inherit_cache = True


@compiles(_OrderedJoin, "sqlite")
def _sqlite_ordered_join(join: _OrderedJoin, compiler: SQLCompiler, **kw: Any) -> str:
    kw.pop("asfrom", None)
    assert join.onclause is not None  # noqa: S101 - built with one just below
    left = join.left._compiler_dispatch(compiler, asfrom=True, **kw)
    right = join.right._compiler_dispatch(compiler, asfrom=True, **kw)
    on = join.onclause._compiler_dispatch(compiler, **kw)
    return f"{left} CROSS JOIN {right} ON {on}"


def sqlite_matching_rowids(query: str) -> FromClause:
    """The rowid rows (with the listing facets) joined from the match set, in that order:
    the cheapest way to count matches on SQLite. It reads each match once, whatever the
    size of the catalogue, and never the wide plugins rows."""
    matches = sqlite_matches(query).subquery("matches")
    return _OrderedJoin(matches, SEARCH_ROWIDS, SEARCH_ROWIDS.c.rowid == matches.c.rowid)


def _has_trigram(query: str) -> bool:
    """pg_trgm extracts trigrams only from runs of 3+ word characters."""
    run = 0
    for char in query:
        run = run + 1 if char.isalnum() else 0
        if run >= TRIGRAM:
            return True
    return False


SEARCH_TEXT = literal_column("plugins.search_text", Text)


def _postgresql(query: str, walk: bool) -> ColumnElement[bool]:
    if walk:
        # strpos is the same substring test but no index serves it: the planner walks the
        # sort index and tests each listed row's stored text.
        return func.strpos(SEARCH_TEXT, func.lower(query)) > 0
    # search_text is lower-cased by the database; so is the pattern, by the same function.
    like = SEARCH_TEXT.like(func.lower(f"%{escape_like(query)}%"), escape="\\")
    if _has_trigram(query):
        return like
    # No trigram to look up (short, or punctuation between letters): the gram index narrows
    # to plugins holding every 1-2 character piece of the query (exact up to 2 characters),
    # and the LIKE on the stored text decides.
    grams = func.marketplace_search_grams(SEARCH_TEXT, type_=ARRAY(Text))
    wanted = func.marketplace_search_grams(func.lower(query), type_=ARRAY(Text))
    return and_(grams.op("@>")(wanted), like)


def search_condition(dialect: str, query: str, *, walk: bool = False) -> ColumnElement[bool]:
    """Plugins whose searchable text contains `query` (already stripped, non-empty).

    By default the search index drives the plan (cost grows with the matches); `walk=True`
    asks for a walk of the sort index testing each row instead (cost grows with the rows
    walked), the cheaper plan when matches are dense: see `walk_is_cheaper`.
    """
    if dialect == "postgresql":
        return _postgresql(query, walk)
    return _sqlite(query, walk)


def walk_is_cheaper(matches: int, candidates: int, rows_needed: int) -> bool:
    """Walking the sort order reads about rows_needed * candidates / matches rows until the
    page is full; driving by the search index reads every match (and sorts them)."""
    if matches == 0:
        return False
    return rows_needed * candidates < matches * matches
