"""Migration 0008 creates the revocations table as the model declares it, and goes down."""

from __future__ import annotations

from alembic import command

from marketplace.migrate import alembic_config, upgrade
from tests.migrations import IGNORE_EXPRESSION_INDEXES, model_diff, run_now, run_on, table_names

TABLES = {"revocations"}

pytestmark = IGNORE_EXPRESSION_INDEXES


async def test_the_migrated_table_matches_the_model(database_url: str) -> None:
    assert "revocations" in await run_on(database_url, table_names)
    assert await run_on(database_url, model_diff(TABLES)) == []


def test_the_migration_goes_down_and_up(scratch_url: str) -> None:
    upgrade(scratch_url)
    command.downgrade(alembic_config(scratch_url), "0007")
    assert "revocations" not in run_now(scratch_url, table_names)
    upgrade(scratch_url)
    assert "revocations" in run_now(scratch_url, table_names)
    assert run_now(scratch_url, model_diff(TABLES)) == []
