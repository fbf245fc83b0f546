"""Migration 0009 creates the publishing-token table as the model declares it, with its
invariants in the database: unique hash, owner cascade, expiry after creation, a reason
with every revocation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from alembic import command
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.migrate import alembic_config, upgrade
from marketplace.models import PublishingToken, User
from tests.factories import Factory
from tests.migrations import IGNORE_EXPRESSION_INDEXES, model_diff, run_now, run_on, table_names

TABLE = "publishing_tokens"

pytestmark = IGNORE_EXPRESSION_INDEXES


async def test_the_migrated_table_matches_the_model(database_url: str) -> None:
    assert await run_on(database_url, model_diff({TABLE})) == []


def test_the_migration_goes_down_and_up(scratch_url: str) -> None:
    upgrade(scratch_url)
    assert TABLE in run_now(scratch_url, table_names)
    command.downgrade(alembic_config(scratch_url), "0008")
    tables = run_now(scratch_url, table_names)
    assert TABLE not in tables and "users" in tables
    upgrade(scratch_url)
    assert run_now(scratch_url, model_diff({TABLE})) == []


def _row(user_id: str, token_hash: str = "a" * 64, **overrides: object) -> PublishingToken:
    now = datetime.now(UTC)
    values: dict[str, object] = {
        "user_id": user_id,
        "name": "ci",
        "token_hash": token_hash,
        "scopes": ["read"],
        "created_at": now,
        "expires_at": now + timedelta(days=1),
        **overrides,
    }
    return PublishingToken(**values)


@pytest.mark.parametrize(
    "overrides",
    [
        {"expires_at": datetime.now(UTC) - timedelta(days=1)},
        {"revoked_at": datetime.now(UTC)},
        {"revoked_reason": "why"},
        {"name": ""},
    ],
)
async def test_the_database_refuses_inconsistent_rows(
    factory: Factory, sessionmaker: async_sessionmaker[AsyncSession], overrides: dict[str, object]
) -> None:
    user = await factory.developer()
    async with factory.sessions() as session:
        session.add(_row(user.id, **overrides))
        with pytest.raises(IntegrityError):
            await session.commit()


async def test_hashes_are_unique_and_rows_go_with_their_owner(
    factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    user = await factory.developer()
    async with factory.sessions() as session:
        session.add(_row(user.id, "b" * 64))
        await session.commit()
    async with factory.sessions() as session:
        session.add(_row(user.id, "b" * 64))
        with pytest.raises(IntegrityError):
            await session.commit()
    async with factory.sessions() as session:
        await session.execute(delete(User).where(User.id == user.id))
        await session.commit()
    async with sessionmaker() as session:
        assert list(await session.scalars(select(PublishingToken))) == []
