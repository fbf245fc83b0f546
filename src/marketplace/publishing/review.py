"""The review moves every kind of version follows (seed part 3, CONTRACT 5 and 8).

Every function runs inside the caller's transaction with the item's row locked
(`lookup.lock_item`), changes state, keeps `is_latest`/`latest_version` in step and writes
the audit record, all together (DESIGN invariants 1 and 6).

A version moves only from pending, to approved or to rejected. Approving a version makes
it the item's current version, whatever its number (seed 3 and 9.5).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import InvalidState
from marketplace.models import ReviewStatus
from marketplace.publishing.audit import SYSTEM_REVIEWER, Trigger, record_review
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace.publishing.releases import sign_release
from marketplace.publishing.schemas import NOTE_MAX_CHARS
from marketplace.trust.keyring import Keyring

AUTO_NOTE_LINE_MAX_CHARS = 300
_MORE_LINE_RESERVE = 80  # room for the "... and N more" line

Kind = ItemKind[ItemT, VersionT]


def _decide_pending(
    session: AsyncSession,
    kind: Kind[ItemT, VersionT],
    version: VersionT,
    *,
    approved: bool,
    reviewer_id: str | None,
    note: str | None,
    trigger: Trigger,
) -> None:
    """pending → approved or rejected, with reviewedBy, reviewNote and the audit record.

    Anything but a pending version is 409 INVALID_STATE. A rejection without a reviewer is
    the system's (automatic validation): reviewedBy `system`, actorId null.
    """
    if version.review_status != ReviewStatus.PENDING:
        verb = "approved" if approved else "rejected"
        raise InvalidState(f"Only a pending version can be {verb}, not {version.review_status}")
    version.review_status = ReviewStatus.APPROVED if approved else ReviewStatus.REJECTED
    if not approved:
        version.is_latest = False
    version.review_note = note
    version.reviewed_by = reviewer_id if reviewer_id is not None else SYSTEM_REVIEWER
    record_review(
        session,
        approved=approved,
        actor_id=reviewer_id,
        resource_type=kind.version_resource,
        resource_id=version.id,
        trigger=trigger,
        note=note,
    )


async def make_current(
    session: AsyncSession, kind: Kind[ItemT, VersionT], item: ItemT, version: VersionT
) -> None:
    """`version` becomes the item's one current version; latestVersion follows it.

    The old current row is cleared and flushed first, so the partial unique index never
    sees two current rows.
    """
    await session.execute(
        update(kind.version_model)
        .where(kind.versions.item_id == item.id, kind.versions.is_latest.is_(True))
        .values(is_latest=False)
        .execution_options(synchronize_session="fetch")
    )
    await session.flush()
    version.is_latest = True
    item.latest_version = version.version


async def decide(
    session: AsyncSession,
    kind: Kind[ItemT, VersionT],
    item: ItemT,
    version: VersionT,
    *,
    approved: bool,
    reviewer_id: str | None,
    note: str | None,
    keyring: Keyring | None,
    trigger: Trigger = Trigger.ADMIN,
) -> None:
    """Approve (the version becomes current) or reject a pending version.

    Approving a version of a taken-down item makes it current but does not list the item
    again (seed part 3). An approval signs the version's release record with `keyring` in
    the same transaction (CONTRACT 11); only a rejection may go without one.
    """
    _decide_pending(
        session,
        kind,
        version,
        approved=approved,
        reviewer_id=reviewer_id,
        note=note,
        trigger=trigger,
    )
    await session.flush()
    if approved:
        if keyring is None:  # a programming error: every approval path passes the keyring
            raise ValueError("approving a version signs its release: a keyring is required")
        if kind.becomes_current(version):
            await make_current(session, kind, item, version)
        await sign_release(session, keyring, kind, item, version)
        await kind.after_versions_change(session, item)
    kind.after_version_decision(item, version)
    await session.flush()


def auto_rejection_note(findings: Sequence[str]) -> str:
    """The findings as a review note, within the cap a reviewer's note has: a hostile
    manifest can hold half a million problems, and notes are copied into the audit log."""
    head = "Automatic validation failed:"
    lines: list[str] = []
    budget = NOTE_MAX_CHARS - len(head) - _MORE_LINE_RESERVE
    for finding in findings:
        line = "\n- " + _shortened(finding, AUTO_NOTE_LINE_MAX_CHARS)
        if len(line) > budget:
            break
        lines.append(line)
        budget -= len(line)
    rest = len(findings) - len(lines)
    more = f"\n- ... and {rest} more (every finding is listed with the version)" if rest else ""
    return head + "".join(lines) + more


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def auto_reject(
    session: AsyncSession,
    kind: Kind[ItemT, VersionT],
    item: ItemT,
    version: VersionT,
    findings: Sequence[str],
) -> None:
    """System validation found problems: the version exists, rejected, with the findings."""
    await decide(
        session,
        kind,
        item,
        version,
        approved=False,
        reviewer_id=None,
        note=auto_rejection_note(findings),
        keyring=None,
        trigger=Trigger.AUTO_VALIDATION,
    )


async def take_down(session: AsyncSession, kind: Kind[ItemT, VersionT], item: ItemT) -> None:
    """Developer takedown: distribution stops; versions (and purchases) stay."""
    if item.review_status == ReviewStatus.TAKEN_DOWN:
        raise InvalidState(f"{kind.title} is already taken down")
    item.review_status = ReviewStatus.TAKEN_DOWN
    kind.after_take_down(item)
    await session.flush()
