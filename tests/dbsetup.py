"""Test databases: one migrated database per test run and xdist worker, SQLite or PostgreSQL."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

PG_ENV = "MARKETPLACE_TEST_DATABASE_URL"
ENABLE_HINT = (
    f"PostgreSQL tests need {PG_ENV}=postgresql+asyncpg://postgres@127.0.0.1:5432/test "
    "(a reachable server; `make test-postgres` sets it)"
)


def postgres_admin_url() -> str | None:
    return os.environ.get(PG_ENV) or None


def database_label() -> str:
    """Which database this run uses, for the report (a password is never shown)."""
    url = postgres_admin_url()
    if url is None:
        return "SQLite (embedded default)"
    return f"PostgreSQL ({make_url(url).render_as_string(hide_password=True)})"


def create_postgres_database(admin_url: str, worker: str) -> str:
    """CREATE DATABASE with UTF-8 ctype (pg_trgm needs it to index CJK text); returns its URL."""
    import asyncio

    import asyncpg

    base = make_url(admin_url)
    name = f"mkt_test_{uuid.uuid4().hex[:10]}_{worker}"

    async def create() -> None:
        conn = await asyncpg.connect(
            host=base.host,
            port=base.port or 5432,
            user=base.username,
            password=base.password,
            database=base.database,
        )
        try:
            await conn.execute(
                f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8' "
                "LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'"
            )
        finally:
            await conn.close()

    try:
        asyncio.run(create())
    except Exception as exc:
        message = f"{database_label()} unreachable: {exc}. {ENABLE_HINT}"
        if os.environ.get("CI") == "true":
            pytest.exit(message, returncode=3)
        pytest.skip(message, allow_module_level=True)
    return base.set(database=name).render_as_string(hide_password=False)


def drop_postgres_database(admin_url: str, url: str) -> None:
    import asyncio

    import asyncpg

    base = make_url(admin_url)
    name = make_url(url).database

    async def drop() -> None:
        conn = await asyncpg.connect(
            host=base.host,
            port=base.port or 5432,
            user=base.username,
            password=base.password,
            database=base.database,
        )
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

    asyncio.run(drop())


def sqlite_url(folder: Path) -> str:
    return f"sqlite+aiosqlite:///{folder / 'test.db'}"
