"""Run Alembic migrations programmatically (the only way the schema is made), and the
transparency log's one-time backfill that completes migration 0014."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.config import Settings
from marketplace.db import make_engine, make_sessionmaker
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.log_backfill import backfill
from marketplace.scenarios.kind import SCENARIOS
from marketplace.transparency.log import record_key_changes
from marketplace.trust.keyring import Keyring

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", database_url)
    config.set_main_option("file_template", "%%(year)d%%(month).2d%%(day).2d_%%(rev)s_%%(slug)s")
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    if database_url.startswith("sqlite"):
        # The data folder must exist before SQLite can create its file.
        path = database_url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(database_url), revision)


def head_revision() -> str:
    """The revision `upgrade` reaches: what a ready database must be at."""
    head = ScriptDirectory.from_config(alembic_config("")).get_current_head()
    if head is None:  # unreachable: the tree has migrations
        raise RuntimeError("no migrations found")
    return head


async def backfill_log(sessions: async_sessionmaker[AsyncSession], keyring: Keyring) -> int:
    """Complete migration 0014: append the decisions made before the transparency log, once
    (a no-op afterwards), and any key of the keyring the log does not name yet (the key that
    signs checkpoints is in the log before the first one is fetched); how many entries it
    appended."""
    async with sessions.begin() as session:
        appended = await backfill(session, keyring, (PLUGINS, SCENARIOS))
        keys = await anyio.to_thread.run_sync(keyring.keys)
        return appended + len(await record_key_changes(session, keys))


def upgrade_and_backfill(settings: Settings, revision: str = "head") -> int:
    """`upgrade`, then the log's backfill when the schema is at the head."""
    upgrade(settings.database_url, revision)
    if revision != "head":
        return 0
    return asyncio.run(_backfill_once(settings))


async def _backfill_once(settings: Settings) -> int:
    engine = make_engine(settings.database_url, pool_size=1)
    try:
        return await backfill_log(
            make_sessionmaker(engine, write=True), Keyring.from_settings(settings)
        )
    finally:
        await engine.dispose()
