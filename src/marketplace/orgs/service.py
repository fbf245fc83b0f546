"""Organizations (CONTRACT 17): who belongs, who manages, and which plugins they share.

Every function takes the session and the calling account and decides from the database
alone, so the JSON API and the HTML portal share them. Rules:
- any member reads the members; only owners add, change or remove them (else 403);
- an organization always keeps an owner: removing or demoting the last one is 409;
- a membership change holds the organization's row lock (SELECT ... FOR UPDATE on
  PostgreSQL; SQLite's BEGIN IMMEDIATE serialises writers already) and reads the caller's
  role under it, so two owners removing each other at once leave one of them;
- publishing into an organization and moving a plugin into one hold a shared lock on its
  row: a concurrent removal waits for them, or they see it.
Every change is an audit record (resource `organization`; a transfer, `plugin`), in the
same transaction.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import Forbidden, InvalidState, NotFound, UserNotFound
from marketplace.kit.sql import insert_unique
from marketplace.models import AuditLog, Organization, OrganizationMember, OrgRole, Plugin, User
from marketplace.orgs.schemas import OrgRef

RESOURCE = "organization"
PLUGIN_RESOURCE = "plugin"  # PLUGINS.name; this layer sits below the plugin kind
TRIGGER = "developer"  # publishing.audit.Trigger.DEVELOPER: the caller's own move


class OrgAction(enum.StrEnum):
    CREATE = "ORG_CREATE"
    MEMBER_ADD = "ORG_MEMBER_ADD"
    MEMBER_ROLE = "ORG_MEMBER_ROLE"
    MEMBER_REMOVE = "ORG_MEMBER_REMOVE"
    TRANSFER = "PLUGIN_TRANSFER"


REMOVED = "removed"
TRANSFERRED = "transferred"


@dataclass(frozen=True)
class MyOrg:
    """An organization and the caller's role in it."""

    org: Organization
    role: OrgRole


@dataclass(frozen=True)
class Member:
    user_id: str
    email: str
    name: str
    role: OrgRole
    added_at: datetime


def _audit(
    session: AsyncSession,
    action: OrgAction,
    actor: User,
    *,
    resource_id: str,
    outcome: str,
    note: str,
    resource_type: str = RESOURCE,
) -> None:
    session.add(
        AuditLog(
            action=action.value,
            actor_id=actor.id,
            resource_type=resource_type,
            resource_id=resource_id,
            outcome=outcome,
            trigger=TRIGGER,
            note=note,
        )
    )


# ---------------------------------------------------------------- finding and rights


def _no_org(slug: str) -> NotFound:
    return NotFound(f'Organization "{slug}" does not exist', details={"org": slug})


async def find_org(session: AsyncSession, slug: str, *, lock: bool = False) -> Organization:
    """The organization a slug names (404 NOT_FOUND); `lock` takes its row for a
    membership change."""
    query = select(Organization).where(Organization.slug == slug)
    if lock:
        query = query.with_for_update().execution_options(populate_existing=True)
    org = await session.scalar(query)
    if org is None:
        raise _no_org(slug)
    return org


async def _shared_lock(session: AsyncSession, org: Organization) -> None:
    """FOR SHARE on PostgreSQL: membership changes (FOR UPDATE) wait for the holder."""
    await session.execute(
        select(Organization.id).where(Organization.id == org.id).with_for_update(read=True)
    )


async def role_of(session: AsyncSession, org_id: str, user_id: str) -> OrgRole | None:
    """The user's role in the organization, read now (None: not a member)."""
    role = await session.scalar(
        select(OrganizationMember.role).where(
            OrganizationMember.org_id == org_id, OrganizationMember.user_id == user_id
        )
    )
    return OrgRole(role) if role is not None else None


async def is_member(session: AsyncSession, org_id: str, user_id: str) -> bool:
    """Whether the user belongs to the organization now: the ownership check asks at every
    call, so a removed member loses the organization's plugins at once."""
    return await role_of(session, org_id, user_id) is not None


def member_org_ids(user_id: str) -> Select[str]:
    """The organizations a user belongs to, as a subquery for `IN`."""
    return select(OrganizationMember.org_id).where(OrganizationMember.user_id == user_id)


async def member_org(session: AsyncSession, caller: User, slug: str) -> Organization:
    """An organization the caller belongs to: 404 for an unknown slug, 403 otherwise."""
    org = await find_org(session, slug)
    if await role_of(session, org.id, caller.id) is None:
        raise Forbidden(f'You are not a member of organization "{slug}"')
    return org


async def managed_org(session: AsyncSession, caller: User, slug: str) -> Organization:
    """An organization the caller owns, its row locked for a membership change; the role is
    read under the lock (a concurrent removal of the caller is seen)."""
    org = await find_org(session, slug, lock=True)
    if await role_of(session, org.id, caller.id) != OrgRole.OWNER:
        raise Forbidden(f'Only owners of organization "{slug}" may change its members')
    return org


# ---------------------------------------------------------------- organizations


async def create_org(session: AsyncSession, caller: User, slug: str, name: str) -> MyOrg:
    """A new organization with the caller as its first owner; a slug in use is 409."""
    in_use = InvalidState(f'Organization "{slug}" already exists', details={"org": slug})
    if await session.scalar(select(Organization.id).where(Organization.slug == slug)):
        raise in_use
    org = Organization(slug=slug, name=name, created_by=caller.id)
    await insert_unique(session, org, in_use)  # the unique slug decides a race
    session.add(OrganizationMember(org_id=org.id, user_id=caller.id, role=OrgRole.OWNER.value))
    _audit(
        session,
        OrgAction.CREATE,
        caller,
        resource_id=org.id,
        outcome=OrgRole.OWNER.value,
        note=f"{slug} created by {caller.email}",
    )
    await session.flush()
    return MyOrg(org, OrgRole.OWNER)


async def my_orgs(session: AsyncSession, caller: User) -> list[MyOrg]:
    """The caller's organizations, oldest first, with its role in each."""
    rows = await session.execute(
        select(Organization, OrganizationMember.role)
        .join(OrganizationMember, OrganizationMember.org_id == Organization.id)
        .where(OrganizationMember.user_id == caller.id)
        .order_by(Organization.created_at, Organization.id)
    )
    return [MyOrg(org, OrgRole(role)) for org, role in rows.all()]


# ---------------------------------------------------------------- members


async def members_of(session: AsyncSession, org: Organization) -> list[Member]:
    """Owners first, then by the time they joined."""
    rows = await session.execute(
        select(User.id, User.email, User.name, OrganizationMember.role, OrganizationMember.added_at)
        .join(OrganizationMember, OrganizationMember.user_id == User.id)
        .where(OrganizationMember.org_id == org.id)
        .order_by(
            OrganizationMember.role != OrgRole.OWNER.value,
            OrganizationMember.added_at,
            User.id,
        )
    )
    return [
        Member(uid, email, name, OrgRole(role), added) for uid, email, name, role, added in rows
    ]


async def _membership(
    session: AsyncSession, org: Organization, user_id: str
) -> OrganizationMember | None:
    return await session.scalar(
        select(OrganizationMember)
        .where(OrganizationMember.org_id == org.id, OrganizationMember.user_id == user_id)
        .execution_options(populate_existing=True)
    )


async def _owner_count(session: AsyncSession, org: Organization) -> int:
    count = await session.scalar(
        select(func.count()).where(
            OrganizationMember.org_id == org.id, OrganizationMember.role == OrgRole.OWNER.value
        )
    )
    return count or 0


async def _keeps_an_owner(
    session: AsyncSession, org: Organization, row: OrganizationMember
) -> None:
    """409 when `row` is the organization's last owner (the caller holds the row lock)."""
    if row.role == OrgRole.OWNER and await _owner_count(session, org) <= 1:
        raise InvalidState(
            f'The last owner of organization "{org.slug}" cannot leave or stop being an '
            "owner: make another member an owner first"
        )


def _member(user: User, row: OrganizationMember) -> Member:
    return Member(user.id, user.email, user.name, OrgRole(row.role), row.added_at)


async def put_member(
    session: AsyncSession, org: Organization, caller: User, email: str, role: OrgRole
) -> tuple[Member, bool]:
    """Add the account with this e-mail, or set the role of a member already there; True
    when it was added. The caller owns `org` and holds its lock (`managed_org`)."""
    user = await session.scalar(select(User).where(User.email == email.lower()))
    if user is None:
        raise UserNotFound(f'No account has the e-mail "{email}"', details={"email": email})
    row = await _membership(session, org, user.id)
    if row is None:
        row = OrganizationMember(org_id=org.id, user_id=user.id, role=role.value)
        session.add(row)
        _audit(
            session,
            OrgAction.MEMBER_ADD,
            caller,
            resource_id=org.id,
            outcome=role.value,
            note=f"{user.email} ({user.id}) added as {role.value}",
        )
        await session.flush()
        return _member(user, row), True
    if row.role != role:
        if role != OrgRole.OWNER:
            await _keeps_an_owner(session, org, row)
        before = row.role
        row.role = role.value
        _audit(
            session,
            OrgAction.MEMBER_ROLE,
            caller,
            resource_id=org.id,
            outcome=role.value,
            note=f"{user.email} ({user.id}): {before} -> {role.value}",
        )
        await session.flush()
    return _member(user, row), False


async def drop_member(
    session: AsyncSession, org: Organization, caller: User, user_id: str
) -> list[Member]:
    """Remove a member (the caller may remove itself unless it is the last owner); the
    members left. The caller owns `org` and holds its lock (`managed_org`)."""
    row = await _membership(session, org, user_id)
    if row is None:
        raise UserNotFound(
            f'No member of organization "{org.slug}" has the id "{user_id}"',
            details={"userId": user_id},
        )
    await _keeps_an_owner(session, org, row)
    user = await session.get(User, user_id)
    label = f"{user.email} ({user_id})" if user is not None else user_id
    await session.delete(row)
    _audit(
        session,
        OrgAction.MEMBER_REMOVE,
        caller,
        resource_id=org.id,
        outcome=REMOVED,
        note=f"{label} removed (was {row.role})",
    )
    await session.flush()
    return await members_of(session, org)


# The same, named by slug: what a page of the portal calls.


async def members(session: AsyncSession, caller: User, slug: str) -> list[Member]:
    return await members_of(session, await member_org(session, caller, slug))


async def add_member(
    session: AsyncSession, caller: User, slug: str, email: str, role: OrgRole
) -> tuple[Member, bool]:
    return await put_member(session, await managed_org(session, caller, slug), caller, email, role)


async def remove_member(
    session: AsyncSession, caller: User, slug: str, user_id: str
) -> list[Member]:
    return await drop_member(session, await managed_org(session, caller, slug), caller, user_id)


# ---------------------------------------------------------------- plugins


async def publishing_org(session: AsyncSession, caller: User, slug: str) -> Organization:
    """The organization a new plugin is published into: the caller must be a member."""
    org = await find_org(session, slug)
    await _shared_lock(session, org)
    if not await is_member(session, org.id, caller.id):  # read under the lock
        raise Forbidden(f'You are not a member of organization "{slug}"')
    return org


async def transfer(session: AsyncSession, caller: User, plugin: Plugin, slug: str) -> Organization:
    """Move a plugin the caller owns personally into an organization the caller owns. The
    plugin is locked already (its write dependency); then the organization, shared."""
    org = await find_org(session, slug)
    await _shared_lock(session, org)
    if await role_of(session, org.id, caller.id) != OrgRole.OWNER:
        raise Forbidden(f'Only owners of organization "{slug}" may move plugins into it')
    if plugin.org_id is not None:
        current = await session.get(Organization, plugin.org_id)
        where = f'organization "{current.slug}"' if current is not None else "an organization"
        raise InvalidState(f"Plugin {plugin.plugin_key} belongs to {where} already")
    if plugin.owner_id != caller.id:  # the ownership check lets only the owner this far
        raise InvalidState(f"Plugin {plugin.plugin_key} is not yours personally")
    plugin.org_id = org.id
    _audit(
        session,
        OrgAction.TRANSFER,
        caller,
        resource_type=PLUGIN_RESOURCE,
        resource_id=plugin.id,
        outcome=TRANSFERRED,
        note=f"{plugin.plugin_key} moved into organization {slug}",
    )
    await session.flush()
    return org


# ---------------------------------------------------------------- representations


def ref_of(org: Organization | None) -> OrgRef | None:
    return OrgRef(slug=org.slug, name=org.name) if org is not None else None


async def org_ref(session: AsyncSession, org_id: str | None) -> OrgRef | None:
    """A plugin's `org` (the session's identity map answers a loaded organization)."""
    return ref_of(await session.get(Organization, org_id)) if org_id is not None else None


async def org_refs(session: AsyncSession, org_ids: Iterable[str | None]) -> dict[str, OrgRef]:
    """The `org` of a page of plugins, in one query."""
    wanted: Sequence[str] = sorted({i for i in org_ids if i is not None})
    if not wanted:
        return {}
    rows = await session.execute(
        select(Organization.id, Organization.slug, Organization.name).where(
            Organization.id.in_(wanted)
        )
    )
    return {org_id: OrgRef(slug=slug, name=name) for org_id, slug, name in rows}


def pick(refs: dict[str, OrgRef], org_id: str | None) -> OrgRef | None:
    return refs.get(org_id) if org_id is not None else None
