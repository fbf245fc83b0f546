"""The admin list structure shared by every reviewed kind of item (seed 4.5, CONTRACT 5):
a page of rows plus counts per review status under the same search."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Select, func
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.kit.pagination import Page
from marketplace.models import ReviewStatus

STATUSES = [s.value for s in ReviewStatus]


def status_counts(rows: Iterable[tuple[str, int]]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for status, count in rows:
        counts[status] = count
    counts["all"] = sum(counts[s] for s in STATUSES)
    return counts


async def paged_with_counts(
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
