"""The publisher's organizations (CONTRACT 17): the list and a new one, and each one's
members (owners add, change and remove them). The same service as
/api/v1/developer/orgs, so the same rights, locks, audit records and refusals."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.auth.deps import verified_developer
from marketplace.db import DbSession
from marketplace.errors import AppError
from marketplace.models import Organization, OrgRole, User
from marketplace.orgs import service
from marketplace.orgs.schemas import MemberIn, OrgCreateIn
from marketplace.web.deps import PostedForm, SignedInAccount
from marketplace.web.forms import Form, first_problem
from marketplace.web.http import page, redirect, site_router
from marketplace.web.sites import PORTAL

router = site_router(PORTAL)

LABELS = {"slug": "Slug", "name": "Name", "email": "Email", "role": "Role"}
NOTICES = {
    "created": "Organization created: you are its owner.",
    "added": "Member added.",
    "updated": "Member's role changed.",
    "removed": "Member removed: their access to the organization's plugins ended at once.",
}


async def _orgs_page(
    request: Request,
    db: AsyncSession,
    user: User,
    *,
    notice: str | None = None,
    error: str | None = None,
    form: Form | None = None,
    status: int = 200,
) -> Response:
    return page(
        request,
        "orgs.html",
        status=status,
        title="Organizations",
        nav="orgs",
        orgs=await service.my_orgs(db, user),
        notice=notice,
        error=error,
        form=form or Form({}),
    )


@router.get("/portal/orgs")
async def org_list(
    request: Request,
    account: SignedInAccount,
    db: DbSession,
    done: Annotated[str | None, Query(max_length=40)] = None,
) -> Response:
    return await _orgs_page(request, db, account.user, notice=NOTICES.get(done or ""))


@router.post("/portal/orgs")
async def new_org(
    request: Request, account: SignedInAccount, form: PostedForm, db: DbSession
) -> Response:
    user = await verified_developer(account.user, db)
    try:
        body = OrgCreateIn.model_validate({"slug": form.text("slug"), "name": form.text("name")})
    except ValidationError as error:
        problem = first_problem(error, LABELS)
        return await _orgs_page(request, db, user, error=problem, form=form, status=400)
    try:
        created = await service.create_org(db, user, body.slug, body.name)
    except AppError as error:
        await db.rollback()
        return await _orgs_page(
            request, db, user, error=error.message, form=form, status=error.status_code
        )
    return redirect(f"/portal/orgs/{created.org.slug}?done=created")


async def _org_page(
    request: Request,
    db: AsyncSession,
    user: User,
    org: Organization,
    *,
    notice: str | None = None,
    error: str | None = None,
    form: Form | None = None,
    status: int = 200,
) -> Response:
    return page(
        request,
        "org.html",
        status=status,
        title=org.name,
        nav="orgs",
        org=org,
        role=await service.role_of(db, org.id, user.id),
        members=await service.members_of(db, org),
        notice=notice,
        error=error,
        form=form or Form({"role": OrgRole.MEMBER.value}),
    )


@router.get("/portal/orgs/{slug}")
async def org_page(
    request: Request,
    slug: str,
    account: SignedInAccount,
    db: DbSession,
    done: Annotated[str | None, Query(max_length=40)] = None,
) -> Response:
    org = await service.member_org(db, account.user, slug)
    return await _org_page(request, db, account.user, org, notice=NOTICES.get(done or ""))


@router.post("/portal/orgs/{slug}/members")
async def put_member(
    request: Request, slug: str, account: SignedInAccount, form: PostedForm, db: DbSession
) -> Response:
    """Add a member by e-mail, or change a member's role; owners only."""
    user = await verified_developer(account.user, db)
    org = await service.managed_org(db, user, slug)
    try:
        body = MemberIn.model_validate({"email": form.text("email"), "role": form.text("role")})
    except ValidationError as error:
        problem = first_problem(error, LABELS)
        return await _org_page(request, db, user, org, error=problem, form=form, status=400)
    try:
        _member, added = await service.put_member(db, org, user, body.email, body.role)
    except AppError as error:
        await db.rollback()
        org = await service.member_org(db, user, slug)
        return await _org_page(
            request, db, user, org, error=error.message, form=form, status=error.status_code
        )
    return redirect(f"/portal/orgs/{org.slug}?done={'added' if added else 'updated'}")


@router.post("/portal/orgs/{slug}/members/{user_id}/remove")
async def remove_member(
    request: Request,
    slug: str,
    user_id: str,
    account: SignedInAccount,
    _form: PostedForm,
    db: DbSession,
) -> Response:
    user = await verified_developer(account.user, db)
    org = await service.managed_org(db, user, slug)
    try:
        await service.drop_member(db, org, user, user_id)
    except AppError as error:
        await db.rollback()
        org = await service.member_org(db, user, slug)
        return await _org_page(
            request, db, user, org, error=error.message, status=error.status_code
        )
    if user_id == user.id:  # left it: its page is no longer theirs to see
        return redirect("/portal/orgs?done=removed")
    return redirect(f"/portal/orgs/{org.slug}?done=removed")
