"""Delivery routes (CONTRACT 16): the update check, signals, statistics and rollout moves.

Rollout moves reach the version through the kind's write dependencies (item locked, then
the version), so the order of checks is the one every version write has (CONTRACT 1).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Depends, Query, Request, Response, status
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.auth.deps import Admin, CurrentUser, OptionalUser, VerifiedDeveloper
from marketplace.catalog.cache import catalog_cache
from marketplace.catalog.service import find_plugin
from marketplace.db import DbSession, end_checks
from marketplace.delivery import rollout, signals, stats, updates
from marketplace.delivery.downloads import download_counts
from marketplace.delivery.schemas import (
    HaltIn,
    PluginStats,
    ReportIn,
    ResumeIn,
    RolloutIn,
    SignalOut,
    UninstallIn,
    UpdateCheckIn,
    UpdateCheckOut,
    UpdateOfferOut,
)
from marketplace.errors import PluginNotFound, VersionNotApproved, VersionNotFound
from marketplace.kit.error_codes import raises
from marketplace.kit.routing import api_router, reads_only
from marketplace.kit.schemas import Envelope
from marketplace.kit.sql import plugin_named
from marketplace.models import Plugin, PluginSignal, PluginVersion, ReviewStatus, SignalKind
from marketplace.plugins.lookup import (
    AdminPluginVersionForWrite,
    OwnedPlugin,
    OwnedPluginVersionForWrite,
)
from marketplace.plugins.schemas import VersionOut
from marketplace.plugins.views import version_out
from marketplace.publishing.audit import Trigger

public_router = api_router(prefix="/api/v1/plugins", tags=["marketplace: delivery"])
developer_router = api_router(prefix="/api/v1/developer/plugins", tags=["developer: delivery"])
admin_router = api_router(prefix="/api/v1/admin/plugins", tags=["admin: delivery"])

REPEATED: dict[int | str, dict[str, Any]] = {
    200: {"description": "Already signalled today: counted once"}
}
DISTRIBUTED = (ReviewStatus.APPROVED, ReviewStatus.TAKEN_DOWN)


@public_router.post("/updates")
@reads_only
async def check_updates(
    body: UpdateCheckIn, request: Request, session: DbSession, _user: OptionalUser
) -> Envelope[UpdateCheckOut]:
    """What each installed plugin should move to: an update, a rollback off a halted or
    revoked version, or nothing (reason up_to_date, rolling_not_selected, not_listed). An
    install is in a rolling version's share by a hash of its installId, so its answer
    stays the same while the rollout does. Up to 500 plugins a request."""
    items = [(item["pluginKey"], item["version"]) for item in body.items]
    offers = await updates.check(
        session, catalog_cache(request.app), body.install_id, body.channel, items
    )
    # Built without validation (model_construct): our own values, up to 500 of them.
    answers: list[UpdateOfferOut] = [
        {"pluginKey": key, "current": version, "offered": found.offered, "reason": found.reason}
        for (key, version), found in zip(items, offers, strict=True)
    ]
    return Envelope(data=UpdateCheckOut.model_construct(items=answers))


# ---------------------------------------------------------------- signals


@raises(PluginNotFound)
async def _signalled_plugin(plugin_id: str, _user: CurrentUser, session: DbSession) -> Plugin:
    """Any plugin, listed or not: its users may still uninstall it or report it."""
    plugin = await find_plugin(session, plugin_id)
    if plugin is None:
        raise PluginNotFound(details=plugin_named(plugin_id))
    return plugin


SignalledPlugin = Annotated[Plugin, Depends(_signalled_plugin)]


async def _distributed_version(
    session: AsyncSession, plugin: Plugin, version: str
) -> PluginVersion:
    """The version a signal names: one that was distributed (approved, or since withdrawn)."""
    row = await session.scalar(
        select(PluginVersion).where(
            PluginVersion.plugin_id == plugin.id, PluginVersion.version == version
        )
    )
    if row is None:
        raise VersionNotFound()
    if row.review_status not in DISTRIBUTED:
        raise VersionNotApproved("This version was never distributed")
    return row


def _signal_out(signal: PluginSignal) -> SignalOut:
    return SignalOut(
        id=signal.id,
        plugin_id=signal.plugin_id,
        version=signal.version,
        kind=signal.kind,
        day=signal.day,
    )


async def _record(
    session: AsyncSession,
    request: Request,
    response: Response,
    user_id: str,
    plugin: Plugin,
    version: str,
    kind: SignalKind,
    message: str | None = None,
) -> SignalOut:
    found = await _distributed_version(session, plugin, version)
    signal, created = await signals.record(
        session,
        request.app.state.settings,
        user_id=user_id,
        plugin=plugin,
        version=found,
        kind=kind,
        message=message,
    )
    if not created:
        response.status_code = status.HTTP_200_OK
    return _signal_out(signal)


@public_router.post(
    "/uninstall/{plugin_id}", status_code=status.HTTP_201_CREATED, responses=REPEATED
)
@raises(VersionNotFound, VersionNotApproved)
async def uninstall(
    user: CurrentUser,
    plugin: SignalledPlugin,
    body: UninstallIn,
    request: Request,
    response: Response,
    session: DbSession,
) -> Envelope[SignalOut]:
    """Report that the caller uninstalled a version: once a day per version (201 first,
    200 after). A rolling version whose users uninstall it halts itself."""
    signal = await _record(
        session, request, response, user.id, plugin, body.version, SignalKind.UNINSTALL
    )
    return Envelope(data=signal)


@public_router.post("/report/{plugin_id}", status_code=status.HTTP_201_CREATED, responses=REPEATED)
@raises(VersionNotFound, VersionNotApproved)
async def report(
    user: CurrentUser,
    plugin: SignalledPlugin,
    body: ReportIn,
    request: Request,
    response: Response,
    session: DbSession,
) -> Envelope[SignalOut]:
    """Report a crash or abuse of a version: once a day per version and kind (201 first,
    200 after). A rolling version whose users report crashes halts itself."""
    kind = SignalKind(body.kind)
    signal = await _record(
        session, request, response, user.id, plugin, body.version, kind, body.message
    )
    return Envelope(data=signal)


# ---------------------------------------------------------------- statistics


@developer_router.get("/{plugin_id}/stats")
async def plugin_stats(
    plugin: OwnedPlugin,
    request: Request,
    session: DbSession,
    days: Annotated[int, Query(ge=1, le=365)] = 30,
) -> Envelope[PluginStats]:
    """Daily counts (UTC days, oldest first, the last one today, every day present) and
    all-time counts per version. Read from counters kept with each event (downloads: at
    most a second behind)."""
    # This process's own pending download counts first, so its answers are not behind; the
    # request's read ends first (no request holds a pooled connection waiting for another).
    await end_checks(session)
    await download_counts(request.app).flush()
    return Envelope(data=await stats.plugin_stats(session, plugin.id, days))


# ---------------------------------------------------------------- rollout moves

ROLLOUT_PATH = "/{plugin_id}/versions/{version_id}/rollout"
ADMIN_ROLLOUT_PATH = "/versions/{version_id}/rollout"
SET_DESCRIPTION = (
    "Set the share of installs (1-100 %) the update check offers a stable version to. A "
    "pending version's percent may be set freely; once approved below 100 it is rolling and "
    "its percent may only grow; 100 makes it full, and a full version never rolls again. A "
    "halted version takes no PUT until resumed. Anything else is 409 INVALID_STATE."
)
HALT_DESCRIPTION = (
    "Halt a rolling approved version: nobody is offered it, and installs running it are "
    "offered the version below it. Otherwise 409 INVALID_STATE."
)
RESUME_DESCRIPTION = "Resume a halted rollout at its percent (no body). Otherwise 409."
NoBody = Annotated[ResumeIn | None, Body()]


@developer_router.put(ROLLOUT_PATH, description=SET_DESCRIPTION)
async def set_own_rollout(
    body: RolloutIn,
    user: VerifiedDeveloper,
    found: OwnedPluginVersionForWrite,
    session: DbSession,
) -> Envelope[VersionOut]:
    plugin, version = found
    await rollout.set_percent(
        session, plugin, version, body.percent, actor_id=user.id, trigger=Trigger.DEVELOPER
    )
    return Envelope(data=version_out(version))


@developer_router.post(f"{ROLLOUT_PATH}/halt", description=HALT_DESCRIPTION)
async def halt_own_rollout(
    body: HaltIn, user: VerifiedDeveloper, found: OwnedPluginVersionForWrite, session: DbSession
) -> Envelope[VersionOut]:
    plugin, version = found
    await rollout.halt(
        session, plugin, version, body.reason, actor_id=user.id, trigger=Trigger.DEVELOPER
    )
    return Envelope(data=version_out(version))


@developer_router.post(f"{ROLLOUT_PATH}/resume", description=RESUME_DESCRIPTION)
async def resume_own_rollout(
    user: VerifiedDeveloper,
    found: OwnedPluginVersionForWrite,
    session: DbSession,
    _body: NoBody = None,
) -> Envelope[VersionOut]:
    plugin, version = found
    await rollout.resume(session, plugin, version, actor_id=user.id, trigger=Trigger.DEVELOPER)
    return Envelope(data=version_out(version))


@admin_router.put(ADMIN_ROLLOUT_PATH, description=SET_DESCRIPTION)
async def set_rollout(
    body: RolloutIn, admin: Admin, found: AdminPluginVersionForWrite, session: DbSession
) -> Envelope[VersionOut]:
    plugin, version = found
    await rollout.set_percent(
        session, plugin, version, body.percent, actor_id=admin.id, trigger=Trigger.ADMIN
    )
    return Envelope(data=version_out(version))


@admin_router.post(f"{ADMIN_ROLLOUT_PATH}/halt", description=HALT_DESCRIPTION)
async def halt_rollout(
    body: HaltIn, admin: Admin, found: AdminPluginVersionForWrite, session: DbSession
) -> Envelope[VersionOut]:
    plugin, version = found
    await rollout.halt(
        session, plugin, version, body.reason, actor_id=admin.id, trigger=Trigger.ADMIN
    )
    return Envelope(data=version_out(version))


@admin_router.post(f"{ADMIN_ROLLOUT_PATH}/resume", description=RESUME_DESCRIPTION)
async def resume_rollout(
    admin: Admin, found: AdminPluginVersionForWrite, session: DbSession, _body: NoBody = None
) -> Envelope[VersionOut]:
    plugin, version = found
    await rollout.resume(session, plugin, version, actor_id=admin.id, trigger=Trigger.ADMIN)
    return Envelope(data=version_out(version))
