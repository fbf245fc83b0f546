"""The version takedown routes (CONTRACT 11), written once for every kind.

Order of checks (CONTRACT 1), by construction: the token and role, then (developer routes)
a verified identity, the item's 404 and its ownership, then the version's 404, all in
dependencies, so they come before the body's 400; the state's 409 comes last.
"""

# No `from __future__ import annotations`: the dependencies below are made per kind, and
# FastAPI reads the annotations naming them at definition time.

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import Field

from marketplace.auth.deps import Admin, VerifiedDeveloper
from marketplace.db import DbSession
from marketplace.errors import InvalidState
from marketplace.kit.error_codes import raises
from marketplace.kit.schemas import Envelope, InputModel, RequiredText
from marketplace.publishing.audit import Trigger
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace.publishing.lookup import find_version, locked_version_with_item
from marketplace.publishing.takedown import REASON_MAX_CHARS, take_down_version


class TakedownIn(InputModel):
    reason: Annotated[RequiredText, Field(min_length=1, max_length=REASON_MAX_CHARS)]


DESCRIPTION = (
    "Withdraw an approved version, with a reason (1-2000 characters): reviewStatus "
    "taken_down, reviewNote the reason, never current again. If it was current, the highest "
    "remaining approved version becomes current in the same transaction (none: latestVersion "
    "null, nothing to download). The version joins the signed revocation list "
    "(GET /api/v1/plugins/revocations). A version that is not approved is 409 INVALID_STATE."
)


def add_admin_takedown(
    router: APIRouter,
    kind: ItemKind[ItemT, VersionT],
    *,
    version_model: Any,
    version_out: Callable[[VersionT], Any],
) -> None:
    """POST /versions/{version_id}/takedown on the kind's admin router."""

    @raises(kind.version_not_found(), InvalidState)
    async def admin_version(version_id: str, _admin: Admin, session: DbSession) -> tuple[Any, Any]:
        return await locked_version_with_item(session, kind, version_id)

    @router.post(
        "/versions/{version_id}/takedown",
        name=f"take_down_{kind.name}_version",
        response_model=Envelope[version_model],
        description=DESCRIPTION,
    )
    async def take_down(
        body: TakedownIn,
        admin: Admin,
        found: Annotated[tuple[Any, Any], Depends(admin_version)],
        session: DbSession,
    ) -> Any:
        item, version = found
        await take_down_version(
            session,
            kind,
            item,
            version,
            actor_id=admin.id,
            reason=body.reason,
            trigger=Trigger.ADMIN,
        )
        return Envelope(data=version_out(version))


def add_developer_takedown(
    router: APIRouter,
    kind: ItemKind[ItemT, VersionT],
    *,
    param: str,
    owned: Callable[..., Any],
    version_model: Any,
    version_out: Callable[[VersionT], Any],
) -> None:
    """POST /{param}/versions/{version_id}/takedown on the kind's developer router: the
    owner's own version (another developer's item is the kind's *_NOT_OWNED). `owned` is
    the kind's ownership dependency for a write, whose path parameter is `param`."""

    @raises(kind.version_not_found(), InvalidState)
    async def owned_version(
        version_id: str, item: Annotated[Any, Depends(owned)], session: DbSession
    ) -> tuple[Any, Any]:
        # The item is locked by `owned`: the one lock order, item first, then the version.
        version = await find_version(session, kind, version_id, lock=True)
        if kind.item_id_of(version) != item.id:
            raise kind.version_not_found()
        return item, version

    @router.post(
        f"/{{{param}}}/versions/{{version_id}}/takedown",
        name=f"take_down_own_{kind.name}_version",
        response_model=Envelope[version_model],
        description=DESCRIPTION + " Only the owner may; the audit record's trigger is developer.",
    )
    async def take_down(
        body: TakedownIn,
        user: VerifiedDeveloper,
        found: Annotated[tuple[Any, Any], Depends(owned_version)],
        session: DbSession,
    ) -> Any:
        item, version = found
        await take_down_version(
            session,
            kind,
            item,
            version,
            actor_id=user.id,
            reason=body.reason,
            trigger=Trigger.DEVELOPER,
        )
        return Envelope(data=version_out(version))


__all__ = ["TakedownIn", "add_admin_takedown", "add_developer_takedown"]
