"""The publisher's plugins: the list (review status and the reviewer's note), a plugin's
page (versions, findings, rollout, 30 days of installs and uninstalls, ratings) and a
version's page (findings and inspection). Ownership is the API's own check
(`publishing.lookup`): the owner, or a member of the plugin's organization, read now."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Query, Request, Response
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.auth.deps import verified_developer
from marketplace.db import DbSession
from marketplace.delivery import stats
from marketplace.errors import AppError
from marketplace.kit.pagination import Page
from marketplace.models import Plugin, PluginVersion, Rating
from marketplace.orgs import service as org_service
from marketplace.plugins.kind import PLUGINS
from marketplace.portal.chart import installs_chart
from marketplace.publishing import queries
from marketplace.publishing.audit import Trigger
from marketplace.publishing.lookup import (
    find_version,
    owned_item,
    owned_item_for_write,
    owned_version,
)
from marketplace.web.deps import PostedForm, SignedInAccount
from marketplace.web.findings import counts, grouped
from marketplace.web.http import page, redirect, site_router
from marketplace.web.inspection import load_inspection
from marketplace.web.rollout_forms import DONE as ROLLOUT_DONE
from marketplace.web.rollout_forms import NOTICES, rollout_move
from marketplace.web.sites import PORTAL

router = site_router(PORTAL)

PAGE_SIZE = 50
CHART_DAYS = 30
RATINGS_SHOWN = 50


@dataclass(frozen=True)
class RatingRow:
    """A rating as its plugin's publisher sees it: no rater's name (the public API shows
    none either)."""

    score: int
    comment: str | None
    created_at: datetime


@router.get("/portal")
async def my_plugins(
    request: Request,
    account: SignedInAccount,
    db: DbSession,
    page_number: Annotated[int, Query(alias="page", ge=1, le=100_000)] = 1,
) -> Response:
    plugins, total = await queries.developer_items(
        db, PLUGINS, account.user, Page(page_number, PAGE_SIZE), None
    )
    return page(
        request,
        "plugins.html",
        title="Your plugins",
        nav="plugins",
        plugins=plugins,
        orgs=await org_service.org_refs(db, (p.org_id for p in plugins)),
        page_number=page_number,
        pages=max(1, -(-total // PAGE_SIZE)),
        total=total,
    )


async def _ratings(session: AsyncSession, plugin_id: str) -> list[RatingRow]:
    rows = await session.execute(
        select(Rating.score, Rating.comment, Rating.created_at)
        .where(Rating.plugin_id == plugin_id)
        .order_by(Rating.created_at.desc(), Rating.id)
        .limit(RATINGS_SHOWN)
    )
    return [RatingRow(score, comment, created) for score, comment, created in rows]


def _in_motion(version: PluginVersion) -> bool:
    """A version whose rollout can still move (or was halted): its card is on the page."""
    if version.channel != "stable":
        return False
    if version.review_status == "pending":
        return True
    return version.review_status == "approved" and version.rollout_state != "full"


async def _plugin_page(
    request: Request,
    db: AsyncSession,
    plugin: Plugin,
    *,
    notice: str | None = None,
    error: str | None = None,
    reason: str = "",
    status: int = 200,
) -> Response:
    versions = await queries.versions_of(db, PLUGINS, plugin.id)
    days = (await stats.plugin_stats(db, plugin.id, CHART_DAYS)).days
    current = next((v for v in versions if v.version == plugin.latest_version), None)
    return page(
        request,
        "plugin.html",
        status=status,
        title=plugin.name,
        nav="plugins",
        plugin=plugin,
        org=org_service.pick(await org_service.org_refs(db, [plugin.org_id]), plugin.org_id),
        versions=versions,
        in_motion=[v for v in versions if _in_motion(v)],
        finding_counts={v.id: counts(v.findings) for v in versions},
        current=current,
        inspection=await load_inspection(db, current) if current is not None else None,
        chart=installs_chart(days),
        ratings=await _ratings(db, plugin.id),
        notice=notice,
        error=error,
        reason=reason,
    )


@router.get("/portal/plugins/{plugin_id}")
async def plugin_page(
    request: Request,
    plugin_id: str,
    account: SignedInAccount,
    db: DbSession,
    done: Annotated[str | None, Query(max_length=40)] = None,
) -> Response:
    plugin = await owned_item(PLUGINS, plugin_id, account.user, db)
    return await _plugin_page(request, db, plugin, notice=NOTICES.get(done or ""))


@router.get("/portal/plugins/{plugin_id}/versions/{version_id}")
async def version_page(
    request: Request, plugin_id: str, version_id: str, account: SignedInAccount, db: DbSession
) -> Response:
    plugin = await owned_item(PLUGINS, plugin_id, account.user, db)
    version = await find_version(db, PLUGINS, version_id)
    if version.plugin_id != plugin.id:
        raise PLUGINS.version_not_found()
    return page(
        request,
        "version.html",
        title=f"{plugin.name} {version.version}",
        nav="plugins",
        plugin=plugin,
        version=version,
        finding_groups=grouped(version.findings),
        inspection=await load_inspection(db, version),
    )


@router.post("/portal/plugins/{plugin_id}/versions/{version_id}/rollout")
async def move_rollout(
    request: Request,
    plugin_id: str,
    version_id: str,
    account: SignedInAccount,
    form: PostedForm,
    db: DbSession,
) -> Response:
    """The API's developer rollout moves: a verified identity, the ownership check, the
    plugin then the version locked, audited with trigger developer."""
    user = await verified_developer(account.user, db)
    plugin = await owned_item_for_write(PLUGINS, plugin_id, user, db, None)
    version = await owned_version(db, PLUGINS, plugin, version_id)
    reason = form.text("reason")
    try:
        move = rollout_move(form, Trigger.DEVELOPER)
        await move(db, plugin, version, user.id)
    except ValueError as error:
        return await _plugin_page(request, db, plugin, error=str(error), reason=reason, status=400)
    except AppError as error:
        await db.rollback()
        plugin = await owned_item(PLUGINS, plugin_id, user, db)
        return await _plugin_page(
            request, db, plugin, error=error.message, reason=reason, status=error.status_code
        )
    done = ROLLOUT_DONE[form.text("action")]
    return redirect(f"/portal/plugins/{plugin.id}?done={done}#rollout-{version.id}")
