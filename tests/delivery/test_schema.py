"""The delivery migration matches the models, its rules hold in the database, and it goes
down and up."""

from __future__ import annotations

from typing import Any

import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from marketplace.migrate import alembic_config, upgrade
from tests.factories import Factory
from tests.migrations import IGNORE_EXPRESSION_INDEXES, model_diff, run_now, run_on, table_names

DELIVERY_TABLES = {"plugin_signals", "plugin_daily_stats", "plugin_version_stats"}
CHANGED_TABLES = {"plugins", "plugin_versions"}

pytestmark = IGNORE_EXPRESSION_INDEXES


def _unexpected(diffs: list[Any]) -> list[Any]:
    # PostgreSQL's plugins carry a generated search column by design (migration 0002).
    return [d for d in diffs if "search_text" not in str(d)]


async def test_migrated_delivery_tables_match_the_models(database_url: str) -> None:
    diffs = await run_on(database_url, model_diff(DELIVERY_TABLES | CHANGED_TABLES))
    assert _unexpected(diffs) == []


def test_delivery_migration_goes_down_and_up(scratch_url: str) -> None:
    upgrade(scratch_url)
    assert DELIVERY_TABLES <= run_now(scratch_url, table_names)
    command.downgrade(alembic_config(scratch_url), "0016")
    assert not DELIVERY_TABLES & run_now(scratch_url, table_names)
    upgrade(scratch_url)
    assert _unexpected(run_now(scratch_url, model_diff(DELIVERY_TABLES | CHANGED_TABLES))) == []


@pytest.mark.parametrize(
    "values",
    [
        "channel = 'beta'",
        "rollout_percent = 0",
        "rollout_percent = 101",
        "rollout_state = 'paused'",
        "rollout_percent = 50",  # below 100 yet full
        "rollout_state = 'rolling'",  # rolling at 100
        "channel = 'prerelease', is_latest = true",  # a prerelease is never current
        "channel = 'prerelease', rollout_state = 'rolling', rollout_percent = 10",
    ],
)
async def test_the_database_refuses_a_rollout_that_breaks_its_rules(
    database_url: str, factory: Factory, values: str
) -> None:
    plugin = await factory.plugin()
    version_id = (await factory.version(plugin, "1.0.0")).id
    with pytest.raises(IntegrityError):
        await run_on(
            database_url,
            lambda c: c.execute(
                # Constant SQL from the parameters above, no input.
                text(f"UPDATE plugin_versions SET {values} WHERE id = :id"),  # noqa: S608
                {"id": version_id},
            ),
        )
    state = await run_on(
        database_url,
        lambda c: c.execute(
            text(
                "SELECT channel, rollout_percent, rollout_state FROM plugin_versions WHERE id = :id"
            ),
            {"id": version_id},
        ).one(),
    )
    assert tuple(state) == ("stable", 100, "full")
