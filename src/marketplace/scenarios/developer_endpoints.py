"""Scenario developer group (seed 4.1, CONTRACT 8): prefix /api/v1/marketplace/developer.

Reading needs a developer account; every write needs a verified identity, as in the plugin
developer group. Static paths are declared before `/{scenario_id}`, and `publish` and
`scenarios` are reserved ids, so neither can be read as a scenario id.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, status
from sqlalchemy import select

from marketplace.auth.deps import Developer, VerifiedDeveloper
from marketplace.db import DbSession, WriteSessions, end_checks
from marketplace.errors import (
    InvalidState,
    ScenarioNotOwned,
    ScenarioPackageTooLarge,
    ScenarioValidationFailed,
    ScenarioVersionExists,
)
from marketplace.kit.error_codes import raises
from marketplace.kit.forms import multipart_form
from marketplace.kit.pagination import PageSizeParams
from marketplace.kit.routing import api_router, streams_body
from marketplace.kit.schemas import ERROR_RESPONSES, Envelope
from marketplace.kit.state import AppSettings
from marketplace.models import ReviewStatus, Scenario, User
from marketplace.publishing import endpoints, queries, review
from marketplace.publishing.audit import Trigger
from marketplace.publishing.endpoints import ItemStatus
from marketplace.publishing.lookup import check_owner
from marketplace.publishing.takedown import take_down_version
from marketplace.publishing.takedown_endpoints import OWN_TAKEDOWN_DESCRIPTION, TakedownIn
from marketplace.scenarios import service, uploads
from marketplace.scenarios.kind import SCENARIOS
from marketplace.scenarios.lookup import (
    OwnedScenario,
    OwnedScenarioForUpload,
    OwnedScenarioForWrite,
    OwnedScenarioVersionForWrite,
)
from marketplace.scenarios.routing import ScenarioRoute
from marketplace.scenarios.schemas import (
    DeveloperScenarioList,
    ScenarioDetail,
    ScenarioOut,
    ScenarioPublishIn,
    ScenarioTakedownOut,
    ScenarioUpdateIn,
    ScenarioVersionOut,
)
from marketplace.scenarios.views import scenario_detail, scenario_out, version_out
from marketplace.storage.deps import BlobStoreDep
from marketplace_rules.versions import SEMVER_PATTERN

router = api_router(
    prefix="/api/v1/marketplace/developer",
    tags=["developer: scenarios"],
    route_class=ScenarioRoute,
    responses=ERROR_RESPONSES,
)

PACKAGE_FORM = multipart_form(
    {
        "file": {
            "type": "string",
            "format": "binary",
            "description": ".tar.gz, at most 50 MB (setting scenario_package_max_mb)",
        },
        "version": {
            "type": "string",
            "pattern": SEMVER_PATTERN,
            "maxLength": 100,
            "description": "an existing pending version; default the newest version",
        },
    },
    ["file"],
)


@raises(ScenarioNotOwned)
async def _publish_target_owned(
    request: Request, user: VerifiedDeveloper, session: DbSession
) -> User:
    """Another developer's id is 403 SCENARIO_NOT_OWNED even when the rest of the body is
    invalid: ownership is checked before content (CONTRACT 1, order of checks)."""
    try:
        raw = await request.json()
    except ValueError:
        return user  # the body's own validation reports it
    scenario_id = raw.get("id") if isinstance(raw, dict) else None
    if isinstance(scenario_id, str):
        existing = await session.scalar(select(Scenario).where(Scenario.id == scenario_id.strip()))
        if existing is not None:
            await check_owner(session, SCENARIOS, existing, user)
    return user


PublishingDeveloper = Annotated[User, Depends(_publish_target_owned)]


@router.get("/scenarios")
async def list_own_scenarios(
    user: Developer, session: DbSession, page: PageSizeParams, review_status: ItemStatus = None
) -> Envelope[DeveloperScenarioList]:
    """The caller's scenarios in every state, newest first; filter by reviewStatus."""
    scenarios = await endpoints.own_items(
        session,
        SCENARIOS,
        user,
        page,
        review_status,
        page_model=DeveloperScenarioList,
        item_out=scenario_out,
    )
    return Envelope(data=scenarios)


# Not in CONTRACT 11 (which names the plugin route only): the owner of a scenario can pull a
# bad version of it the same way (docs/decisions.md).
@router.post("/{scenario_id}/versions/{version_id}/takedown", description=OWN_TAKEDOWN_DESCRIPTION)
async def take_down_own_scenario_version(
    body: TakedownIn,
    user: VerifiedDeveloper,
    found: OwnedScenarioVersionForWrite,
    session: DbSession,
) -> Envelope[ScenarioVersionOut]:
    scenario, version = found
    await take_down_version(
        session,
        SCENARIOS,
        scenario,
        version,
        actor_id=user.id,
        reason=body.reason,
        trigger=Trigger.DEVELOPER,
    )
    return Envelope(data=version_out(version))


@router.post("/publish", status_code=status.HTTP_201_CREATED)
@raises(ScenarioValidationFailed, ScenarioVersionExists, InvalidState)
async def publish(
    body: ScenarioPublishIn, user: PublishingDeveloper, session: DbSession
) -> Envelope[ScenarioDetail]:
    """Publish a scenario: a new id creates it, an id the caller owns gets a new version.

    The new version is pending review, with its findings (its permissions against the last
    approved version; an error would reject it). Answers the scenario with its version
    history.
    """
    existing = await session.scalar(
        select(Scenario)
        .where(Scenario.id == body.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if existing is not None:
        await check_owner(session, SCENARIOS, existing, user)
    scenario = await service.publish(session, user, body, existing)
    versions = await queries.versions_of(session, SCENARIOS, scenario.id)
    return Envelope(data=scenario_detail(scenario, versions))


@router.get("/{scenario_id}")
async def scenario_detail_view(
    scenario: OwnedScenario, session: DbSession
) -> Envelope[ScenarioDetail]:
    """One of the caller's scenarios with every version, newest first, and its review state."""
    versions = await queries.versions_of(session, SCENARIOS, scenario.id)
    return Envelope(data=scenario_detail(scenario, versions))


@router.put("/{scenario_id}")
@raises(ScenarioValidationFailed, InvalidState)
async def update_scenario(
    body: ScenarioUpdateIn, scenario: OwnedScenarioForWrite, session: DbSession
) -> Envelope[ScenarioOut]:
    """Edit the metadata of the newest version (name, nameZh, description, descriptionZh,
    category, changelog); type and permissions change only with a new version."""
    return Envelope(data=scenario_out(await service.update(session, scenario, body)))


@router.delete("/{scenario_id}")
@raises(InvalidState)
async def take_down(
    scenario: OwnedScenarioForWrite, session: DbSession
) -> Envelope[ScenarioTakedownOut]:
    """Take the scenario down: the public group stops listing and serving it."""
    await review.take_down(session, SCENARIOS, scenario)
    return Envelope(data=ScenarioTakedownOut(id=scenario.id, review_status=ReviewStatus.TAKEN_DOWN))


@router.post("/{scenario_id}/upload-package", openapi_extra=PACKAGE_FORM)
@streams_body
@raises(ScenarioValidationFailed, ScenarioVersionExists, ScenarioPackageTooLarge, InvalidState)
async def upload_package(
    request: Request,
    scenario: OwnedScenarioForUpload,
    session: DbSession,
    settings: AppSettings,
    sessions: WriteSessions,
    store: BlobStoreDep,
) -> Envelope[ScenarioVersionOut]:
    """Upload the .tar.gz package of a pending version (multipart: file, version?).

    Streamed and checked as it arrives, with the plugin packages' archive rules. A
    manifest.json is optional; one that is present must name this id and version. The
    version's findings are computed again with the package: an error rejects it at once;
    warnings and infos wait for the reviewer.
    """
    await end_checks(session)
    version = await uploads.upload_package(request, settings, sessions, store, scenario.id)
    return Envelope(data=version_out(version))
