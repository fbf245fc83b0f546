"""Organization routes (CONTRACT 17): prefix /api/v1/developer/orgs. The transfer of a plugin
into one is a plugin route (plugins.developer_endpoints): it needs the plugin's ownership
dependency, which lives above this package.

The organization a path names is found (404) and the caller's rights checked (403) in
dependencies, before the body is read (CONTRACT 1's order)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Response, status

from marketplace.auth.deps import Developer, VerifiedDeveloper
from marketplace.db import DbSession
from marketplace.errors import Forbidden, InvalidState, NotFound, UserNotFound
from marketplace.kit.error_codes import raises
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.models import Organization
from marketplace.orgs import service
from marketplace.orgs.schemas import (
    MemberIn,
    MemberItems,
    MemberOut,
    OrgCreateIn,
    OrgItems,
    OrgOut,
)

router = api_router(prefix="/api/v1/developer/orgs", tags=["developer: organizations"])

UPDATED: dict[int | str, dict[str, Any]] = {
    200: {"description": "Already a member: its role is now the one sent"}
}


@raises(NotFound, Forbidden)
async def _member_org(slug: str, caller: Developer, session: DbSession) -> Organization:
    return await service.member_org(session, caller, slug)


@raises(NotFound, Forbidden)
async def _managed_org(slug: str, caller: VerifiedDeveloper, session: DbSession) -> Organization:
    return await service.managed_org(session, caller, slug)


MemberOrg = Annotated[Organization, Depends(_member_org)]
ManagedOrg = Annotated[Organization, Depends(_managed_org)]


def _org_out(mine: service.MyOrg) -> OrgOut:
    org = mine.org
    return OrgOut(
        id=org.id, slug=org.slug, name=org.name, role=mine.role, created_at=org.created_at
    )


def _member_out(member: service.Member) -> MemberOut:
    return MemberOut(
        user_id=member.user_id,
        email=member.email,
        name=member.name,
        role=member.role,
        added_at=member.added_at,
    )


@router.post("", status_code=status.HTTP_201_CREATED)
@raises(InvalidState)
async def create_org(
    body: OrgCreateIn, caller: VerifiedDeveloper, session: DbSession
) -> Envelope[OrgOut]:
    """Create an organization; the caller is its first owner. A slug in use is 409."""
    return Envelope(data=_org_out(await service.create_org(session, caller, body.slug, body.name)))


@router.get("")
async def list_orgs(caller: Developer, session: DbSession) -> Envelope[OrgItems]:
    """The organizations the caller belongs to, with its role in each."""
    return Envelope(
        data=OrgItems(items=[_org_out(m) for m in await service.my_orgs(session, caller)])
    )


@router.get("/{slug}/members")
async def list_members(org: MemberOrg, session: DbSession) -> Envelope[MemberItems]:
    """The members (owners first); members only."""
    found = await service.members_of(session, org)
    return Envelope(data=MemberItems(items=[_member_out(m) for m in found]))


@router.post("/{slug}/members", status_code=status.HTTP_201_CREATED, responses=UPDATED)
@raises(UserNotFound, InvalidState)
async def add_member(
    body: MemberIn,
    org: ManagedOrg,
    caller: VerifiedDeveloper,
    session: DbSession,
    response: Response,
) -> Envelope[MemberOut]:
    """Add the account with this e-mail (201), or give a member the role sent (200); owners
    only. Demoting the last owner is 409."""
    member, added = await service.put_member(session, org, caller, body.email, body.role)
    if not added:
        response.status_code = status.HTTP_200_OK
    return Envelope(data=_member_out(member))


@router.delete("/{slug}/members/{user_id}")
@raises(UserNotFound, InvalidState)
async def remove_member(
    user_id: str, org: ManagedOrg, caller: VerifiedDeveloper, session: DbSession
) -> Envelope[MemberItems]:
    """Remove a member (an owner may remove itself); owners only. The last owner cannot
    leave (409). Answers the members left."""
    left = await service.drop_member(session, org, caller, user_id)
    return Envelope(data=MemberItems(items=[_member_out(m) for m in left]))
