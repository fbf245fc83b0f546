"""Version takedown (CONTRACT 11): an approved version is withdrawn, for good.

Runs in the caller's transaction with the item row locked (`lookup.locked_version_with_item`),
like every review move, so a takedown racing an approval of another version of the same item
still leaves exactly one current version (DESIGN invariant 1). The version's status, the new
current version, the audit record, the revocation row and the transparency log's entry
commit together or not at all.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import InvalidState
from marketplace.kit.dbtypes import utcnow
from marketplace.models import ReviewStatus, Revocation
from marketplace.publishing.audit import SYSTEM_REVIEWER, Trigger, record_takedown
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace.publishing.log import log_takedown
from marketplace.publishing.review import make_current
from marketplace_rules.versions import version_sort_key

Kind = ItemKind[ItemT, VersionT]

REASON_MAX_CHARS = 2000


def check_can_take_down(kind: Kind[ItemT, VersionT], item: ItemT, version: VersionT) -> None:
    """Only an approved version can be withdrawn: 409 INVALID_STATE names why not."""
    if version.review_status == ReviewStatus.APPROVED:
        return
    label = kind.version_label(item, version.version)
    if version.review_status == ReviewStatus.TAKEN_DOWN:
        raise InvalidState(f"{label} is already taken down")
    # A pending version is withdrawn by rejecting it; a rejected one was never distributed.
    raise InvalidState(
        f"Only an approved version can be taken down; {label} is {version.review_status}"
    )


async def highest_approved(
    session: AsyncSession, kind: Kind[ItemT, VersionT], item_id: str
) -> VersionT | None:
    """The item's approved version of highest semver precedence that may be current."""
    rows = await session.scalars(
        select(kind.version_model).where(
            kind.versions.item_id == item_id,
            kind.versions.review_status == ReviewStatus.APPROVED.value,
            kind.may_be_current(),
        )
    )
    return max(rows, key=lambda v: version_sort_key(v.version), default=None)


async def take_down_version(
    session: AsyncSession,
    kind: Kind[ItemT, VersionT],
    item: ItemT,
    version: VersionT,
    *,
    actor_id: str | None,
    reason: str,
    trigger: Trigger,
) -> None:
    """approved → taken_down; a current version hands over to the highest approved one left
    (none: latestVersion null, the item is not downloadable). Never current again: only a
    pending version can be approved, and the database refuses a current row that is not
    approved."""
    check_can_take_down(kind, item, version)
    was_current = version.is_latest
    now = utcnow()
    version.review_status = ReviewStatus.TAKEN_DOWN.value
    version.review_note = reason
    # No actor: the system's own takedown (an inspection found an error, CONTRACT 13).
    version.reviewed_by = actor_id if actor_id is not None else SYSTEM_REVIEWER
    version.is_latest = False
    version.taken_down_at = now
    await session.flush()
    if was_current:
        successor = await highest_approved(session, kind, item.id)
        if successor is None:
            item.latest_version = None
        else:
            await make_current(session, kind, item, successor)
    await kind.after_versions_change(session, item)
    record_takedown(
        session,
        actor_id=actor_id,
        resource_type=kind.version_resource,
        resource_id=version.id,
        trigger=trigger,
        reason=reason,
    )
    # The log's entry first: the revocation names it inside the signed list.
    log_index = await log_takedown(session, kind, item, version, now)
    # The digest the version's signed release names, so a client matches what it installed.
    sha256 = kind.served_content(version).sha256
    session.add(
        Revocation(
            kind=kind.name,
            version_id=version.id,
            key=kind.key_of(item),
            version=version.version,
            sha256=sha256,
            reason=reason,
            revoked_at=now,
            log_index=log_index,
        )
    )
    await session.flush()
