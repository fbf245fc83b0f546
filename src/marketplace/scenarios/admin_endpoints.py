"""Scenario review by administrators (CONTRACT 8): prefix /api/v1/admin/scenarios.

Scenarios are reviewed per version, by the core's version queue and review moves.
"""

from __future__ import annotations

from marketplace.auth.deps import Admin
from marketplace.db import DbSession
from marketplace.errors import InvalidState
from marketplace.kit.error_codes import raises
from marketplace.kit.pagination import LimitParams
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import ERROR_RESPONSES, Envelope
from marketplace.kit.state import AppSettings
from marketplace.models import ReviewStatus
from marketplace.publishing import endpoints, queries
from marketplace.publishing.audit import Trigger
from marketplace.publishing.endpoints import ItemStatus, QueueStatus, Search
from marketplace.publishing.lookup import find_version
from marketplace.publishing.releases import ReleasesDep
from marketplace.publishing.schemas import VersionDiffOut, VersionReviewIn
from marketplace.publishing.takedown import take_down_version
from marketplace.publishing.takedown_endpoints import TAKEDOWN_DESCRIPTION, TakedownIn
from marketplace.scenarios.kind import SCENARIOS
from marketplace.scenarios.lookup import AdminScenario, AdminScenarioVersionForWrite
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
from marketplace.storage.deps import BlobStoreDep
from marketplace.trust.deps import KeyringDep

router = api_router(
    prefix="/api/v1/admin/scenarios",
    tags=["admin: scenarios"],
    route_class=ScenarioRoute,
    responses=ERROR_RESPONSES,
)


@router.get("")
async def list_scenarios(
    _admin: Admin,
    session: DbSession,
    page: LimitParams,
    review_status: ItemStatus = None,
    search: Search = None,
) -> Envelope[AdminScenarioList]:
    """Every scenario with counts per review status (counts share the search, ignore the
    filter). A scenario's status is its newest version's, or taken_down."""
    scenarios = await endpoints.admin_items(
        session,
        SCENARIOS,
        page,
        review_status,
        search,
        page_model=AdminScenarioList,
        item_out=lambda scenario, _labels: scenario_out(scenario),
    )
    return Envelope(data=scenarios)


@router.get("/versions/pending")
async def list_scenario_versions(
    _admin: Admin,
    session: DbSession,
    page: LimitParams,
    review_status: QueueStatus = ReviewStatus.PENDING,
    search: Search = None,
) -> Envelope[AdminScenarioVersionList]:
    """Versions across scenarios (the review queue), newest first; reviewStatus defaults to
    pending, `all` lists every state."""
    versions = await endpoints.version_queue(
        session,
        SCENARIOS,
        page,
        review_status,
        search,
        page_model=AdminScenarioVersionList,
        item_out=admin_version_out,
    )
    return Envelope(data=versions)


@router.post("/versions/{version_id}/review")
@raises(SCENARIOS.version_not_found(), InvalidState)
async def review_scenario_version(
    version_id: str, body: VersionReviewIn, admin: Admin, session: DbSession, keyring: KeyringDep
) -> Envelope[ScenarioVersionOut]:
    """Approve (the version becomes current, whatever its number) or reject a pending
    version; anything but a pending version is 409 INVALID_STATE. Writes the audit record
    in the same transaction."""
    version = await endpoints.review_version(session, SCENARIOS, version_id, body, admin, keyring)
    return Envelope(data=version_out(version))


@router.get("/versions/{version_id}/download")
@raises(SCENARIOS.version_not_found())
async def download_scenario_version(
    version_id: str,
    _admin: Admin,
    session: DbSession,
    store: BlobStoreDep,
    settings: AppSettings,
    releases: ReleasesDep,
) -> Envelope[ScenarioDownloadOut]:
    """Download information for any scenario version, pending ones included (reviewers read
    them); `release` is the signed release record, null for a version never approved."""
    scenario, version, release = await endpoints.version_for_download(
        session, SCENARIOS, releases, version_id
    )
    info = await download_info(store, settings.download_url_seconds, scenario, version, release)
    return Envelope(data=info)


@router.get("/versions/{version_id}/diff")
@raises(SCENARIOS.version_not_found())
async def diff_scenario_version(
    version_id: str, _admin: Admin, session: DbSession, store: BlobStoreDep
) -> Envelope[VersionDiffOut]:
    """What a scenario version changes against the last approved version of its scenario
    (base: the current version unless it is this one, else the newest approved by creation;
    null for a first version): files added, removed and changed (paths relative to the
    package root), top-level manifest keys, new permissions."""
    return Envelope(data=await endpoints.version_diff(session, store, SCENARIOS, version_id))


@router.get("/versions/{version_id}")
@raises(SCENARIOS.version_not_found())
async def scenario_version_detail(
    version_id: str, _admin: Admin, session: DbSession
) -> Envelope[ScenarioVersionOut]:
    """One scenario version, in any state."""
    return Envelope(data=version_out(await find_version(session, SCENARIOS, version_id)))


@router.post("/versions/{version_id}/takedown", description=TAKEDOWN_DESCRIPTION)
async def take_down_scenario_version(
    body: TakedownIn, admin: Admin, found: AdminScenarioVersionForWrite, session: DbSession
) -> Envelope[ScenarioVersionOut]:
    scenario, version = found
    await take_down_version(
        session,
        SCENARIOS,
        scenario,
        version,
        actor_id=admin.id,
        reason=body.reason,
        trigger=Trigger.ADMIN,
    )
    return Envelope(data=version_out(version))


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
