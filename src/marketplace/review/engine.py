"""The review state machine for plugins and their versions (seed part 3, CONTRACT section 5).

Every function runs inside the caller's transaction with the plugin row locked, changes
state, keeps `isLatest`/`latestVersion` in step and writes the audit record, all together.
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import InvalidState
from marketplace.models import Plugin, PluginVersion, ReviewStatus
from marketplace.packages.manifest import version_sort_key
from marketplace.review.audit import SYSTEM_REVIEWER, Trigger, record_review
from marketplace.review.versions import is_newer

PLUGIN = "plugin"
VERSION = "plugin_version"


async def lock_plugin(session: AsyncSession, plugin_id: str) -> Plugin:
    """SELECT ... FOR UPDATE on PostgreSQL; SQLite's BEGIN IMMEDIATE already serialises writers."""
    plugin = await session.scalar(
        select(Plugin)
        .where(Plugin.id == plugin_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if plugin is None:  # the caller looked it up in this transaction; only a race gets here
        raise InvalidState("Plugin no longer exists")
    return plugin


async def _versions(session: AsyncSession, plugin_id: str) -> list[PluginVersion]:
    rows = await session.scalars(
        select(PluginVersion)
        .where(PluginVersion.plugin_id == plugin_id)
        .execution_options(populate_existing=True)
    )
    return list(rows)


async def _make_current(session: AsyncSession, plugin: Plugin, version: PluginVersion) -> None:
    """Move isLatest to `version` when it is the highest approved one; sync latestVersion."""
    if not is_newer(version.version, plugin.latest_version if _has_latest(plugin) else None):
        return
    # Clear first and flush, so the partial unique index never sees two current rows.
    await session.execute(
        update(PluginVersion)
        .where(PluginVersion.plugin_id == plugin.id, PluginVersion.is_latest.is_(True))
        .values(is_latest=False)
        .execution_options(synchronize_session="fetch")
    )
    await session.flush()
    version.is_latest = True
    plugin.latest_version = version.version
    await session.flush()


def _has_latest(plugin: Plugin) -> bool:
    return plugin.latest_version is not None


def _approve_version_row(version: PluginVersion, reviewer: str, note: str | None) -> None:
    version.review_status = ReviewStatus.APPROVED
    version.reviewed_by = reviewer
    version.review_note = note


async def approve_version(
    session: AsyncSession,
    plugin: Plugin,
    version: PluginVersion,
    *,
    reviewer_id: str,
    note: str | None,
    trigger: Trigger = Trigger.ADMIN,
) -> None:
    if version.review_status != ReviewStatus.PENDING:
        raise InvalidState(f"Only a pending version can be approved, not {version.review_status}")
    _approve_version_row(version, reviewer_id, note)
    await session.flush()
    # A taken-down plugin gets a current version but is not relisted (seed part 3).
    await _make_current(session, plugin, version)
    record_review(
        session,
        approved=True,
        actor_id=reviewer_id,
        resource_type=VERSION,
        resource_id=version.id,
        trigger=trigger,
        note=note,
    )


async def reject_version(
    session: AsyncSession,
    version: PluginVersion,
    *,
    reviewer_id: str | None,
    note: str | None,
    trigger: Trigger = Trigger.ADMIN,
) -> None:
    if version.review_status != ReviewStatus.PENDING:
        raise InvalidState(f"Only a pending version can be rejected, not {version.review_status}")
    version.review_status = ReviewStatus.REJECTED
    version.is_latest = False
    version.review_note = note
    version.reviewed_by = reviewer_id if reviewer_id is not None else SYSTEM_REVIEWER
    record_review(
        session,
        approved=False,
        actor_id=reviewer_id,
        resource_type=VERSION,
        resource_id=version.id,
        trigger=trigger,
        note=note,
    )
    await session.flush()


async def auto_reject_version(
    session: AsyncSession, version: PluginVersion, findings: list[str]
) -> None:
    """System validation found problems: the version exists, rejected, with every finding."""
    note = "Automatic validation failed:\n" + "\n".join(f"- {f}" for f in findings)
    await reject_version(
        session, version, reviewer_id=None, note=note, trigger=Trigger.AUTO_VALIDATION
    )


async def release_admin_version(
    session: AsyncSession, plugin: Plugin, version: PluginVersion, admin_id: str
) -> None:
    """Versions an administrator uploads are approved and current at once (CONTRACT 5)."""
    await approve_version(
        session, plugin, version, reviewer_id=admin_id, note=None, trigger=Trigger.ADMIN
    )


async def approve_plugin(
    session: AsyncSession,
    plugin: Plugin,
    *,
    reviewer_id: str,
    note: str | None,
    approve_pending_version: bool | None,
) -> None:
    plugin.review_status = ReviewStatus.APPROVED
    plugin.enabled = True
    plugin.review_note = note
    plugin.reviewed_by = reviewer_id
    record_review(
        session,
        approved=True,
        actor_id=reviewer_id,
        resource_type=PLUGIN,
        resource_id=plugin.id,
        trigger=Trigger.ADMIN,
        note=note,
    )
    await session.flush()
    if approve_pending_version is False:
        return
    versions = await _versions(session, plugin.id)
    if any(v.review_status == ReviewStatus.APPROVED for v in versions):
        return
    pending = [v for v in versions if v.review_status == ReviewStatus.PENDING]
    if pending:
        # First publication: approving the plugin releases its newest pending version.
        newest = max(pending, key=lambda v: version_sort_key(v.version))
        await approve_version(
            session, plugin, newest, reviewer_id=reviewer_id, note=note, trigger=Trigger.LINKAGE
        )


async def reject_plugin(
    session: AsyncSession, plugin: Plugin, *, reviewer_id: str, note: str | None
) -> None:
    plugin.review_status = ReviewStatus.REJECTED
    plugin.enabled = False
    plugin.review_note = note
    plugin.reviewed_by = reviewer_id
    record_review(
        session,
        approved=False,
        actor_id=reviewer_id,
        resource_type=PLUGIN,
        resource_id=plugin.id,
        trigger=Trigger.ADMIN,
        note=note,
    )
    await session.flush()


async def take_down(session: AsyncSession, plugin: Plugin) -> None:
    """Developer takedown: distribution stops; versions and purchases stay."""
    if plugin.review_status == ReviewStatus.TAKEN_DOWN:
        raise InvalidState("Plugin is already taken down")
    plugin.review_status = ReviewStatus.TAKEN_DOWN
    plugin.enabled = False
    await session.flush()


async def resubmit(session: AsyncSession, plugin: Plugin) -> None:
    """A developer's edit of a rejected plugin sends it back to review."""
    if plugin.review_status == ReviewStatus.REJECTED:
        plugin.review_status = ReviewStatus.PENDING
        await session.flush()
