"""The transparency log's one-time backfill (CONTRACT 15): a database from before the log
gets an entry for each key of the keyring, then each past approval and takedown, oldest first.

It runs when the service starts (and from `marketplace db upgrade`), in one transaction
holding the log's lock, only while migration 0014's `backfill_pending` is set, so it happens
once however many processes start together. Every approved version ends with a signed
release record carrying its `logIndex` (one approved before release records existed is
signed now), and every revocation row with the index of its takedown's entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import LogHead, ReviewStatus, Revocation
from marketplace.publishing.kinds import ItemKind
from marketplace.publishing.log import approval_fields
from marketplace.publishing.releases import release_record, signed
from marketplace.transparency.log import (
    HEAD_ID,
    append_key_changes,
    append_many,
    iso,
    locked_head,
)
from marketplace.trust.keyring import Keyring

AnyKind = ItemKind[Any, Any]
DECIDED = (ReviewStatus.APPROVED.value, ReviewStatus.TAKEN_DOWN.value)


@dataclass
class PastDecision:
    at: datetime
    order: int  # an approval before a takedown of the same instant
    tiebreak: str
    action: str
    subject: str
    fields: dict[str, Any]
    target: Any  # the version (approval) or revocation row (takedown) that learns its index


async def _approvals(
    session: AsyncSession, keyring: Keyring, kind: AnyKind
) -> tuple[list[PastDecision], dict[str, tuple[Any, Any]]]:
    """Every version ever approved (taken-down ones too), and each version with its item."""
    versions = list(
        await session.scalars(
            select(kind.version_model)
            .where(kind.versions.review_status.in_(DECIDED))
            .with_for_update()
        )
    )
    item_ids = {kind.item_id_of(version) for version in versions}
    items = {
        item.id: item
        for item in await session.scalars(
            select(kind.item_model).where(kind.items.id.in_(item_ids))
        )
    }
    decisions: list[PastDecision] = []
    for version in versions:
        item = items[kind.item_id_of(version)]
        approved_at = version.approved_at or version.created_at
        version.approved_at = approved_at
        release = version.release if isinstance(version.release, dict) else None
        if release is None:
            release = await signed(keyring, release_record(kind, item, version, approved_at))
            version.release = release
        decisions.append(
            PastDecision(
                approved_at, 0, version.id, "approve", version.id, approval_fields(release), version
            )
        )
    return decisions, {version.id: (item, version) for version in versions}


async def _takedowns(
    session: AsyncSession, kinds: dict[str, AnyKind], versions: dict[str, tuple[Any, Any]]
) -> list[PastDecision]:
    decisions: list[PastDecision] = []
    for row in await session.scalars(select(Revocation).with_for_update()):
        fields: dict[str, Any] = {
            "kind": row.kind,
            "key": row.key,
            "version": row.version,
            "sha256": row.sha256,
            "distribution": None,
            "size": None,
            "at": iso(row.revoked_at),
        }
        kind, found = kinds.get(row.kind), versions.get(row.version_id)
        if kind is not None and found is not None:  # else deleted since: what the row kept
            served = kind.served_content(found[1])
            fields |= {"distribution": served.distribution, "size": served.size}
        decisions.append(
            PastDecision(row.revoked_at, 1, row.id, "takedown", row.version_id, fields, row)
        )
    return decisions


async def backfill(session: AsyncSession, keyring: Keyring, kinds: Sequence[AnyKind]) -> int:
    """Append the history once (a no-op when it is done); how many entries it appended.

    The rows it completes (versions, revocations) are locked before the log's head, the
    order every decision takes (item, version, then head): a decision meanwhile waits for
    them or, holding the head, finds the backfill pending and gives up (503)."""
    if not await session.scalar(select(LogHead.backfill_pending).where(LogHead.id == HEAD_ID)):
        return 0
    decisions: list[PastDecision] = []
    versions: dict[str, tuple[Any, Any]] = {}
    for kind in kinds:
        approvals, of_kind = await _approvals(session, keyring, kind)
        decisions += approvals
        versions |= of_kind
    decisions += await _takedowns(session, {kind.name: kind for kind in kinds}, versions)
    decisions.sort(key=lambda d: (d.at, d.order, d.tiebreak))
    head = await locked_head(session)
    if not head.backfill_pending:  # another process did it while this one waited
        session.expunge_all()  # forget the records signed here (autoflush is off)
        return 0
    keys = await anyio.to_thread.run_sync(keyring.keys)
    appended = len(await append_key_changes(session, keys, head))
    indexes = await append_many(
        session,
        [(d.action, d.subject, d.fields) for d in decisions],
        head,
        backfilled=True,
    )
    for decision, index in zip(decisions, indexes, strict=True):
        if decision.action == "approve":
            decision.target.release = decision.target.release | {"logIndex": index}
        else:
            decision.target.log_index = index
    await session.flush()
    return appended + len(indexes)
