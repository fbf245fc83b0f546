"""Finding items and versions, and the ownership rule, once for every kind.

The dependencies state the order of checks (CONTRACT 1): token → role → verified → 404 →
not owned, by construction, so no route can forget one. Each kind declares them as plain
functions named for its path parameter (`plugins.lookup.owned_plugin(plugin_id, caller,
session)`), which call `owned_item` and its siblings here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.auth import pat
from marketplace.errors import Forbidden, InvalidState
from marketplace.kit.error_codes import declare
from marketplace.kit.sql import is_row_id
from marketplace.models import User
from marketplace.orgs import service as orgs
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT

Kind = ItemKind[ItemT, VersionT]


S = TypeVar("S", bound=Select[*tuple[Any, ...]])


def _locked(query: S) -> S:
    # Refresh: an object already in the session would otherwise keep pre-lock values.
    return query.with_for_update().execution_options(populate_existing=True)


async def find_item(
    session: AsyncSession, kind: Kind[ItemT, VersionT], ref: str, *, lock: bool = False
) -> ItemT:
    """The item a path names (the kind says by which column), or the kind's 404."""
    query = select(kind.item_model).where(kind.lookup_column(ref) == ref)
    item = await session.scalar(_locked(query) if lock else query)
    if item is None:
        raise kind.missing(ref)
    return item


async def lock_item(session: AsyncSession, kind: Kind[ItemT, VersionT], item_id: str) -> ItemT:
    """The item row by id, locked: SELECT ... FOR UPDATE on PostgreSQL; SQLite's
    BEGIN IMMEDIATE already serialises writers. Writes to one item take this lock first."""
    item = await session.scalar(_locked(select(kind.item_model).where(kind.items.id == item_id)))
    if item is None:  # looked up before in this request; only a concurrent delete gets here
        raise InvalidState(f"{kind.title} no longer exists")
    return item


async def find_version(
    session: AsyncSession, kind: Kind[ItemT, VersionT], version_id: str, *, lock: bool = False
) -> VersionT:
    if not is_row_id(version_id):
        raise kind.version_not_found()
    query = kind.loading_versions(select(kind.version_model).where(kind.versions.id == version_id))
    version = await session.scalar(_locked(query) if lock else query)
    if version is None:
        raise kind.version_not_found()
    return version


async def locked_version_with_item(
    session: AsyncSession, kind: Kind[ItemT, VersionT], version_id: str
) -> tuple[ItemT, VersionT]:
    """A version and its item for a review move, locked in the one lock order: item first."""
    version = await find_version(session, kind, version_id)
    item = await lock_item(session, kind, kind.item_id_of(version))
    return item, await find_version(session, kind, version_id, lock=True)


async def owned_version(
    session: AsyncSession, kind: Kind[ItemT, VersionT], item: ItemT, version_id: str
) -> VersionT:
    """A version of an item the caller owns, locked for a write; another item's version is
    the kind's 404, found without taking its lock. The item must be locked already: the
    one lock order, item first."""
    version = await find_version(session, kind, version_id)
    if kind.item_id_of(version) != item.id:
        raise kind.version_not_found()
    return await find_version(session, kind, version_id, lock=True)


async def operates(
    session: AsyncSession, kind: Kind[ItemT, VersionT], item: ItemT, user: User
) -> bool:
    """The one ownership rule: a personal item is its owner's; an organization's item is
    every member's (CONTRACT 17), the membership read now, so a removed member loses it at
    once (its publisher too: `ownerId` names who published it, not who may operate it).
    Commerce asks it too: who operates a plugin neither buys nor rates it."""
    org_id = kind.org_id_of(item)
    if org_id is None:
        return item.owner_id == user.id
    return await orgs.is_member(session, org_id, user.id)


async def check_owner(
    session: AsyncSession, kind: Kind[ItemT, VersionT], item: ItemT, user: User
) -> ItemT:
    """`operates`, or the kind's 403 *_NOT_OWNED."""
    if not await operates(session, kind, item, user):
        raise kind.not_theirs(item)
    return item


async def owned_item(
    kind: Kind[ItemT, VersionT], ref: str, user: User, session: AsyncSession
) -> ItemT:
    """A developer's own item, to read (any developer may; writes need a verified identity)."""
    return await check_owner(session, kind, await find_item(session, kind, ref), user)


async def owned_item_for_write(
    kind: Kind[ItemT, VersionT],
    ref: str,
    user: User,
    session: AsyncSession,
    grant: pat.TokenGrant | None,
    *,
    lock: bool = True,
) -> ItemT:
    """A verified developer's own item, locked for the write (`lock=False` for a streamed
    upload, whose write transaction takes the lock after the body arrived)."""
    item = await check_owner(session, kind, await find_item(session, kind, ref, lock=lock), user)
    # After ownership (CONTRACT 1's order): a token limited to some pluginKeys.
    pat.check_plugin(grant, kind.token_key(item))
    return item


def declare_owned(
    dependency: Callable[..., Any], kind: Kind[ItemT, VersionT], *, write: bool
) -> None:
    """The errors an ownership dependency of `kind` answers, for the OpenAPI document."""
    errors: list[Any] = [kind.not_found(), kind.not_owned()]
    declare(dependency, [*errors, Forbidden] if write else errors)


def declare_admin(dependency: Callable[..., Any], kind: Kind[ItemT, VersionT]) -> None:
    declare(dependency, [kind.not_found()])


def declare_version_write(dependency: Callable[..., Any], kind: Kind[ItemT, VersionT]) -> None:
    """The errors a dependency finding a version for a write answers (its 404; a concurrent
    delete of its item, 409)."""
    declare(dependency, [kind.version_not_found(), InvalidState])
