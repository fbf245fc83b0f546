"""What every kind's review routes do, written once: the admin version queue (list, one
version, review, download any version, diff against the last approved), the item lists,
and the audit log. Each kind declares its own routes, as decorated functions with its own
types, and calls these."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

import structlog
from fastapi import Query
from pydantic import BaseModel
from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.auth.deps import Admin
from marketplace.db import DbSession, end_checks
from marketplace.errors import InternalError
from marketplace.kit.pagination import LimitParams, Page
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.models import AuditLog, ReviewStatus, User
from marketplace.publishing import queries, review
from marketplace.publishing.audit import audit_logs
from marketplace.publishing.contents import PackageUnreadable
from marketplace.publishing.diff import compare_versions, diff_base
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace.publishing.lookup import find_item, find_version, locked_version_with_item
from marketplace.publishing.releases import Releases, release_for_download
from marketplace.publishing.schemas import (
    AuditDetail,
    AuditLogList,
    AuditLogOut,
    StatusCounts,
    VersionDiffOut,
    VersionReviewIn,
)
from marketplace.storage.base import BlobStore
from marketplace.trust.keyring import Keyring
from marketplace.trust.schemas import ReleaseRecord

log = structlog.get_logger("marketplace.publishing")

Search = Annotated[str | None, Query(max_length=200)]
QueueStatus = Annotated[ReviewStatus | Literal["all"], Query(alias="reviewStatus")]
ItemStatus = Annotated[ReviewStatus | None, Query(alias="reviewStatus")]


# The page models the handlers fill: each kind's routes name their own.
P = TypeVar("P", bound=BaseModel)


async def version_queue(
    session: AsyncSession,
    kind: ItemKind[ItemT, VersionT],
    page: Page,
    review_status: ReviewStatus | Literal["all"],
    search: str | None,
    *,
    page_model: type[P],
    item_out: Callable[[VersionT, ItemT, dict[str, str]], Any],
    where: ColumnElement[bool] | None = None,
) -> P:
    """The admin version queue: versions across the kind's items, newest first, with counts
    per review status (`all` lists every state)."""
    wanted = None if review_status == "all" else str(review_status)
    rows, total, counts = await queries.admin_versions(
        session, kind, page, wanted, search, where=where
    )
    labels = await queries.reviewer_labels(session, (v.reviewed_by for v, _ in rows))
    return page_model(
        items=[item_out(v, item, labels) for v, item in rows],
        total=total,
        page=page.page,
        limit=page.size,
        counts=StatusCounts(**counts),
    )


async def admin_items(
    session: AsyncSession,
    kind: ItemKind[ItemT, VersionT],
    page: Page,
    review_status: ReviewStatus | None,
    search: str | None,
    *,
    page_model: type[P],
    item_out: Callable[[ItemT, dict[str, str]], Any],
) -> P:
    """Every item with counts per review status (the counts share the search and ignore the
    status filter, seed 4.5)."""
    wanted = review_status.value if review_status else None
    items, total, counts = await queries.admin_items(session, kind, page, wanted, search)
    labels = await queries.reviewer_labels(
        session, (getattr(i, "reviewed_by", None) for i in items)
    )
    return page_model(
        items=[item_out(i, labels) for i in items],
        total=total,
        page=page.page,
        limit=page.size,
        counts=StatusCounts(**counts),
    )


async def own_items(
    session: AsyncSession,
    kind: ItemKind[ItemT, VersionT],
    owner: User,
    page: Page,
    review_status: ReviewStatus | None,
    *,
    page_model: type[P],
    item_out: Callable[[ItemT], Any],
) -> P:
    """The owner's items in every state, newest first."""
    wanted = review_status.value if review_status else None
    items, total = await queries.developer_items(session, kind, owner, page, wanted)
    return page_model(
        items=[item_out(i) for i in items], total=total, page=page.page, page_size=page.size
    )


async def review_version(
    session: AsyncSession,
    kind: ItemKind[ItemT, VersionT],
    version_id: str,
    body: VersionReviewIn,
    reviewer: User,
    keyring: Keyring,
) -> VersionT:
    """Approve or reject a pending version, locked item first, audited in the transaction."""
    item, version = await locked_version_with_item(session, kind, version_id)
    await review.decide(
        session,
        kind,
        item,
        version,
        approved=body.approved,
        reviewer_id=reviewer.id,
        note=body.review_note,
        keyring=keyring,
    )
    return version


async def version_for_download(
    session: AsyncSession, kind: ItemKind[ItemT, VersionT], releases: Releases, version_id: str
) -> tuple[ItemT, VersionT, ReleaseRecord | None]:
    """Any version with its item and signed release record (None: never approved)."""
    version = await find_version(session, kind, version_id)
    item = await find_item(session, kind, kind.item_id_of(version))
    return item, version, await release_for_download(releases, kind, item, version)


async def version_diff(
    session: AsyncSession, store: BlobStore, kind: ItemKind[ItemT, VersionT], version_id: str
) -> VersionDiffOut:
    """What a version changes against the last approved version of its item."""
    version = await find_version(session, kind, version_id)
    base = await diff_base(session, kind, version)
    # Reading two packages can take a while: hold no connection or snapshot meanwhile.
    await end_checks(session)
    try:
        return await compare_versions(store, kind, base, version)
    except PackageUnreadable as exc:
        # Invariant 3 says a row never points at a missing blob: a fault, not the input.
        log.error("stored package unreadable", version_id=version.id, reason=str(exc))
        raise InternalError(f"The package of this {kind.name} version cannot be read") from None


audit_router = api_router(prefix="/api/v1/admin/audit-logs", tags=["admin: audit"])


def audit_out(entry: AuditLog) -> AuditLogOut:
    return AuditLogOut(
        id=entry.id,
        action=entry.action,
        actor_id=entry.actor_id,
        created_at=entry.created_at,
        detail=AuditDetail(
            resource_type=entry.resource_type,
            resource_id=entry.resource_id,
            outcome=entry.outcome,
            trigger=entry.trigger,
            note=entry.note,
        ),
    )


@audit_router.get("")
async def list_audit_logs(
    _admin: Admin,
    session: DbSession,
    page: LimitParams,
    resource_type: Annotated[str | None, Query(alias="resourceType", max_length=40)] = None,
    resource_id: Annotated[str | None, Query(alias="resourceId", max_length=64)] = None,
    action: Annotated[str | None, Query(max_length=40)] = None,
) -> Envelope[AuditLogList]:
    """Review audit records, newest first (append-only: nothing edits or deletes them)."""
    rows, total = await audit_logs(
        session, page, resource_type=resource_type, resource_id=resource_id, action=action
    )
    return Envelope(
        data=AuditLogList(
            items=[audit_out(r) for r in rows], total=total, page=page.page, limit=page.size
        )
    )
