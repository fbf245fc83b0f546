"""The lists every kind of item has: a developer's own items, the admin lists and the
version queue (seed 4.5, CONTRACT 5: a page of rows plus counts per review status under
the same search), the version history, and reviewer labels."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, false, func, not_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.kit.pagination import Page
from marketplace.kit.sql import icontains
from marketplace.models import ReviewStatus, User
from marketplace.orgs import service as orgs
from marketplace.packages.manifest import version_sort_key
from marketplace.publishing.audit import SYSTEM_REVIEWER
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT

Kind = ItemKind[ItemT, VersionT]
STATUSES = [s.value for s in ReviewStatus]


def status_counts(rows: Iterable[tuple[str, int]]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for status, count in rows:
        counts[status] = count
    counts["all"] = sum(counts[s] for s in STATUSES)
    return counts


async def _paged_with_counts(
    session: AsyncSession,
    base: Select[*tuple[Any, ...]],
    status_column: Any,
    order: Sequence[Any],
    page: Page,
    review_status: str | None,
) -> tuple[list[Any], int, dict[str, int]]:
    """Rows of `base` (filtered by review_status when given), its total, and the counts."""
    # Counts share the search condition but ignore the status filter (seed 4.5).
    counts = status_counts(
        (
            await session.execute(
                base.with_only_columns(status_column, func.count())
                .group_by(status_column)
                .order_by(None)
            )
        ).all()
    )
    query = base if review_status is None else base.where(status_column == review_status)
    total = counts["all"] if review_status is None else counts.get(review_status, 0)
    rows = (
        await session.execute(query.order_by(*order).offset(page.offset).limit(page.size))
    ).all()
    return list(rows), total, counts


def _by_age(created: Any, row_id: Any, oldest_first: bool) -> tuple[Any, Any]:
    # The id breaks ties, so pages never overlap when rows share a timestamp.
    return (created.asc() if oldest_first else created.desc(), row_id)


def _searching(
    query: Select[*tuple[Any, ...]], columns: Sequence[Any], search: str | None
) -> Select[*tuple[Any, ...]]:
    if not search:
        return query
    return query.where(or_(*(icontains(column, search) for column in columns)))


async def admin_items(
    session: AsyncSession,
    kind: Kind[ItemT, VersionT],
    page: Page,
    review_status: str | None,
    search: str | None,
    *,
    oldest_first: bool = False,
) -> tuple[list[ItemT], int, dict[str, int]]:
    """Every item, newest first (a review queue: oldest first), with counts per review
    status."""
    rows, total, counts = await _paged_with_counts(
        session,
        _searching(select(kind.item_model), kind.items.search, search),
        kind.items.review_status,
        _by_age(kind.items.created_at, kind.items.id, oldest_first),
        page,
        review_status,
    )
    return [row[0] for row in rows], total, counts


def waits_with_item(kind: Kind[ItemT, VersionT]) -> ColumnElement[bool]:
    """A pending version of a rejected item, for kinds whose versions wait with their item
    (`ItemKind.versions_wait_with_item`; never for the others). Such a version is kept (its
    number is taken for good) and the API's pending list still shows it, but it is no
    reviewer's work until the developer resubmits the item. Needs the item joined."""
    if not kind.versions_wait_with_item:
        return false()
    return and_(
        kind.versions.review_status == ReviewStatus.PENDING.value,
        kind.items.review_status == ReviewStatus.REJECTED.value,
    )


async def waiting_with_item(
    session: AsyncSession, kind: Kind[ItemT, VersionT], item_id: str
) -> int:
    """How many versions of the item wait with it (`waits_with_item`)."""
    query = (
        select(func.count())
        .select_from(kind.version_model)
        .join(kind.item_model, kind.items.id == kind.versions.item_id)
        .where(kind.versions.item_id == item_id, waits_with_item(kind))
    )
    return await session.scalar(query) or 0


async def admin_versions(
    session: AsyncSession,
    kind: Kind[ItemT, VersionT],
    page: Page,
    review_status: str | None,
    search: str | None,
    *,
    oldest_first: bool = False,
    work_only: bool = False,
    where: ColumnElement[bool] | None = None,
) -> tuple[list[tuple[VersionT, ItemT]], int, dict[str, int]]:
    """The version queue across items, newest first (or oldest first, the order a reviewer
    works through it), with counts per review status. `work_only` leaves out the versions
    that wait with their item (the console's queue); the API's list keeps them (seed 4.5).
    `where` narrows the rows and their counts alike (a kind's own filter: halted rollouts)."""
    base = kind.loading_versions(
        select(kind.version_model, kind.item_model).join(
            kind.item_model, kind.items.id == kind.versions.item_id
        )
    )
    if work_only:
        base = base.where(not_(waits_with_item(kind)))
    if where is not None:
        base = base.where(where)
    rows, total, counts = await _paged_with_counts(
        session,
        _searching(base, kind.versions.search, search),
        kind.versions.review_status,
        _by_age(kind.versions.created_at, kind.versions.id, oldest_first),
        page,
        review_status,
    )
    return [(row[0], row[1]) for row in rows], total, counts


def operable_by(kind: Kind[ItemT, VersionT], user: User) -> ColumnElement[bool]:
    """The items `lookup.check_owner` lets the user operate, as a condition: its personal
    ones and those of the organizations it belongs to now."""
    mine = kind.items.owner_id == user.id
    org_id = kind.items.org_id
    if org_id is None:
        return mine
    return or_(and_(mine, org_id.is_(None)), org_id.in_(orgs.member_org_ids(user.id)))


async def developer_items(
    session: AsyncSession,
    kind: Kind[ItemT, VersionT],
    owner: User,
    page: Page,
    review_status: str | None,
) -> tuple[list[ItemT], int]:
    """The items the caller may operate (`operable_by`) in every state, newest first."""
    query = select(kind.item_model).where(operable_by(kind, owner))
    if review_status is not None:
        query = query.where(kind.items.review_status == review_status)
    total = await session.scalar(query.with_only_columns(func.count()).order_by(None)) or 0
    rows = await session.scalars(
        query.order_by(kind.items.created_at.desc(), kind.items.id)
        .offset(page.offset)
        .limit(page.size)
    )
    return list(rows), total


async def versions_of(
    session: AsyncSession, kind: Kind[ItemT, VersionT], item_id: str
) -> list[VersionT]:
    """Every version of an item, newest (highest semver) first."""
    query = kind.loading_versions(
        select(kind.version_model).where(kind.versions.item_id == item_id)
    )
    rows = list(await session.scalars(query))
    rows.sort(key=lambda v: version_sort_key(v.version), reverse=True)
    return rows


async def version_exists(
    session: AsyncSession, kind: Kind[ItemT, VersionT], item_id: str, version: str
) -> bool:
    row = await session.scalar(
        select(kind.versions.id).where(
            kind.versions.item_id == item_id, kind.versions.version == version
        )
    )
    return row is not None


async def reviewer_labels(
    session: AsyncSession, reviewer_ids: Iterable[str | None]
) -> dict[str, str]:
    """User name first, then e-mail, then id (seed 2.1), for a whole page in one query."""
    ids = {i for i in reviewer_ids if i}
    labels = {SYSTEM_REVIEWER: SYSTEM_REVIEWER} if SYSTEM_REVIEWER in ids else {}
    ids.discard(SYSTEM_REVIEWER)
    if ids:
        for user_id, name, email in (
            await session.execute(select(User.id, User.name, User.email).where(User.id.in_(ids)))
        ).all():
            labels[user_id] = name or email or user_id
    for missing in ids - labels.keys():
        labels[missing] = missing
    return labels


def label_of(labels: dict[str, str], reviewer_id: str | None) -> str | None:
    """The label of a row's reviewer from a page's `reviewer_labels` (None: not reviewed)."""
    return labels.get(reviewer_id) if reviewer_id else None
