"""Routes every kind of reviewed item has, written once: the admin version queue (list,
one version, review, download any version, diff against the last approved) and the audit
log."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal

import structlog
from fastapi import APIRouter, Query

from marketplace.auth.deps import Admin, Developer
from marketplace.db import DbSession, end_checks
from marketplace.errors import InternalError, InvalidState
from marketplace.kit.error_codes import raises
from marketplace.kit.pagination import LimitParams, PageSizeParams
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.kit.state import AppSettings
from marketplace.models import AuditLog, ReviewStatus
from marketplace.publishing import queries, review
from marketplace.publishing.audit import audit_logs
from marketplace.publishing.contents import PackageUnreadable
from marketplace.publishing.diff import compare_versions, diff_base
from marketplace.publishing.downloads import PresignedUrls
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace.publishing.lookup import find_item, find_version, locked_version_with_item
from marketplace.publishing.releases import ReleasesDep, release_for_download
from marketplace.publishing.schemas import (
    AuditDetail,
    AuditLogList,
    AuditLogOut,
    StatusCounts,
    VersionDiffOut,
    VersionReviewIn,
)
from marketplace.storage.deps import BlobStoreDep
from marketplace.trust.deps import KeyringDep
from marketplace.trust.schemas import ReleaseRecord

log = structlog.get_logger("marketplace.publishing")

Search = Annotated[str | None, Query(max_length=200)]
QueueStatus = Annotated[ReviewStatus | Literal["all"], Query(alias="reviewStatus")]
ItemStatus = Annotated[ReviewStatus | None, Query(alias="reviewStatus")]


@dataclass(frozen=True)
class QueueViews(Generic[ItemT, VersionT]):
    """How a kind shows its versions in the queue routes."""

    list_model: Any  # the page model: {items, total, page, limit, counts}
    version_model: Any
    download_model: Any
    version_out: Callable[[VersionT], Any]
    queue_item_out: Callable[[VersionT, ItemT, dict[str, str]], Any]
    download: Callable[[PresignedUrls, int, ItemT, VersionT, ReleaseRecord | None], Awaitable[Any]]


def add_version_queue(
    router: APIRouter, kind: ItemKind[ItemT, VersionT], views: QueueViews[ItemT, VersionT]
) -> None:
    """GET /versions/pending, GET /versions/{version_id}, POST /versions/{version_id}/review,
    GET /versions/{version_id}/download and GET /versions/{version_id}/diff on the kind's
    admin router. Call it before the router's `/{item}` routes, so "versions" is never read
    as an item reference."""
    words = f"{kind.name} versions"

    @router.get(
        "/versions/pending",
        response_model=Envelope[views.list_model],  # type: ignore[name-defined]
        description=f"Versions across {kind.name}s (the review queue), newest first; "
        "reviewStatus defaults to pending, `all` lists every state.",
    )
    async def list_versions(
        _admin: Admin,
        session: DbSession,
        page: LimitParams,
        review_status: QueueStatus = ReviewStatus.PENDING,
        search: Search = None,
    ) -> Any:
        wanted = None if review_status == "all" else str(review_status)
        rows, total, counts = await queries.admin_versions(session, kind, page, wanted, search)
        labels = await queries.reviewer_labels(session, (v.reviewed_by for v, _ in rows))
        return Envelope(
            data=views.list_model(
                items=[views.queue_item_out(v, item, labels) for v, item in rows],
                total=total,
                page=page.page,
                limit=page.size,
                counts=StatusCounts(**counts),
            )
        )

    @router.post(
        "/versions/{version_id}/review",
        response_model=Envelope[views.version_model],  # type: ignore[name-defined]
        description="Approve (the version becomes current, whatever its number) or reject a "
        "pending version; anything but a pending version is 409 INVALID_STATE. Writes the "
        "audit record in the same transaction.",
    )
    @raises(kind.version_not_found(), InvalidState)
    async def review_version(
        version_id: str,
        body: VersionReviewIn,
        admin: Admin,
        session: DbSession,
        keyring: KeyringDep,
    ) -> Any:
        item, version = await locked_version_with_item(session, kind, version_id)
        await review.decide(
            session,
            kind,
            item,
            version,
            approved=body.approved,
            reviewer_id=admin.id,
            note=body.review_note,
            keyring=keyring,
        )
        return Envelope(data=views.version_out(version))

    @router.get(
        "/versions/{version_id}/download",
        response_model=Envelope[views.download_model],  # type: ignore[name-defined]
        description=f"Download information for any of the {words}, pending ones included "
        "(reviewers read them); `release` is the signed release record, null for a version "
        "never approved.",
    )
    @raises(kind.version_not_found(), kind.not_found())
    async def download_version(
        version_id: str,
        _admin: Admin,
        session: DbSession,
        store: BlobStoreDep,
        settings: AppSettings,
        releases: ReleasesDep,
    ) -> Any:
        version = await find_version(session, kind, version_id)
        item = await find_item(session, kind, kind.item_id_of(version))
        release = await release_for_download(releases, kind, item, version)
        info = await views.download(store, settings.download_url_seconds, item, version, release)
        return Envelope(data=info)

    @router.get(
        "/versions/{version_id}/diff",
        response_model=Envelope[VersionDiffOut],
        description=f"What one of the {words} changes against the last approved version of "
        f"its {kind.name} (base: the current version unless it is this one, else the newest "
        "approved by creation; null for a first version): files added, removed and changed "
        "(paths relative to the package root), top-level manifest keys, new permissions.",
    )
    @raises(kind.version_not_found())
    async def diff_version(
        version_id: str, _admin: Admin, session: DbSession, store: BlobStoreDep
    ) -> Any:
        version = await find_version(session, kind, version_id)
        base = await diff_base(session, kind, version)
        # Reading two packages can take a while: hold no connection or snapshot meanwhile.
        await end_checks(session)
        try:
            diff = await compare_versions(store, kind, base, version)
        except PackageUnreadable as exc:
            # Invariant 3 says a row never points at a missing blob: a fault, not the input.
            log.error("stored package unreadable", version_id=version.id, reason=str(exc))
            raise InternalError(f"The package of this {kind.name} version cannot be read") from None
        return Envelope(data=diff)

    @router.get(
        "/versions/{version_id}",
        response_model=Envelope[views.version_model],  # type: ignore[name-defined]
        description=f"One of the {words}, in any state.",
    )
    @raises(kind.version_not_found())
    async def version_detail(version_id: str, _admin: Admin, session: DbSession) -> Any:
        return Envelope(data=views.version_out(await find_version(session, kind, version_id)))


def add_developer_list(
    router: APIRouter,
    kind: ItemKind[ItemT, VersionT],
    *,
    path: str,
    list_model: Any,
    item_out: Callable[[ItemT], Any],
) -> None:
    """GET `path`: the caller's own items in every state, newest first."""

    @router.get(
        path,
        name=f"list_own_{kind.name}s",
        response_model=Envelope[list_model],
        description=f"The caller's {kind.name}s in every state, newest first; filter by "
        "reviewStatus.",
    )
    async def list_own(
        user: Developer,
        session: DbSession,
        page: PageSizeParams,
        review_status: ItemStatus = None,
    ) -> Any:
        wanted = review_status.value if review_status else None
        items, total = await queries.developer_items(session, kind, user, page, wanted)
        return Envelope(
            data=list_model(
                items=[item_out(i) for i in items],
                total=total,
                page=page.page,
                page_size=page.size,
            )
        )


def add_admin_list(
    router: APIRouter,
    kind: ItemKind[ItemT, VersionT],
    *,
    list_model: Any,
    item_out: Callable[[ItemT, dict[str, str]], Any],
    description: str,
) -> None:
    """GET "": every item with counts per review status (the counts share the search and
    ignore the status filter, seed 4.5)."""

    @router.get(
        "",
        name=f"list_{kind.name}s",
        response_model=Envelope[list_model],
        description=description,
    )
    async def list_items(
        _admin: Admin,
        session: DbSession,
        page: LimitParams,
        review_status: ItemStatus = None,
        search: Search = None,
    ) -> Any:
        wanted = review_status.value if review_status else None
        items, total, counts = await queries.admin_items(session, kind, page, wanted, search)
        reviewers = (getattr(i, "reviewed_by", None) for i in items)
        labels = await queries.reviewer_labels(session, reviewers)
        return Envelope(
            data=list_model(
                items=[item_out(i, labels) for i in items],
                total=total,
                page=page.page,
                limit=page.size,
                counts=StatusCounts(**counts),
            )
        )


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
