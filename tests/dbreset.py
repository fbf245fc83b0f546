"""Put a test database back to its state right after the migrations, cheaply.

One query finds what a test changed: the tables holding rows, the seeded categories if they
differ from the seed, the catalogue generation if it moved. Only those are cleared (and the
seed rows put back), in one transaction. A test that wrote nothing costs one SELECT.

Measured against clearing every table after every test (tests/README.md has the numbers);
a transaction rolled back per test is not an option here: the service commits its own
transactions, race tests need separate connections, and SQLite's generation reader opens
its own connection.
"""

from __future__ import annotations

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Table,
    and_,
    delete,
    exists,
    func,
    insert,
    literal,
    not_,
    or_,
    select,
    text,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from marketplace.db import IMMEDIATE
from marketplace.models import (
    SEED_CATEGORIES,
    Base,
    CatalogGeneration,
    Category,
    LogEntry,
    LogHead,
    LogNode,
)

CATEGORIES: Table = Category.__table__  # type: ignore[assignment]
GENERATION: Table = CatalogGeneration.__table__  # type: ignore[assignment]
SEEDED = frozenset({CATEGORIES.name, GENERATION.name})
# The transparency log is kept from test to test, as it is kept for good in production
# (triggers refuse to delete its rows): tests find their entries by subject, never by
# assuming an empty log.
KEPT = frozenset({LogEntry.__tablename__, LogNode.__tablename__, LogHead.__tablename__})

# Child tables first: deleting in this order never trips a foreign key.
TABLES_CHILDREN_FIRST: list[Table] = list(reversed(Base.metadata.sorted_tables))

SEED_CATEGORY_ROWS = [
    {"key": key, "name": name, "name_zh": name_zh, "sort_order": (i + 1) * 10}
    for i, (key, name, name_zh) in enumerate(SEED_CATEGORIES)
]
SEED_GENERATION_ROW = {"id": 1, "generation": 1, "listing_generation": 1}


def _categories_changed() -> ColumnElement[bool]:
    c = CATEGORIES.c
    seed = or_(
        *(
            and_(
                c.key == row["key"],
                c.name == row["name"],
                c.name_zh == row["name_zh"],
                c.sort_order == row["sort_order"],
            )
            for row in SEED_CATEGORY_ROWS
        )
    )
    count = select(func.count()).select_from(CATEGORIES).scalar_subquery()
    return or_(count != len(SEED_CATEGORY_ROWS), exists().where(not_(seed)))


def _generation_changed() -> ColumnElement[bool]:
    g = GENERATION.c
    count = select(func.count()).select_from(GENERATION).scalar_subquery()
    moved = exists().where(
        or_(
            g.generation != SEED_GENERATION_ROW["generation"],
            g.listing_generation != SEED_GENERATION_ROW["listing_generation"],
        )
    )
    return or_(count != 1, moved)


def _changed_tables_query() -> CompoundSelect[tuple[str]]:
    parts = [
        select(literal(table.name)).where(exists().select_from(table))
        for table in TABLES_CHILDREN_FIRST
        if table.name not in SEEDED | KEPT
    ]
    parts.append(select(literal(CATEGORIES.name)).where(_categories_changed()))
    parts.append(select(literal(GENERATION.name)).where(_generation_changed()))
    return union_all(*parts)


CHANGED_TABLES = _changed_tables_query()


async def changed_tables(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        return {str(name) for name in (await conn.execute(CHANGED_TABLES)).scalars()}


async def reset_database(engine: AsyncEngine) -> set[str]:
    """Clear what the last test changed; returns the names of the tables it touched."""
    changed = await changed_tables(engine)
    if not changed:
        return changed
    # BEGIN IMMEDIATE on SQLite: take the write lock up front, as the service's writers do.
    async with engine.execution_options(**{IMMEDIATE: True}).begin() as conn:
        if conn.dialect.name == "postgresql":
            # The deletes below would move the generation at commit (migration 0016's
            # deferred trigger), past the seed row written here: tell it this transaction
            # already did. SQLite's triggers act at once: the seed row is written last.
            await conn.execute(
                text("SELECT set_config('marketplace.catalog_bumped', 'listing', true)")
            )
        for table in TABLES_CHILDREN_FIRST:
            if table.name in changed:
                await conn.execute(delete(table))
        if CATEGORIES.name in changed:
            await conn.execute(insert(CATEGORIES), SEED_CATEGORY_ROWS)
        if GENERATION.name in changed:
            # Last: the category rows written back just now moved the generation (SQLite's
            # triggers act at once, and write the row back if it is missing).
            await conn.execute(delete(GENERATION))
            await conn.execute(insert(GENERATION), [SEED_GENERATION_ROW])
        if "plugins" in changed:
            # The search index's change notes (migration 0012), made by the deletes above.
            await conn.execute(text("DELETE FROM plugin_search_changes"))
    return changed
