"""Migration 0006 adds refresh_tokens.family_id as the model declares it, backfilled."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import DateTime, column, insert, inspect, table, text
from sqlalchemy.ext.asyncio import AsyncEngine

from marketplace.db import make_engine
from marketplace.migrate import alembic_config, upgrade
from marketplace.models import Base
from tests.dbsetup import create_postgres_database, drop_postgres_database, postgres_admin_url

TABLE = "refresh_tokens"

pytestmark = pytest.mark.filterwarnings(
    "ignore:Skipped unsupported reflection of expression-based index:sqlalchemy.exc.SAWarning"
)


async def _run(url: str, fn: Any) -> Any:
    engine: AsyncEngine = make_engine(url, pool_size=0)
    try:
        async with engine.begin() as connection:
            return await connection.run_sync(fn)
    finally:
        await engine.dispose()


def _table_diff(connection: Any) -> list[Any]:
    diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    return [d for d in diff if TABLE in str(d)]


def _columns(connection: Any) -> dict[str, bool]:
    return {c["name"]: c["nullable"] for c in inspect(connection).get_columns(TABLE)}


async def test_the_migrated_table_matches_the_model(database_url: str) -> None:
    assert await _run(database_url, _table_diff) == []


@pytest.fixture
def scratch_url(database_url: str, tmp_path: Any) -> Iterator[str]:
    admin_url = postgres_admin_url()
    if database_url.startswith("postgresql") and admin_url:
        url = create_postgres_database(admin_url, "scratch")
        yield url
        drop_postgres_database(admin_url, url)
    else:
        yield f"sqlite+aiosqlite:///{tmp_path / 'scratch.db'}"


def _insert_token(connection: Any) -> None:
    # Tables as migration 0005 left them (the models already have family_id).
    now = datetime(2026, 11, 24, tzinfo=UTC)
    users = table(
        "users",
        *(column(n) for n in ("id", "email", "password_hash", "name", "role")),
        column("created_at", DateTime(timezone=True)),
        column("updated_at", DateTime(timezone=True)),
    )
    tokens = table(
        TABLE,
        *(column(n) for n in ("id", "user_id", "token_hash")),
        column("created_at", DateTime(timezone=True)),
        column("expires_at", DateTime(timezone=True)),
    )
    connection.execute(
        insert(users).values(
            id="u1",
            email="a@example.com",
            password_hash="x",
            name="A",
            role="USER",
            created_at=now,
            updated_at=now,
        )
    )
    connection.execute(
        insert(tokens).values(
            id="t1", user_id="u1", token_hash="0" * 64, created_at=now, expires_at=now
        )
    )


def test_the_migration_backfills_each_token_as_its_own_family(scratch_url: str) -> None:
    upgrade(scratch_url, "0005")
    asyncio.run(_run(scratch_url, _insert_token))
    upgrade(scratch_url)
    rows = asyncio.run(
        _run(
            scratch_url, lambda c: c.execute(text("SELECT id, family_id FROM refresh_tokens")).all()
        )
    )
    assert [tuple(r) for r in rows] == [("t1", "t1")]
    assert asyncio.run(_run(scratch_url, _columns))["family_id"] is False
    assert asyncio.run(_run(scratch_url, _table_diff)) == []


def test_the_migration_goes_down_and_up(scratch_url: str) -> None:
    upgrade(scratch_url)
    command.downgrade(alembic_config(scratch_url), "0005")
    assert "family_id" not in asyncio.run(_run(scratch_url, _columns))
    upgrade(scratch_url)
    assert asyncio.run(_run(scratch_url, _table_diff)) == []
