"""A plugin's own review (a developer's new plugin): approve, optionally releasing its
newest pending version at once (the API's approvePendingVersion), or reject."""

from __future__ import annotations

from fastapi import Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.admin_console.history import item_audit
from marketplace.admin_console.kinds import AUDIT_LINKS, PLUGIN_PAGES, item_title
from marketplace.admin_console.review_forms import DecisionRefused, decision_of
from marketplace.db import DbSession
from marketplace.errors import AppError
from marketplace.models import User
from marketplace.plugins import review as plugin_review
from marketplace.plugins.kind import PLUGINS
from marketplace.plugins.schemas import PluginReviewIn
from marketplace.publishing import queries
from marketplace.publishing.lookup import find_item
from marketplace.trust.deps import KeyringDep
from marketplace.web.deps import PostedForm, SignedInAccount
from marketplace.web.findings import counts
from marketplace.web.http import page, redirect, site_router
from marketplace.web.sites import CONSOLE

router = site_router(CONSOLE)

DONE = {"approved": "Plugin approved and listed.", "rejected": "Plugin rejected."}


def waiting_text(waiting: int) -> str | None:
    """What a rejected plugin's page says of the pending versions that wait with it."""
    if not waiting:
        return None
    versions = "1 pending version waits" if waiting == 1 else f"{waiting} pending versions wait"
    return (
        f"{versions} with it: out of the queue until the developer resubmits the plugin, "
        "then back in it."
    )


async def _render(
    request: Request,
    db: AsyncSession,
    plugin_id: str,
    *,
    error: str | None = None,
    note: str = "",
    release_pending: bool = True,
    status: int = 200,
) -> Response:
    plugin = await find_item(db, PLUGINS, plugin_id)
    versions = await queries.versions_of(db, PLUGINS, plugin.id)
    labels = await queries.reviewer_labels(db, [plugin.reviewed_by])
    done = request.query_params.get("done", "")
    waiting = waiting_text(await queries.waiting_with_item(db, PLUGINS, plugin.id))
    notice = DONE.get(done) if error is None else None
    if notice and done == "rejected" and waiting:
        notice = f"{notice} {waiting}"
    return page(
        request,
        "plugin.html",
        status=status,
        title=item_title(plugin),
        nav="queue",
        plugin=plugin,
        item_title=item_title(plugin),
        owner=await db.get(User, plugin.owner_id),
        versions=versions,
        version_findings={v.id: counts(v.findings) for v in versions},
        pages=PLUGIN_PAGES,
        reviewer_label=labels.get(plugin.reviewed_by or "", None),
        links=AUDIT_LINKS,
        audit=await item_audit(db, PLUGINS, plugin.id, [v.id for v in versions]),
        error=error,
        note=note,
        release_pending=release_pending,
        waiting=waiting,
        notice=notice,
    )


@router.get("/console/plugins/{plugin_id}")
async def plugin_page(
    request: Request, plugin_id: str, _reviewer: SignedInAccount, db: DbSession
) -> Response:
    return await _render(request, db, plugin_id)


@router.post("/console/plugins/{plugin_id}")
async def review_plugin(
    request: Request,
    plugin_id: str,
    reviewer: SignedInAccount,
    form: PostedForm,
    db: DbSession,
    keyring: KeyringDep,
) -> Response:
    """The API's plugin review (plugins.review), with its audit records."""
    release = form.checked("approve_pending_version")
    try:
        decision, _ = decision_of(form, PluginReviewIn, approvePendingVersion=release)
    except DecisionRefused as refused:
        return await _render(
            request, db, plugin_id, error=refused.message, note=form.text("note"),
            release_pending=release, status=400,
        )  # fmt: skip
    plugin = await find_item(db, PLUGINS, plugin_id, lock=True)
    try:
        if decision.approved:
            await plugin_review.approve_plugin(
                db,
                plugin,
                reviewer_id=reviewer.user.id,
                note=decision.note,
                approve_pending_version=release,
                keyring=keyring,
            )
        else:
            await plugin_review.reject_plugin(
                db, plugin, reviewer_id=reviewer.user.id, note=decision.note
            )
    except AppError as error:
        await db.rollback()
        return await _render(
            request, db, plugin_id, error=error.message, note=form.text("note"),
            release_pending=release, status=error.status_code,
        )  # fmt: skip
    outcome = "approved" if decision.approved else "rejected"
    return redirect(f"/console/plugins/{plugin.id}?done={outcome}")
