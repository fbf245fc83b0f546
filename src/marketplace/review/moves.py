"""Rules every reviewed version follows, whatever kind of item it belongs to.

A version (of a plugin or of a scenario) moves only from pending, to approved or to
rejected, and each move writes its audit record in the caller's transaction. The newest
approved version of an item is its one current version (`is_latest`).
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import InvalidState
from marketplace.models import PluginVersion, ReviewStatus, ScenarioVersion
from marketplace.review.audit import SYSTEM_REVIEWER, Trigger, record_review
from marketplace.review.versions import is_newer

VersionRow = PluginVersion | ScenarioVersion

# Audit resourceType of each kind of version.
PLUGIN_VERSION = "plugin_version"
SCENARIO_VERSION = "scenario_version"


def resource_type_of(row: VersionRow) -> str:
    return PLUGIN_VERSION if isinstance(row, PluginVersion) else SCENARIO_VERSION


def decide_pending(
    session: AsyncSession,
    row: VersionRow,
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
    if row.review_status != ReviewStatus.PENDING:
        verb = "approved" if approved else "rejected"
        raise InvalidState(f"Only a pending version can be {verb}, not {row.review_status}")
    row.review_status = ReviewStatus.APPROVED if approved else ReviewStatus.REJECTED
    if not approved:
        row.is_latest = False
    row.review_note = note
    row.reviewed_by = reviewer_id if reviewer_id is not None else SYSTEM_REVIEWER
    record_review(
        session,
        approved=approved,
        actor_id=reviewer_id,
        resource_type=resource_type_of(row),
        resource_id=row.id,
        trigger=trigger,
        note=note,
    )


async def make_current_if_newest(
    session: AsyncSession, row: VersionRow, current_version: str | None
) -> bool:
    """Move is_latest to the approved `row` when it is newer than `current_version`.

    Returns whether it moved; the caller then records row.version as its item's current
    version. The old current row is cleared and flushed first, so the partial unique
    index never sees two current rows.
    """
    if not is_newer(row.version, current_version):
        return False
    if isinstance(row, PluginVersion):
        clear = update(PluginVersion).where(
            PluginVersion.plugin_id == row.plugin_id, PluginVersion.is_latest.is_(True)
        )
    else:
        clear = update(ScenarioVersion).where(
            ScenarioVersion.scenario_id == row.scenario_id, ScenarioVersion.is_latest.is_(True)
        )
    await session.execute(
        clear.values(is_latest=False).execution_options(synchronize_session="fetch")
    )
    await session.flush()
    row.is_latest = True
    return True
