"""Scenario review by administrators (CONTRACT 8): prefix /api/v1/admin/scenarios.

Scenarios are reviewed per version, by the core's version queue and review moves.
"""

from __future__ import annotations

from marketplace.db import DbSession
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import ERROR_RESPONSES, Envelope
from marketplace.publishing import queries
from marketplace.publishing.endpoints import QueueViews, add_admin_list, add_version_queue
from marketplace.publishing.takedown_endpoints import add_admin_takedown
from marketplace.scenarios.kind import SCENARIOS
from marketplace.scenarios.lookup import AdminScenario
from marketplace.scenarios.routing import ScenarioRoute
from marketplace.scenarios.schemas import (
    AdminScenarioList,
    AdminScenarioVersionList,
    ScenarioDetail,
    ScenarioDownloadOut,
    ScenarioVersionItems,
    ScenarioVersionOut,
)
from marketplace.scenarios.views import (
    admin_version_out,
    download_info,
    scenario_detail,
    scenario_out,
    version_out,
)

router = api_router(
    prefix="/api/v1/admin/scenarios",
    tags=["admin: scenarios"],
    route_class=ScenarioRoute,
    responses=ERROR_RESPONSES,
)


add_admin_list(
    router,
    SCENARIOS,
    list_model=AdminScenarioList,
    item_out=lambda scenario, _labels: scenario_out(scenario),
    description="Every scenario with counts per review status (counts share the search, "
    "ignore the filter). A scenario's status is its newest version's, or taken_down.",
)


add_version_queue(
    router,
    SCENARIOS,
    QueueViews(
        list_model=AdminScenarioVersionList,
        version_model=ScenarioVersionOut,
        download_model=ScenarioDownloadOut,
        version_out=version_out,
        queue_item_out=admin_version_out,
        download=download_info,
    ),
)
add_admin_takedown(router, SCENARIOS, version_model=ScenarioVersionOut, version_out=version_out)


@router.get("/{scenario_id}")
async def scenario_detail_view(
    scenario: AdminScenario, session: DbSession
) -> Envelope[ScenarioDetail]:
    """One scenario, any state, with every version."""
    versions = await queries.versions_of(session, SCENARIOS, scenario.id)
    return Envelope(data=scenario_detail(scenario, versions))


@router.get("/{scenario_id}/versions")
async def scenario_versions(
    scenario: AdminScenario, session: DbSession
) -> Envelope[ScenarioVersionItems]:
    """All versions of a scenario, every state, newest first."""
    versions = await queries.versions_of(session, SCENARIOS, scenario.id)
    return Envelope(data=ScenarioVersionItems(items=[version_out(v) for v in versions]))
