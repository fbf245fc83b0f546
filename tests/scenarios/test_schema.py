"""The migrated database matches the models, and the scenario migration goes down and up."""

from __future__ import annotations

from alembic import command

from marketplace.migrate import alembic_config, upgrade
from tests.migrations import IGNORE_EXPRESSION_INDEXES, model_diff, run_now, run_on, table_names

SCENARIO_TABLES = {"scenarios", "scenario_versions"}

pytestmark = IGNORE_EXPRESSION_INDEXES


async def test_migrated_scenario_tables_match_the_models(database_url: str) -> None:
    assert await run_on(database_url, model_diff(SCENARIO_TABLES)) == []


def test_scenario_migration_goes_down_and_up(scratch_url: str) -> None:
    # Synchronous: Alembic's env runs its own event loop.
    upgrade(scratch_url)
    assert SCENARIO_TABLES <= run_now(scratch_url, table_names)
    command.downgrade(alembic_config(scratch_url), "0001")
    tables = run_now(scratch_url, table_names)
    assert not SCENARIO_TABLES & tables and "plugins" in tables
    upgrade(scratch_url)
    assert run_now(scratch_url, model_diff(SCENARIO_TABLES)) == []
