"""The review queue: what waits for a decision, oldest first, in four tabs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from math import ceil
from typing import Annotated, Any

from fastapi import Query, Request, Response
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.accounts import service as accounts
from marketplace.admin_console.kinds import PLUGIN_PAGES, SCENARIO_PAGES, item_title
from marketplace.db import DbSession
from marketplace.kit.pagination import Page
from marketplace.models import IdentityStatus, PluginVersion, ReviewStatus, RolloutState
from marketplace.packages.manifest import version_sort_key
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing import queries
from marketplace.web.deps import SignedInAccount
from marketplace.web.findings import counts
from marketplace.web.http import page, site_router
from marketplace.web.inspection import Badge, queue_badges
from marketplace.web.sites import CONSOLE

router = site_router(CONSOLE)

PAGE_SIZE = 20
PENDING = ReviewStatus.PENDING.value


@dataclass(frozen=True)
class QueueRow:
    url: str
    title: str
    detail: str
    developer: str
    waiting_since: datetime | None
    findings: dict[str, int] | None  # None where a row has no findings of its own
    inspection: tuple[Badge, ...]  # a plugin version's inspection: running, or what it found


Loader = Callable[[AsyncSession, Page, str | None], Awaitable[tuple[list[QueueRow], int]]]


@dataclass(frozen=True)
class Tab:
    slug: str
    label: str
    load: Loader


async def _labels(db: AsyncSession, user_ids: list[str]) -> dict[str, str]:
    return await queries.reviewer_labels(db, user_ids)


async def _newest_pending_findings(
    db: AsyncSession, plugin_ids: list[str]
) -> dict[str, tuple[str, dict[str, int], tuple[Badge, ...]]]:
    """Per plugin, its newest pending version with that version's finding counts and
    inspection badges (the inspections come in one more query, selectin)."""
    rows = await db.scalars(
        PLUGINS.loading_versions(
            select(PluginVersion).where(
                PluginVersion.plugin_id.in_(plugin_ids), PluginVersion.review_status == PENDING
            )
        )
    )
    newest: dict[str, PluginVersion] = {}
    for version in rows:
        held = newest.get(version.plugin_id)
        if held is None or version_sort_key(version.version) > version_sort_key(held.version):
            newest[version.plugin_id] = version
    return {pid: (v.version, counts(v.findings), queue_badges(v)) for pid, v in newest.items()}


async def _plugins(db: AsyncSession, at: Page, search: str | None) -> tuple[list[QueueRow], int]:
    items, total, _ = await queries.admin_items(db, PLUGINS, at, PENDING, search, oldest_first=True)
    labels = await _labels(db, [p.owner_id for p in items])
    pending = await _newest_pending_findings(db, [p.id for p in items])
    rows = []
    for plugin in items:
        version, found, badges = pending.get(plugin.id, (None, None, ()))
        detail = f"{plugin.type} · {plugin.category}"
        detail += f" · first version {version}" if version else " · no pending version"
        rows.append(
            QueueRow(
                url=f"/console/plugins/{plugin.id}",
                title=item_title(plugin),
                detail=detail,
                developer=labels.get(plugin.owner_id, plugin.owner_id),
                waiting_since=plugin.created_at,
                findings=found,
                inspection=badges,
            )
        )
    return rows, total


def _versions_loader(pages: Any) -> Loader:
    async def load(db: AsyncSession, at: Page, search: str | None) -> tuple[list[QueueRow], int]:
        pairs, total, _ = await queries.admin_versions(
            db, pages.kind, at, PENDING, search, oldest_first=True, work_only=True
        )
        labels = await _labels(db, [item.owner_id for _, item in pairs])
        rows = [
            QueueRow(
                url=pages.version_url(version.id),
                title=item_title(item),
                detail=f"version {version.version}",
                developer=labels.get(item.owner_id, item.owner_id),
                waiting_since=version.created_at,
                findings=counts(version.findings),
                # PluginVersion.inspection is selectin-loaded: one query for the page.
                inspection=queue_badges(version) if isinstance(version, PluginVersion) else (),
            )
            for version, item in pairs
        ]
        return rows, total

    return load


async def _halted(db: AsyncSession, at: Page, search: str | None) -> tuple[list[QueueRow], int]:
    """Approved plugin versions whose rollout is halted: each waits for a resume, a
    takedown, or a fixed version."""
    pairs, total, _ = await queries.admin_versions(
        db,
        PLUGINS,
        at,
        ReviewStatus.APPROVED.value,
        search,
        oldest_first=True,
        where=PluginVersion.rollout_state == RolloutState.HALTED.value,
    )
    labels = await _labels(db, [item.owner_id for _, item in pairs])
    rows = [
        QueueRow(
            url=PLUGIN_PAGES.version_url(version.id),
            title=item_title(item),
            detail=f"version {version.version} · halted at {version.rollout_percent}%: "
            f"{version.rollout_halted_reason or ''}",
            developer=labels.get(item.owner_id, item.owner_id),
            waiting_since=version.rollout_updated_at or version.created_at,
            findings=counts(version.findings),
            inspection=queue_badges(version),
        )
        for version, item in pairs
    ]
    return rows, total


async def _developers(db: AsyncSession, at: Page, search: str | None) -> tuple[list[QueueRow], int]:
    pairs, total, _ = await accounts.list_developers(
        db,
        at,
        identity_status=IdentityStatus.PENDING,
        search=search,
        oldest_submission_first=True,
    )
    rows = [
        QueueRow(
            url=f"/console/developers/{user.id}",
            title=profile.display_name,
            detail=" · ".join(x for x in (profile.real_name, profile.organization) if x),
            developer=user.email,
            waiting_since=profile.submitted_at,
            findings=None,
            inspection=(),
        )
        for user, profile in pairs
    ]
    return rows, total


TABS = (
    Tab("plugins", "Plugins", _plugins),
    Tab("plugin-versions", "Plugin versions", _versions_loader(PLUGIN_PAGES)),
    Tab("scenario-versions", "Scenario versions", _versions_loader(SCENARIO_PAGES)),
    Tab("developers", "Developer identities", _developers),
    Tab("halted-rollouts", "Halted rollouts", _halted),
)
TAB_BY_SLUG = {t.slug: t for t in TABS}


@router.get("/console")
@router.get("/console/queue")
async def queue(
    request: Request,
    _reviewer: SignedInAccount,
    db: DbSession,
    tab: Annotated[str | None, Query(max_length=40)] = None,
    q: Annotated[str | None, Query(max_length=200)] = None,
    page_number: Annotated[int, Query(alias="page", ge=1, le=1_000_000)] = 1,
) -> Response:
    search = q.strip() if q and q.strip() else None
    waiting = {t.slug: (await t.load(db, Page(1, 1), search))[1] for t in TABS}
    if tab not in TAB_BY_SLUG:
        # Open the first tab with work in it.
        tab = next((t.slug for t in TABS if waiting[t.slug]), TABS[0].slug)
    current = TAB_BY_SLUG[tab]
    rows, total = await current.load(db, Page(page_number, PAGE_SIZE), search)
    return page(
        request,
        "queue.html",
        title="Review queue",
        nav="queue",
        tabs=TABS,
        tab=current,
        waiting=waiting,
        rows=rows,
        total=total,
        search=search or "",
        page_number=page_number,
        pages=max(1, ceil(total / PAGE_SIZE)),
    )
