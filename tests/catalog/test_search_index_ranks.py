"""Pages ordered by the index's rank numbers equal pages ordered by its exact string keys.

The ranks may tie plugins (same sort value and same first bytes of the id) and are clamped
or rounded at the edges; these catalogues are made of such ties, so every page takes the
path that orders a run of ties by its string keys: inside the page, cut by the page's start,
by its end, by both, and runs of every length. The string keys themselves are checked
against the SQL search in test_search_index.py.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from marketplace.catalog import search_index as index_module
from marketplace.catalog.schemas import BrowseSort
from marketplace.catalog.service import BrowseQuery
from marketplace.kit.pagination import Page

BASE = datetime(2026, 3, 1, 12, 0, 0)


@dataclass
class Row:
    id: str
    plugin_key: str
    name: str
    name_zh: str
    description: str
    description_zh: str
    tags: list[str]
    category: str
    type: str
    is_free: bool
    download_count: int
    rating_sum: int
    rating_count: int
    created_at: datetime
    updated_at: datetime
    lower_name: str
    approved: bool = True
    enabled: bool = True


def _catalogue(seed: int, size: int) -> list[Row]:
    """Plugins crowded onto few values: ids sharing their first bytes, equal counts,
    timestamps and averages, names with one prefix, values past the ranks' ranges."""
    chooser = random.Random(seed)  # noqa: S311 - reproducible test data, not a secret
    # Six equal characters tie the ids' rank bits; "zz" and "A0" are not lower-case hex.
    prefixes = ["000000", "000000", "00ffff", "ffffff", "7a7a7a", "zz", "A0A0A0"]
    counts = [0, 0, 0, 1, 5, (1 << 32) - 1, (1 << 32) + 7, 1 << 40]
    stamps = [
        BASE,
        BASE,
        BASE + timedelta(microseconds=1),
        datetime(1969, 12, 31, 23, 59, 59),
        datetime(1960, 1, 1),
        datetime(1970, 1, 1),
        datetime(2200, 1, 1),
        datetime(2300, 1, 1, tzinfo=UTC),
    ]
    ratings = [(0, 0), (0, 0), (5, 1), (10, 2), (15, 3), (7, 2), (1, 3), (2, 6), (0, 4)]
    ratings += [(1500, 300), (1500, 300), (1200, 300), (18, 2), (2700, 300), (5, 1), (10, 2)]
    rows = []
    for number in range(size):
        suffix = f"{chooser.randrange(16**4):04x}-{number:04x}-4000-8000-{number:012x}"
        plugin_id = chooser.choice(prefixes) + suffix
        name = chooser.choice(["plugin", "plugin", "plugins", "Plugin alpha", "pluginé"])
        downloads = chooser.choice(counts)
        rating_sum, rating_count = chooser.choice(ratings)
        created = chooser.choice(stamps)
        rows.append(
            Row(
                id=plugin_id,
                plugin_key=f"key-{number}",
                name=name,
                name_zh="插件",
                description="a plugin for tests",
                description_zh="",
                tags=["tag"],
                category=chooser.choice(["ai", "tools"]),
                type="mcp",
                is_free=chooser.random() < 0.5,
                download_count=downloads,
                rating_sum=rating_sum,
                rating_count=rating_count,
                created_at=created,
                updated_at=chooser.choice(stamps),
                lower_name=name.lower(),
            )
        )
    return rows


def _expected(rows: list[Row], sort: BrowseSort, category: str | None) -> list[str]:
    chosen = [row for row in rows if category is None or row.category == category]
    chosen.sort(
        key=lambda row: index_module._sort_keys(row)[sort].encode(),
        reverse=index_module._DESCENDING[sort],
    )
    return [row.id for row in chosen]


def _built(rows: list[Row], directory: Path) -> tuple[Any, Any]:
    """(schema, searcher) of an index of `rows`."""
    schema = index_module._schema()
    index = index_module._open_index(schema, directory)
    writer = index.writer(index_module.HEAP_BYTES, 1)
    index_module._add(writer, rows)
    writer.commit()
    index.reload()
    return schema, index.searcher()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rank_pages_equal_the_exact_order(seed: int, tmp_path: Path) -> None:
    rows = _catalogue(seed, 160)
    schema, searcher = _built(rows, tmp_path)
    for sort, category, size in itertools.product(BrowseSort, [None, "ai"], [1, 3, 7, 20]):
        expected = _expected(rows, sort, category)
        query = BrowseQuery(q="plugin", category=category, type=None, is_free=None, sort=sort)
        pages = -(-len(expected) // size) + 1  # and one past the end
        for number in range(1, pages + 1):
            page = Page(page=number, size=size)
            found = index_module._search(schema, searcher, query, page)
            where = f"{sort} category={category} size={size} page={number}"
            assert found.total == len(expected), where
            assert found.ids == expected[page.offset : page.offset + size], where


def test_ranks_never_order_against_the_string_keys() -> None:
    rows = _catalogue(7, 400)
    odd_ids = ["", "0", "00-", "0A", "g", "9:", "é", "-", "~", "ab", "0a0a0a0a", "a/b"]
    for number, (row, odd) in enumerate(zip(_catalogue(8, 48), odd_ids * 4, strict=True)):
        row.id = odd + "~" * (number % 3)  # ids of any shape, some of them equal
        rows.append(row)
    for sort in index_module.RANKED:
        pairs = sorted(
            (index_module._sort_keys(row)[sort].encode(), index_module._ranks(row)[sort])
            for row in rows
        )
        ranks = [rank for _key, rank in pairs]
        assert ranks == sorted(ranks), sort
        assert all(0 <= rank < 1 << 64 for rank in ranks)


def test_a_page_inside_one_large_tie_is_ordered_by_the_string_keys(tmp_path: Path) -> None:
    # Forty plugins equal in every rank (same id prefix, counts, stamps, names, ratings).
    rows = [
        Row(
            id=f"abcdefgh-{number:04d}",
            plugin_key=f"same-{number}",
            name="same",
            name_zh="",
            description="tie",
            description_zh="",
            tags=[],
            category="ai",
            type="mcp",
            is_free=True,
            download_count=3,
            rating_sum=4,
            rating_count=1,
            created_at=BASE,
            updated_at=BASE,
            lower_name="same",
        )
        for number in chooser_order(40)
    ]
    schema, searcher = _built(rows, tmp_path)
    for sort in BrowseSort:
        expected = sorted((row.id for row in rows), reverse=index_module._DESCENDING[sort])
        query = BrowseQuery(q="tie", category=None, type=None, is_free=None, sort=sort)
        ids = []
        for number in range(1, 6):
            found = index_module._search(schema, searcher, query, Page(page=number, size=9))
            assert found.total == 40
            ids.extend(found.ids)
        assert ids == expected, sort


def chooser_order(count: int) -> list[int]:
    numbers = list(range(count))
    random.Random(5).shuffle(numbers)  # noqa: S311 - reproducible test data
    return numbers
