"""Migration 0006 adds refresh_tokens.family_id as the model declares it, backfilled."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command
from sqlalchemy import Connection, DateTime, column, insert, inspect, table, text

from marketplace.migrate import alembic_config, upgrade
from tests.migrations import IGNORE_EXPRESSION_INDEXES, model_diff, run_now, run_on

TABLE = "refresh_tokens"

pytestmark = IGNORE_EXPRESSION_INDEXES


def _columns(connection: Connection) -> dict[str, bool]:
    return {c["name"]: c["nullable"] for c in inspect(connection).get_columns(TABLE)}


async def test_the_migrated_table_matches_the_model(database_url: str) -> None:
    assert await run_on(database_url, model_diff({TABLE})) == []


def _insert_token(connection: Connection) -> None:
    # Tables as migration 0005 left them (the models already have family_id).
    now = datetime(2026, 11, 24, tzinfo=UTC)
    users = table(
        "users",
        *(column(n) for n in ("id", "email", "password_hash", "name", "role")),
        column("created_at", DateTime(timezone=True)),
        column("updated_at", DateTime(timezone=True)),
    )
    tokens = table(
        TABLE,
        *(column(n) for n in ("id", "user_id", "token_hash")),
        column("created_at", DateTime(timezone=True)),
        column("expires_at", DateTime(timezone=True)),
    )
    connection.execute(
        insert(users).values(
            id="u1",
            email="a@example.com",
            password_hash="x",
            name="A",
            role="USER",
            created_at=now,
            updated_at=now,
        )
    )
    connection.execute(
        insert(tokens).values(
            id="t1", user_id="u1", token_hash="0" * 64, created_at=now, expires_at=now
        )
    )


def test_the_migration_backfills_each_token_as_its_own_family(scratch_url: str) -> None:
    upgrade(scratch_url, "0005")
    run_now(scratch_url, _insert_token)
    upgrade(scratch_url)
    rows = run_now(
        scratch_url, lambda c: c.execute(text("SELECT id, family_id FROM refresh_tokens")).all()
    )
    assert [tuple(r) for r in rows] == [("t1", "t1")]
    assert run_now(scratch_url, _columns)["family_id"] is False
    assert run_now(scratch_url, model_diff({TABLE})) == []


def test_the_migration_goes_down_and_up(scratch_url: str) -> None:
    upgrade(scratch_url)
    command.downgrade(alembic_config(scratch_url), "0005")
    assert "family_id" not in run_now(scratch_url, _columns)
    upgrade(scratch_url)
    assert run_now(scratch_url, model_diff({TABLE})) == []
