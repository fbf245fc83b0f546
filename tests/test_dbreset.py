"""The harness itself: after reset_database, nothing a test wrote is left."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from marketplace.db import make_engine
from marketplace.migrate import upgrade
from marketplace.models import Category
from tests.dbreset import changed_tables, reset_database
from tests.dbsetup import sqlite_url
from tests.factories import Factory


async def test_a_freshly_migrated_database_shows_no_changes(tmp_path: Path) -> None:
    """The seeds reset_database puts back are the migrations' seeds."""
    url = sqlite_url(tmp_path)
    await asyncio.to_thread(upgrade, url)  # Alembic runs its own event loop
    engine = make_engine(url)
    try:
        assert await changed_tables(engine) == set()
    finally:
        await engine.dispose()


async def test_reset_clears_rows_and_restores_the_seeds(
    factory: Factory, reset_engine: AsyncEngine
) -> None:
    buyer = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    await factory.purchase(buyer, plugin)
    async with factory.sessions() as session:
        await session.execute(update(Category).where(Category.key == "ai").values(name="Renamed"))
        await session.commit()
    written = {"users", "plugins", "plugin_versions", "purchases", "categories"}
    assert written | {"catalog_generation"} <= await changed_tables(reset_engine)

    await reset_database(reset_engine)

    assert await changed_tables(reset_engine) == set()


async def test_reset_sees_writes_made_through_any_engine(
    database_url: str, reset_engine: AsyncEngine, clean_database: None
) -> None:
    other = make_engine(database_url)
    try:
        async with other.begin() as conn:
            await conn.execute(update(Category).values(sort_order=0))
    finally:
        await other.dispose()
    # The database's triggers moved the catalogue generation with the change (0016).
    assert await changed_tables(reset_engine) == {"categories", "catalog_generation"}

    await reset_database(reset_engine)

    assert await changed_tables(reset_engine) == set()
