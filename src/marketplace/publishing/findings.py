"""The automatic checks' findings on a new version (CONTRACT 12), for every kind: how
they are kept, and the rejection an error brings.

The rules themselves are `marketplace_rules.review`'s; the callers run them inside the
transaction that creates or completes the version, under the item's lock, against the
version the reviewer's diff compares with (`publishing.diff.diff_base`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.kit.jsonsafe import storable
from marketplace.packages.manifest import note_line
from marketplace.publishing import review
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace_rules.findings import Finding

Kind = ItemKind[ItemT, VersionT]


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
