"""Migration 0007 adds approved_at, release and taken_down_at to both version tables as the
models declare them, and dates the versions approved before it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, MetaData, Table, insert, inspect, select, types

from marketplace.migrate import alembic_config, upgrade
from tests.migrations import IGNORE_EXPRESSION_INDEXES, model_diff, run_now, run_on

TABLES = {"plugin_versions", "scenario_versions"}
NEW_COLUMNS = {"approved_at", "release", "taken_down_at"}
UPLOADED = datetime(2026, 1, 1, tzinfo=UTC)
APPROVED = datetime(2026, 2, 1, tzinfo=UTC)

pytestmark = IGNORE_EXPRESSION_INDEXES


async def test_the_migrated_tables_match_the_models(database_url: str) -> None:
    assert await run_on(database_url, model_diff(TABLES)) == []


def _filler(column: Any) -> Any:
    """A value for a required column the test does not care about."""
    if isinstance(column.type, types.DateTime):
        return UPLOADED
    if isinstance(column.type, types.Boolean):
        return False
    if isinstance(column.type, types.Integer | types.Numeric):
        return 0
    if isinstance(column.type, types.JSON):
        return {}
    return "x"


def _insert(connection: Connection, name: str, **values: Any) -> None:
    """A row with every required column filled, as the table stands at this revision."""
    table = Table(name, MetaData(), autoload_with=connection)
    row = {
        column.name: _filler(column)
        for column in table.columns
        if not column.nullable and column.server_default is None
    }
    row.update(values)
    connection.execute(insert(table).values(**row))


def _seed(connection: Connection) -> None:
    _insert(connection, "users", id="u1", email="a@example.com", role="DEVELOPER")
    _insert(connection, "categories", key="tools")
    _insert(
        connection,
        "plugins",
        id="p1",
        plugin_key="demo",
        type="tool",
        category="tools",
        owner_id="u1",
        review_status="approved",
        is_free=True,
        tags=[],
        platforms=[],
    )
    base = {"plugin_id": "p1", "distribution": "config_only", "created_at": UPLOADED}
    for version_id, status in (("v1", "approved"), ("v2", "approved"), ("v3", "pending")):
        _insert(
            connection,
            "plugin_versions",
            id=version_id,
            version=f"1.0.{version_id[1]}",
            review_status=status,
            **base,
        )
    _insert(
        connection,
        "audit_logs",
        id="a1",
        action="REVIEW_APPROVE",
        resource_type="plugin_version",
        resource_id="v1",
        outcome="SUCCESS",
        trigger="admin",
        created_at=APPROVED,
    )


def _approved_at(connection: Connection) -> dict[str, datetime | None]:
    table = Table("plugin_versions", MetaData(), autoload_with=connection)
    rows = connection.execute(select(table.c.id, table.c.approved_at)).all()
    return {row.id: _utc(row.approved_at) for row in rows}


def _utc(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def test_versions_approved_before_get_the_time_of_their_approval(scratch_url: str) -> None:
    upgrade(scratch_url, "0006")
    run_now(scratch_url, _seed)
    upgrade(scratch_url, "0007")
    assert run_now(scratch_url, _approved_at) == {"v1": APPROVED, "v2": UPLOADED, "v3": None}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_the_migration_goes_down_and_up(scratch_url: str, name: str) -> None:
    def columns(connection: Connection) -> set[str]:
        return {c["name"] for c in inspect(connection).get_columns(name)}

    upgrade(scratch_url)
    command.downgrade(alembic_config(scratch_url), "0006")
    assert not NEW_COLUMNS & run_now(scratch_url, columns)
    upgrade(scratch_url)
    assert NEW_COLUMNS <= run_now(scratch_url, columns)
    assert run_now(scratch_url, model_diff(TABLES)) == []
