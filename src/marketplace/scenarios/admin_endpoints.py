"""Scenario review by administrators (CONTRACT 8): prefix /api/v1/admin/scenarios.

Scenarios are reviewed per version, with the plugin versions' rule and audit records.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Request

from marketplace.auth.deps import Admin
from marketplace.db import DbSession
from marketplace.kit.pagination import LimitParams
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import ERROR_RESPONSES, Envelope
from marketplace.models import ReviewStatus
from marketplace.plugins.schemas import StatusCounts, VersionReviewIn
from marketplace.plugins.service import reviewer_labels
from marketplace.review import engine
from marketplace.scenarios import service
from marketplace.scenarios.lookup import AdminScenario, find_scenario, find_scenario_version
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

Search = Annotated[str | None, Query(max_length=200)]


@router.get("")
async def list_scenarios(
    _admin: Admin,
    session: DbSession,
    page: LimitParams,
    review_status: Annotated[ReviewStatus | None, Query(alias="reviewStatus")] = None,
    search: Search = None,
) -> Envelope[AdminScenarioList]:
    """Every scenario with counts per review status (counts share the search, ignore the
    filter). A scenario's status is its newest version's, or taken_down."""
    rows, total, counts = await service.admin_scenarios(session, page, review_status, search)
    return Envelope(
        data=AdminScenarioList(
            items=[scenario_out(s) for s in rows],
            total=total,
            page=page.page,
            limit=page.size,
            counts=StatusCounts(**counts),
        )
    )


# Static paths before /{scenario_id}, so "versions" is never read as a scenario id.


@router.get("/versions/pending")
async def list_versions(
    _admin: Admin,
    session: DbSession,
    page: LimitParams,
    review_status: Annotated[
        ReviewStatus | Literal["all"], Query(alias="reviewStatus")
    ] = ReviewStatus.PENDING,
    search: Search = None,
) -> Envelope[AdminScenarioVersionList]:
    """Versions across scenarios (the review queue); reviewStatus defaults to pending,
    `all` lists every state."""
    wanted = None if review_status == "all" else str(review_status)
    rows, total, counts = await service.admin_versions(session, page, wanted, search)
    labels = await reviewer_labels(session, (v.reviewed_by for v, _ in rows))
    return Envelope(
        data=AdminScenarioVersionList(
            items=[admin_version_out(v, s, labels) for v, s in rows],
            total=total,
            page=page.page,
            limit=page.size,
            counts=StatusCounts(**counts),
        )
    )


@router.post("/versions/{version_id}/review")
async def review_version(
    version_id: str, body: VersionReviewIn, admin: Admin, session: DbSession
) -> Envelope[ScenarioVersionOut]:
    """Approve (current when it is the newest approved) or reject a pending version;
    anything but a pending version is 409 INVALID_STATE. Writes the audit record."""
    version = await find_scenario_version(session, version_id)
    scenario = await engine.lock_scenario(session, version.scenario_id)
    version = await find_scenario_version(session, version_id, lock=True)
    await engine.review_scenario_version(
        session,
        scenario,
        version,
        approved=body.approved,
        reviewer_id=admin.id,
        note=body.review_note,
    )
    return Envelope(data=version_out(version))


@router.get("/versions/{version_id}/download")
async def download_version(
    version_id: str, request: Request, _admin: Admin, session: DbSession
) -> Envelope[ScenarioDownloadOut]:
    """Download information for any version with a package, pending ones included."""
    version = await find_scenario_version(session, version_id)
    scenario = await find_scenario(session, version.scenario_id)
    return Envelope(data=await download_info(request, scenario.id, version))


@router.get("/{scenario_id}")
async def scenario_detail_view(
    scenario: AdminScenario, session: DbSession
) -> Envelope[ScenarioDetail]:
    """One scenario, any state, with every version."""
    versions = await service.versions_of(session, scenario.id)
    return Envelope(data=scenario_detail(scenario, versions))


@router.get("/{scenario_id}/versions")
async def scenario_versions(
    scenario: AdminScenario, session: DbSession
) -> Envelope[ScenarioVersionItems]:
    """All versions of a scenario, every state, newest first."""
    versions = await service.versions_of(session, scenario.id)
    return Envelope(data=ScenarioVersionItems(items=[version_out(v) for v in versions]))
