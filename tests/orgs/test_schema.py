"""The organizations migration matches the models, its rules hold in the database, a
plugin's organization change moves the listing generation, and it goes down and up."""

from __future__ import annotations

from typing import Any

import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.migrate import alembic_config, upgrade
from marketplace.models import OrgRole
from tests.factories import Factory
from tests.migrations import IGNORE_EXPRESSION_INDEXES, model_diff, run_now, run_on, table_names

ORG_TABLES = {"organizations", "organization_members"}
CHANGED_TABLES = {"plugins"}
GENERATIONS = "SELECT generation, listing_generation FROM catalog_generation WHERE id = 1"

pytestmark = IGNORE_EXPRESSION_INDEXES


def _unexpected(diffs: list[Any]) -> list[Any]:
    # PostgreSQL's plugins carry a generated search column by design (migration 0002).
    return [d for d in diffs if "search_text" not in str(d)]


async def test_migrated_organization_tables_match_the_models(database_url: str) -> None:
    diffs = await run_on(database_url, model_diff(ORG_TABLES | CHANGED_TABLES))
    assert _unexpected(diffs) == []


def test_organizations_migration_goes_down_and_up(scratch_url: str) -> None:
    upgrade(scratch_url)
    assert ORG_TABLES <= run_now(scratch_url, table_names)
    command.downgrade(alembic_config(scratch_url), "0017")
    assert not ORG_TABLES & run_now(scratch_url, table_names)
    upgrade(scratch_url)
    assert _unexpected(run_now(scratch_url, model_diff(ORG_TABLES | CHANGED_TABLES))) == []


async def test_the_database_refuses_an_unknown_role(database_url: str, factory: Factory) -> None:
    owner = await factory.developer()
    org = await factory.org(owner)
    with pytest.raises(IntegrityError):
        await run_on(
            database_url,
            lambda c: c.execute(
                text("UPDATE organization_members SET role = 'admin' WHERE org_id = :id"),
                {"id": org.id},
            ),
        )


async def test_the_database_refuses_a_second_membership_of_one_user(
    database_url: str, factory: Factory
) -> None:
    owner = await factory.developer()
    org = await factory.org(owner)
    with pytest.raises(IntegrityError):
        await factory.member(org, owner, OrgRole.MEMBER)


async def test_the_database_refuses_a_second_organization_with_one_slug(
    factory: Factory,
) -> None:
    await factory.org(slug="acme-dup")
    with pytest.raises(IntegrityError):
        await factory.org(slug="acme-dup")


async def test_a_plugin_cannot_name_an_organization_that_does_not_exist(
    database_url: str, factory: Factory
) -> None:
    plugin = await factory.plugin()
    with pytest.raises(IntegrityError):
        await run_on(
            database_url,
            lambda c: c.execute(
                text("UPDATE plugins SET org_id = :org WHERE id = :id"),
                {"org": "00000000-0000-4000-8000-000000000000", "id": plugin.id},
            ),
        )


async def test_an_organization_with_plugins_cannot_be_deleted(
    database_url: str, factory: Factory
) -> None:
    org = await factory.org()
    await factory.plugin(org_id=org.id)
    with pytest.raises(IntegrityError):
        await run_on(
            database_url,
            lambda c: c.execute(text("DELETE FROM organizations WHERE id = :id"), {"id": org.id}),
        )


async def test_deleting_an_organization_removes_its_members(
    database_url: str, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    org = await factory.org()
    await run_on(
        database_url,
        lambda c: c.execute(text("DELETE FROM organizations WHERE id = :id"), {"id": org.id}),
    )
    left = await run_on(
        database_url,
        lambda c: c.execute(
            text("SELECT count(*) FROM organization_members WHERE org_id = :id"), {"id": org.id}
        ).scalar_one(),
    )
    assert left == 0


async def test_moving_a_plugin_into_an_organization_moves_the_listing_generation(
    database_url: str, factory: Factory
) -> None:
    """Cached public pages show `org`: a transfer (any writer) makes them stale."""
    org = await factory.org()
    plugin = await factory.plugin()
    before = await run_on(database_url, lambda c: tuple(c.execute(text(GENERATIONS)).one()))
    await factory.update_plugin(plugin, org_id=org.id)
    after = await run_on(database_url, lambda c: tuple(c.execute(text(GENERATIONS)).one()))
    assert after[0] > before[0]
    assert after[1] > before[1]
