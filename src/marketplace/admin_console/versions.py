"""A version's page (plugins and scenarios alike): what it is, what the checks found,
what changed, its history, and the decision."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.admin_console.changes import load_changes
from marketplace.admin_console.history import developer_rejections, item_audit
from marketplace.admin_console.kinds import AUDIT_LINKS, ConsoleKind, console_kind, item_title
from marketplace.admin_console.review_forms import DecisionRefused, decision_of
from marketplace.db import DbSession
from marketplace.errors import AppError
from marketplace.kit.state import AppSettings
from marketplace.models import PluginVersion, ReviewStatus, User
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing import queries, review
from marketplace.publishing.audit import Trigger
from marketplace.publishing.downloads import package_link
from marketplace.publishing.lookup import find_item, find_version, locked_version_with_item
from marketplace.publishing.schemas import VersionReviewIn
from marketplace.publishing.takedown import take_down_version
from marketplace.publishing.takedown_endpoints import TakedownIn
from marketplace.storage.base import BlobStore
from marketplace.storage.deps import BlobStoreDep
from marketplace.trust.deps import KeyringDep
from marketplace.web.deps import PostedForm, SignedInAccount
from marketplace.web.findings import counts, grouped
from marketplace.web.forms import first_problem
from marketplace.web.http import page, redirect, site_router
from marketplace.web.inspection import load_inspection
from marketplace.web.rollout_forms import DONE as ROLLOUT_DONE
from marketplace.web.rollout_forms import NOTICES as ROLLOUT_NOTICES
from marketplace.web.rollout_forms import rollout_move
from marketplace.web.sites import CONSOLE

router = site_router(CONSOLE)

DONE = {
    "approved": "Version approved: it is now the current version.",
    "rejected": "Version rejected.",
    "taken_down": "Version taken down: it is in the signed revocation list now.",
} | ROLLOUT_NOTICES


async def _render(
    request: Request,
    db: AsyncSession,
    store: BlobStore,
    pages: ConsoleKind,
    version_id: str,
    *,
    error: str | None = None,
    note: str = "",
    reason: str = "",
    status: int = 200,
) -> Response:
    kind = pages.kind
    version = await find_version(db, kind, version_id)
    item = await find_item(db, kind, kind.item_id_of(version))
    versions = await queries.versions_of(db, kind, item.id)
    owner = await db.get(User, item.owner_id)
    audit = await item_audit(db, kind, item.id, [v.id for v in versions])
    labels = await queries.reviewer_labels(db, (v.reviewed_by for v in versions))
    done = request.query_params.get("done", "")
    return page(
        request,
        "version.html",
        status=status,
        title=f"{item_title(item)} {version.version}",
        nav="queue",
        pages=pages,
        kind=kind,
        item=item,
        item_title=item_title(item),
        version=version,
        owner=owner,
        manifest=pages.manifest_of(version),
        finding_groups=grouped(version.findings),
        finding_counts=counts(version.findings),
        changes=await load_changes(db, store, kind, version),
        # Plugin versions only: a scenario runs no server of its own.
        inspection=(
            await load_inspection(db, version) if isinstance(version, PluginVersion) else None
        ),
        versions=versions,
        labels=labels,
        rejections=await developer_rejections(db, kind, item.owner_id, item.id),
        audit=audit,
        links=AUDIT_LINKS,
        pending=version.review_status == ReviewStatus.PENDING,
        approved=version.review_status == ReviewStatus.APPROVED,
        error=error,
        note=note,
        reason=reason,
        notice=DONE.get(done) if error is None else None,
    )


@router.get("/console/{slug}/versions/{version_id}")
async def version_page(
    request: Request,
    slug: str,
    version_id: str,
    _reviewer: SignedInAccount,
    db: DbSession,
    store: BlobStoreDep,
) -> Response:
    return await _render(request, db, store, console_kind(slug), version_id)


@router.post("/console/{slug}/versions/{version_id}")
async def review_version(
    request: Request,
    slug: str,
    version_id: str,
    reviewer: SignedInAccount,
    form: PostedForm,
    db: DbSession,
    store: BlobStoreDep,
    keyring: KeyringDep,
) -> Response:
    """The API's version review (publishing.review.decide), with its audit record."""
    pages = console_kind(slug)
    try:
        decision, _ = decision_of(form, VersionReviewIn)
    except DecisionRefused as refused:
        return await _render(
            request, db, store, pages, version_id, error=refused.message,
            note=form.text("note"), status=400,
        )  # fmt: skip
    item, version = await locked_version_with_item(db, pages.kind, version_id)
    try:
        await review.decide(
            db,
            pages.kind,
            item,
            version,
            approved=decision.approved,
            reviewer_id=reviewer.user.id,
            note=decision.note,
            keyring=keyring,
        )
    except AppError as error:
        # Nothing of the refused move is kept; the page shows why, as it is now.
        await db.rollback()
        return await _render(
            request, db, store, pages, version_id, error=error.message,
            note=form.text("note"), status=error.status_code,
        )  # fmt: skip
    outcome = "approved" if decision.approved else "rejected"
    return redirect(f"{pages.version_url(version_id)}?done={outcome}")


@router.post("/console/{slug}/versions/{version_id}/takedown")
async def take_down(
    request: Request,
    slug: str,
    version_id: str,
    reviewer: SignedInAccount,
    form: PostedForm,
    db: DbSession,
    store: BlobStoreDep,
) -> Response:
    """The API's version takedown (publishing.takedown), with its audit and revocation."""
    pages = console_kind(slug)
    reason = form.text("reason")
    try:
        body = TakedownIn.model_validate({"reason": reason})
    except ValidationError as error:
        message = first_problem(error, {"reason": "Reason"})
        return await _render(
            request, db, store, pages, version_id, error=message, reason=reason, status=400
        )
    item, version = await locked_version_with_item(db, pages.kind, version_id)
    try:
        await take_down_version(
            db,
            pages.kind,
            item,
            version,
            actor_id=reviewer.user.id,
            reason=body.reason,
            trigger=Trigger.ADMIN,
        )
    except AppError as error:
        await db.rollback()
        return await _render(
            request, db, store, pages, version_id, error=error.message, reason=reason,
            status=error.status_code,
        )  # fmt: skip
    return redirect(f"{pages.version_url(version_id)}?done=taken_down")


@router.post("/console/plugins/versions/{version_id}/rollout")
async def move_rollout(
    request: Request,
    version_id: str,
    reviewer: SignedInAccount,
    form: PostedForm,
    db: DbSession,
    store: BlobStoreDep,
) -> Response:
    """The API's rollout moves (delivery.rollout), audited with trigger admin."""
    pages = console_kind("plugins")
    action, reason = form.text("action"), form.text("reason")
    try:
        move = rollout_move(form, Trigger.ADMIN)
    except ValueError as error:
        return await _render(
            request, db, store, pages, version_id, error=str(error), reason=reason, status=400
        )
    plugin, version = await locked_version_with_item(db, PLUGINS, version_id)
    try:
        await move(db, plugin, version, reviewer.user.id)
    except AppError as error:
        await db.rollback()
        return await _render(
            request, db, store, pages, version_id, error=error.message, reason=reason,
            status=error.status_code,
        )  # fmt: skip
    return redirect(f"{pages.version_url(version_id)}?done={ROLLOUT_DONE[action]}")


@router.get("/console/{slug}/versions/{version_id}/package")
async def version_package(
    slug: str,
    version_id: str,
    _reviewer: SignedInAccount,
    db: DbSession,
    store: BlobStoreDep,
    settings: AppSettings,
) -> Response:
    """The package, through the same short-lived link the admin API hands out."""
    pages = console_kind(slug)
    version: Any = await find_version(db, pages.kind, version_id)
    item = await find_item(db, pages.kind, pages.kind.item_id_of(version))
    link = await package_link(store, settings.download_url_seconds, pages.kind, item, version)
    return redirect(link.url)
