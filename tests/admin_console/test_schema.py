"""Migration 0005 creates the console's session table as the model declares it."""

from __future__ import annotations

from alembic import command

from marketplace.migrate import alembic_config, upgrade
from tests.migrations import IGNORE_EXPRESSION_INDEXES, model_diff, run_now, run_on, table_names

TABLE = "console_sessions"

pytestmark = IGNORE_EXPRESSION_INDEXES


async def test_the_migrated_table_matches_the_model(database_url: str) -> None:
    assert await run_on(database_url, model_diff({TABLE})) == []


def test_the_migration_goes_down_and_up(scratch_url: str) -> None:
    upgrade(scratch_url)
    assert TABLE in run_now(scratch_url, table_names)
    command.downgrade(alembic_config(scratch_url), "0004")
    tables = run_now(scratch_url, table_names)
    assert TABLE not in tables and "users" in tables
    upgrade(scratch_url)
    assert run_now(scratch_url, model_diff({TABLE})) == []
