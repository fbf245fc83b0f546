"""The automatic checks' findings on a new version (CONTRACT 12), for every kind: the
version they compare against, how they are kept, and the rejection an error brings.

The rules themselves are `marketplace.rules.review`'s; this module runs them inside the
transaction that creates or completes the version, under the item's lock.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.kit.jsonsafe import storable
from marketplace.models import ReviewStatus
from marketplace.packages.manifest import note_line, version_sort_key
from marketplace.publishing import review
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace.rules.findings import Finding

Kind = ItemKind[ItemT, VersionT]


async def last_approved(
    session: AsyncSession, kind: Kind[ItemT, VersionT], item_id: str
) -> VersionT | None:
    """The item's current version, else its newest approved one; None when no version
    was ever approved (or every approved one was taken down)."""
    current = await session.scalar(
        select(kind.version_model).where(
            kind.parent == item_id, kind.version_column("is_latest").is_(True)
        )
    )
    if current is not None:  # only an approved version can be current (a check constraint)
        return current
    approved = (
        await session.execute(
            select(kind.version_column("id"), kind.version_column("version")).where(
                kind.parent == item_id,
                kind.version_column("review_status") == ReviewStatus.APPROVED,
            )
        )
    ).all()
    if not approved:
        return None
    # Only the winner's row is loaded: a plugin version carries its whole manifest.
    newest_id = max(approved, key=lambda row: version_sort_key(row[1]))[0]
    return await session.get(kind.version_model, newest_id)


def as_stored(findings: Sequence[Finding]) -> list[dict[str, str]]:
    """The findings as the version row keeps them. A path holds manifest keys as sent,
    and a NUL in one (create-version takes any JSON) cannot be stored in PostgreSQL."""
    stored: list[dict[str, str]] = storable([finding.to_json() for finding in findings])
    return stored


async def settle(
    session: AsyncSession,
    kind: Kind[ItemT, VersionT],
    item: ItemT,
    version: VersionT,
    findings: Sequence[Finding],
) -> bool:
    """Keep the findings on the pending version; an error among them rejects it at once
    (CONTRACT 4, automatic validation), its note listing the errors. True if rejected."""
    version.findings = as_stored(findings)
    errors = [note_line(finding) for finding in findings if finding.severity == "error"]
    if errors:
        await review.auto_reject(session, kind, item, version, errors)
    else:
        await session.flush()
    return bool(errors)
