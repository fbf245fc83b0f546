"""Migration 0005 creates the console's session table as the model declares it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import AsyncEngine

from marketplace.db import make_engine
from marketplace.migrate import alembic_config, upgrade
from marketplace.models import Base
from tests.dbsetup import create_postgres_database, drop_postgres_database, postgres_admin_url

TABLE = "console_sessions"

pytestmark = pytest.mark.filterwarnings(
    "ignore:Skipped unsupported reflection of expression-based index:sqlalchemy.exc.SAWarning"
)


async def _inspect(url: str, fn: Any) -> Any:
    engine: AsyncEngine = make_engine(url, pool_size=0)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(fn)
    finally:
        await engine.dispose()


def _table_diff(connection: Any) -> list[Any]:
    diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    return [d for d in diff if TABLE in str(d)]


async def test_the_migrated_table_matches_the_model(database_url: str) -> None:
    assert await _inspect(database_url, _table_diff) == []


@pytest.fixture
def scratch_url(database_url: str, tmp_path: Any) -> Iterator[str]:
    admin_url = postgres_admin_url()
    if database_url.startswith("postgresql") and admin_url:
        url = create_postgres_database(admin_url, "scratch")
        yield url
        drop_postgres_database(admin_url, url)
    else:
        yield f"sqlite+aiosqlite:///{tmp_path / 'scratch.db'}"


def test_the_migration_goes_down_and_up(scratch_url: str) -> None:
    def tables() -> set[str]:
        names: set[str] = asyncio.run(
            _inspect(scratch_url, lambda c: set(inspect(c).get_table_names()))
        )
        return names

    upgrade(scratch_url)
    assert TABLE in tables()
    command.downgrade(alembic_config(scratch_url), "0004")
    assert TABLE not in tables() and "users" in tables()
    upgrade(scratch_url)
    assert asyncio.run(_inspect(scratch_url, _table_diff)) == []
