"""Public scenarios (CONTRACT 8): prefix /api/v1/marketplace/scenarios.

Listed = not taken down and with an approved version; the public view shows the newest
approved version. Downloading needs a login.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from marketplace.auth.deps import CurrentUser, OptionalUser
from marketplace.db import DbSession
from marketplace.errors import ScenarioNotFound
from marketplace.kit.error_codes import raises
from marketplace.kit.pagination import PageSizeParams
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import ERROR_RESPONSES, Envelope
from marketplace.kit.state import AppSettings
from marketplace.publishing.releases import ReleasesDep, release_for_download
from marketplace.scenarios import service
from marketplace.scenarios.kind import SCENARIOS
from marketplace.scenarios.routing import ScenarioRoute
from marketplace.scenarios.schemas import (
    PublicScenarioList,
    PublicScenarioOut,
    ScenarioDownloadOut,
)
from marketplace.scenarios.views import download_info, public_out
from marketplace.storage.deps import BlobStoreDep

router = api_router(
    prefix="/api/v1/marketplace/scenarios",
    tags=["marketplace: scenarios"],
    route_class=ScenarioRoute,
    responses=ERROR_RESPONSES,
)


@router.get("")
async def list_scenarios(
    _user: OptionalUser,
    session: DbSession,
    page: PageSizeParams,
    q: Annotated[str | None, Query(max_length=200)] = None,
    category: Annotated[str | None, Query(max_length=64)] = None,
    scenario_type: Annotated[str | None, Query(alias="type", max_length=32)] = None,
) -> Envelope[PublicScenarioList]:
    """Listed scenarios, newest first; q matches id, names and descriptions."""
    rows, total = await service.public_scenarios(
        session, page, q=q, category=category, scenario_type=scenario_type
    )
    return Envelope(
        data=PublicScenarioList(
            items=[public_out(*row) for row in rows],
            total=total,
            page=page.page,
            page_size=page.size,
        )
    )


@router.get("/{scenario_id}")
@raises(ScenarioNotFound)
async def scenario_detail(
    scenario_id: str, _user: OptionalUser, session: DbSession
) -> Envelope[PublicScenarioOut]:
    """A listed scenario; one that is not listed is 404 SCENARIO_NOT_FOUND."""
    return Envelope(data=public_out(*await service.public_scenario(session, scenario_id)))


@router.get("/{scenario_id}/download")
@raises(ScenarioNotFound)
async def download(
    scenario_id: str,
    _user: CurrentUser,
    session: DbSession,
    store: BlobStoreDep,
    settings: AppSettings,
    releases: ReleasesDep,
) -> Envelope[ScenarioDownloadOut]:
    """Presigned URL, SHA-256 and size of the current version's package (or, when it has
    none, of the newest approved version with a package), with its signed release record."""
    scenario, _current, _owner, _name = await service.public_scenario(session, scenario_id)
    version = await service.downloadable_version(session, scenario.id)
    release = await release_for_download(releases, SCENARIOS, scenario, version)
    info = await download_info(store, settings.download_url_seconds, scenario, version, release)
    return Envelope(data=info)
