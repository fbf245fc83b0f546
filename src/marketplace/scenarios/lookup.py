"""The scenario dependencies: ownership and the order of checks live in the core's lookup;
these name the path parameter (`scenario_id`) and the caller each route needs."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from marketplace.auth.deps import Admin, Developer, TokenGrant, VerifiedDeveloper
from marketplace.db import DbSession
from marketplace.models import Scenario, ScenarioVersion
from marketplace.publishing.lookup import (
    declare_admin,
    declare_owned,
    declare_version_write,
    find_item,
    locked_version_with_item,
    owned_item,
    owned_item_for_write,
    owned_version,
)
from marketplace.scenarios.kind import SCENARIOS


async def owned_scenario(scenario_id: str, caller: Developer, session: DbSession) -> Scenario:
    return await owned_item(SCENARIOS, scenario_id, caller, session)


async def owned_scenario_for_write(
    scenario_id: str, caller: VerifiedDeveloper, session: DbSession, grant: TokenGrant
) -> Scenario:
    return await owned_item_for_write(SCENARIOS, scenario_id, caller, session, grant)


async def owned_scenario_for_upload(
    scenario_id: str, caller: VerifiedDeveloper, session: DbSession, grant: TokenGrant
) -> Scenario:
    """Checked without a lock: the upload's own transaction locks the row."""
    return await owned_item_for_write(SCENARIOS, scenario_id, caller, session, grant, lock=False)


async def admin_scenario(scenario_id: str, _admin: Admin, session: DbSession) -> Scenario:
    return await find_item(session, SCENARIOS, scenario_id)


declare_owned(owned_scenario, SCENARIOS, write=False)
for _write in (owned_scenario_for_write, owned_scenario_for_upload):
    declare_owned(_write, SCENARIOS, write=True)
declare_admin(admin_scenario, SCENARIOS)

OwnedScenario = Annotated[Scenario, Depends(owned_scenario)]
OwnedScenarioForWrite = Annotated[Scenario, Depends(owned_scenario_for_write)]
OwnedScenarioForUpload = Annotated[Scenario, Depends(owned_scenario_for_upload)]
AdminScenario = Annotated[Scenario, Depends(admin_scenario)]


async def admin_scenario_version_for_write(
    version_id: str, _admin: Admin, session: DbSession
) -> tuple[Scenario, ScenarioVersion]:
    """Any version with its scenario, both locked (item first) for a review move."""
    return await locked_version_with_item(session, SCENARIOS, version_id)


async def owned_scenario_version_for_write(
    version_id: str, scenario: OwnedScenarioForWrite, session: DbSession
) -> tuple[Scenario, ScenarioVersion]:
    """A version of the caller's own scenario, locked after it."""
    return scenario, await owned_version(session, SCENARIOS, scenario, version_id)


for _version_write in (admin_scenario_version_for_write, owned_scenario_version_for_write):
    declare_version_write(_version_write, SCENARIOS)

AdminScenarioVersionForWrite = Annotated[
    tuple[Scenario, ScenarioVersion], Depends(admin_scenario_version_for_write)
]
OwnedScenarioVersionForWrite = Annotated[
    tuple[Scenario, ScenarioVersion], Depends(owned_scenario_version_for_write)
]
