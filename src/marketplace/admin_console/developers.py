"""A developer's identity review: the API's identity review, by the same service."""

from __future__ import annotations

from fastapi import Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.accounts import service as accounts
from marketplace.accounts.schemas import IdentityReviewIn
from marketplace.admin_console.review_forms import DecisionRefused, decision_of
from marketplace.db import DbSession
from marketplace.errors import AppError, UserNotFound
from marketplace.kit.sql import is_row_id
from marketplace.models import DeveloperProfile, IdentityStatus, User
from marketplace.publishing import queries
from marketplace.web.deps import PostedForm, SignedInAccount
from marketplace.web.http import page, redirect, site_router
from marketplace.web.sites import CONSOLE

router = site_router(CONSOLE)

DONE = {"approved": "Identity verified.", "rejected": "Identity rejected."}


async def _render(
    request: Request,
    db: AsyncSession,
    user_id: str,
    *,
    error: str | None = None,
    note: str = "",
    status: int = 200,
) -> Response:
    user = await db.get(User, user_id) if is_row_id(user_id) else None
    profile = await db.get(DeveloperProfile, user_id) if user is not None else None
    if user is None or profile is None:
        raise UserNotFound("Developer does not exist")
    labels = await queries.reviewer_labels(db, [profile.reviewed_by])
    done = request.query_params.get("done", "")
    return page(
        request,
        "developer.html",
        status=status,
        title=f"Developer {profile.display_name}",
        nav="queue",
        user=user,
        profile=profile,
        reviewer_label=labels.get(profile.reviewed_by or "", None),
        # pending → verified | rejected; a verification can be withdrawn (docs/decisions.md).
        can_approve=profile.identity_status == IdentityStatus.PENDING,
        can_reject=profile.identity_status in (IdentityStatus.PENDING, IdentityStatus.VERIFIED),
        error=error,
        note=note,
        notice=DONE.get(done) if error is None else None,
    )


@router.get("/console/developers/{user_id}")
async def developer_page(
    request: Request, user_id: str, _reviewer: SignedInAccount, db: DbSession
) -> Response:
    return await _render(request, db, user_id)


@router.post("/console/developers/{user_id}")
async def review_identity(
    request: Request, user_id: str, reviewer: SignedInAccount, form: PostedForm, db: DbSession
) -> Response:
    try:
        decision, _ = decision_of(form, IdentityReviewIn)
    except DecisionRefused as refused:
        return await _render(
            request, db, user_id, error=refused.message, note=form.text("note"), status=400
        )
    if not is_row_id(user_id):
        raise UserNotFound("Developer does not exist")
    try:
        await accounts.review_identity(
            db, reviewer.user, user_id, approved=decision.approved, note=decision.note
        )
    except AppError as error:
        if error.status_code == 404:
            raise
        await db.rollback()
        return await _render(
            request, db, user_id, error=error.message, note=form.text("note"),
            status=error.status_code,
        )  # fmt: skip
    outcome = "approved" if decision.approved else "rejected"
    return redirect(f"/console/developers/{user_id}?done={outcome}")
