"""Helpers for the migration tests: run a function on a database and compare it with the
models (the `scratch_url` fixture, a database of a test's own, is in tests/conftest.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, inspect
from sqlalchemy.ext.asyncio import AsyncEngine

from marketplace.db import make_engine
from marketplace.models import Base

T = TypeVar("T")

# Reflection meets migration 0002's expression indexes on plugins (raw DDL by design).
IGNORE_EXPRESSION_INDEXES = pytest.mark.filterwarnings(
    "ignore:Skipped unsupported reflection of expression-based index:sqlalchemy.exc.SAWarning"
)


async def run_on(url: str, fn: Callable[[Connection], T]) -> T:
    """fn on a connection of the database at url, in a transaction that commits."""
    engine: AsyncEngine = make_engine(url, pool_size=0)
    try:
        async with engine.begin() as connection:
            return await connection.run_sync(fn)
    finally:
        await engine.dispose()


def run_now(url: str, fn: Callable[[Connection], T]) -> T:
    """run_on from synchronous code (Alembic's env runs its own event loop)."""
    return asyncio.run(run_on(url, fn))


def model_diff(tables: set[str]) -> Callable[[Connection], list[Any]]:
    """What differs between the database and the models, for these tables only."""

    def diff(connection: Connection) -> list[Any]:
        found = compare_metadata(MigrationContext.configure(connection), Base.metadata)
        return [d for d in found if tables & set(str(d).split("'"))]

    return diff


def table_names(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())
