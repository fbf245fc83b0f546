"""Migration 0014: the log's tables as the models declare them, append-only on both
databases, going down and up; a database holding decisions is marked for the backfill."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
from alembic import command
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.migrate import alembic_config, upgrade
from tests.factories import Factory
from tests.migrations import IGNORE_EXPRESSION_INDEXES, model_diff, run_now, run_on, table_names
from tests.takedown.helpers import released_plugin
from tests.transparency.helpers import checkpoint

TABLES = {"log_entries", "log_nodes", "log_head", "revocations"}

pytestmark = IGNORE_EXPRESSION_INDEXES


async def test_the_migrated_tables_match_the_models(database_url: str) -> None:
    assert {"log_entries", "log_nodes", "log_head"} <= await run_on(database_url, table_names)
    assert await run_on(database_url, model_diff(TABLES)) == []


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE log_entries SET leaf = :forged WHERE log_index = :index",
        "UPDATE log_entries SET log_index = log_index + 1000000 WHERE log_index = :index",
        "DELETE FROM log_entries WHERE log_index = :index",
        "UPDATE log_nodes SET hash = :forged WHERE node_id = :index",
        "DELETE FROM log_nodes WHERE node_id = :index",
        # SQLite's REPLACE would delete the row it meets without a DELETE trigger firing;
        # PostgreSQL's upsert fires the UPDATE trigger.
        (
            "INSERT OR REPLACE INTO log_entries (log_index, action, subject, leaf) "
            "VALUES (:index, 'approve', 'forged', :forged)"
        ),
        "INSERT OR REPLACE INTO log_nodes (node_id, hash) VALUES (:index, :forged)",
        (
            "INSERT INTO log_entries (log_index, action, subject, leaf) VALUES "
            "(:index, 'approve', 'forged', :forged) ON CONFLICT (log_index) DO UPDATE SET "
            "leaf = excluded.leaf"
        ),
    ],
)
async def test_the_database_refuses_to_change_or_remove_log_rows(
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    statement: str,
    is_postgres: bool,
) -> None:
    if "OR REPLACE" in statement and is_postgres:
        pytest.skip("INSERT OR REPLACE is SQLite's")
    await released_plugin(client, factory, ("1.0.0",))
    before = await checkpoint(client)
    index = before["treeSize"] - 1
    async with sessionmaker() as session:
        with pytest.raises(DBAPIError, match="append-only"):
            await session.execute(text(statement), {"forged": b"forged", "index": index})
        await session.rollback()
    after = await checkpoint(client)
    assert (after["treeSize"], after["rootHash"]) == (before["treeSize"], before["rootHash"])


def _pending(connection: Connection) -> bool:
    return bool(connection.execute(text("SELECT backfill_pending FROM log_head")).scalar_one())


def test_an_empty_database_needs_no_backfill_and_the_migration_goes_down_and_up(
    scratch_url: str,
) -> None:
    upgrade(scratch_url)
    assert run_now(scratch_url, _pending) is False
    command.downgrade(alembic_config(scratch_url), "0013")
    assert not {"log_entries", "log_nodes", "log_head"} & run_now(scratch_url, table_names)
    upgrade(scratch_url)
    assert run_now(scratch_url, model_diff(TABLES)) == []


def test_a_database_holding_decisions_is_marked_for_the_backfill(scratch_url: str) -> None:
    upgrade(scratch_url, "0013")

    def revoke(connection: Connection) -> None:
        connection.execute(
            text(
                "INSERT INTO revocations (id, kind, version_id, key, version, sha256, reason, "
                "revoked_at) VALUES ('r1', 'plugin', 'v1', 'gone', '1.0.0', NULL, 'why', :at)"
            ),
            {"at": datetime(2026, 1, 1, tzinfo=UTC)},
        )
        connection.commit()

    run_now(scratch_url, revoke)
    upgrade(scratch_url)
    assert run_now(scratch_url, _pending) is True
