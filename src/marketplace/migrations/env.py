"""Alembic environment: async engines, batch mode on SQLite."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from marketplace.db import analyze, make_engine
from marketplace.models import Base

config = context.config
target_metadata = Base.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    migration = context.get_context()
    before = migration.get_current_heads()
    with context.begin_transaction():
        context.run_migrations()
    if migration.get_current_heads() == before:
        return  # nothing ran (every start of a current database): nothing to re-analyse
    # Migrations copy and index whole tables: the planner must see the result. (Alembic
    # runs SQLite's DDL outside a transaction of its own, so commit this explicitly.)
    analyze(connection)
    connection.commit()


async def _run_async(url: str) -> None:
    engine = make_engine(url, pool_size=0)
    async with engine.connect() as connection:
        await connection.run_sync(_configure)
    await engine.dispose()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        return
    asyncio.run(_run_async(config.get_main_option("sqlalchemy.url") or ""))


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
