"""Finding scenarios and their versions, and the ownership rule, in one place."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.auth.deps import Admin, Developer, VerifiedDeveloper
from marketplace.db import DbSession
from marketplace.errors import ScenarioNotFound, ScenarioNotOwned
from marketplace.kit.sql import is_row_id
from marketplace.models import Scenario, ScenarioVersion, User

VERSION_NOT_FOUND = "Scenario version does not exist"


async def find_scenario(session: AsyncSession, scenario_id: str, *, lock: bool = False) -> Scenario:
    """By id (case-sensitive, as stored); 404 SCENARIO_NOT_FOUND otherwise."""
    query = select(Scenario).where(Scenario.id == scenario_id)
    if lock:
        # Refresh: an object already in the session would otherwise keep pre-lock values.
        query = query.with_for_update().execution_options(populate_existing=True)
    scenario = await session.scalar(query)
    if scenario is None:
        raise ScenarioNotFound()
    return scenario


async def find_scenario_version(
    session: AsyncSession, version_id: str, *, lock: bool = False
) -> ScenarioVersion:
    if not is_row_id(version_id):
        raise ScenarioNotFound(VERSION_NOT_FOUND)
    query = select(ScenarioVersion).where(ScenarioVersion.id == version_id)
    if lock:
        query = query.with_for_update().execution_options(populate_existing=True)
    version = await session.scalar(query)
    if version is None:
        raise ScenarioNotFound(VERSION_NOT_FOUND)
    return version


def check_owner(scenario: Scenario, user: User) -> Scenario:
    if scenario.owner_id != user.id:
        raise ScenarioNotOwned()
    return scenario


async def _owned_for_read(scenario_id: str, user: Developer, session: DbSession) -> Scenario:
    return check_owner(await find_scenario(session, scenario_id), user)


async def _owned_for_write(
    scenario_id: str, user: VerifiedDeveloper, session: DbSession
) -> Scenario:
    # Locked: writes to one scenario are serialised (PostgreSQL row lock; SQLite is already).
    return check_owner(await find_scenario(session, scenario_id, lock=True), user)


async def _admin_scenario(scenario_id: str, _admin: Admin, session: DbSession) -> Scenario:
    return await find_scenario(session, scenario_id)


# Order of checks (CONTRACT 1): token → role → verified → 404 → not owned, by construction.
OwnedScenario = Annotated[Scenario, Depends(_owned_for_read)]
OwnedScenarioForWrite = Annotated[Scenario, Depends(_owned_for_write)]
AdminScenario = Annotated[Scenario, Depends(_admin_scenario)]
