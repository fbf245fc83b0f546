"""The review state machine for plugins, scenarios and their versions (seed part 3,
CONTRACT sections 5 and 8).

Every function runs inside the caller's transaction with the item's row locked, changes
state, keeps `isLatest`/`latestVersion` in step and writes the audit record, all together.
The version rule itself (only pending moves; audit on every move; the newest approved
version is current) is shared by both kinds of item, in review/moves.py.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import InvalidState
from marketplace.models import Plugin, PluginVersion, ReviewStatus, Scenario, ScenarioVersion
from marketplace.packages.manifest import version_sort_key
from marketplace.review.audit import Trigger, record_review
from marketplace.review.moves import PLUGIN_VERSION, decide_pending, make_current_if_newest

PLUGIN = "plugin"
VERSION = PLUGIN_VERSION


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
    if await make_current_if_newest(session, version, plugin.latest_version):
        plugin.latest_version = version.version
        await session.flush()


async def approve_version(
    session: AsyncSession,
    plugin: Plugin,
    version: PluginVersion,
    *,
    reviewer_id: str,
    note: str | None,
    trigger: Trigger = Trigger.ADMIN,
) -> None:
    decide_pending(
        session, version, approved=True, reviewer_id=reviewer_id, note=note, trigger=trigger
    )
    await session.flush()
    # A taken-down plugin gets a current version but is not relisted (seed part 3).
    await _make_current(session, plugin, version)


async def reject_version(
    session: AsyncSession,
    version: PluginVersion,
    *,
    reviewer_id: str | None,
    note: str | None,
    trigger: Trigger = Trigger.ADMIN,
) -> None:
    decide_pending(
        session, version, approved=False, reviewer_id=reviewer_id, note=note, trigger=trigger
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


# ---------- scenarios: reviewed per version, like plugin versions (CONTRACT 8) ----------


async def lock_scenario(session: AsyncSession, scenario_id: str) -> Scenario:
    """The scenario row, locked (PostgreSQL FOR UPDATE; SQLite already serialises writers)."""
    scenario = await session.scalar(
        select(Scenario)
        .where(Scenario.id == scenario_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if scenario is None:  # the caller looked it up in this transaction; only a race gets here
        raise InvalidState("Scenario no longer exists")
    return scenario


def sync_scenario_status(scenario: Scenario, newest: ScenarioVersion) -> None:
    """A scenario's reviewStatus is its newest version's, until it is taken down."""
    if newest.version == scenario.version and scenario.review_status != ReviewStatus.TAKEN_DOWN:
        scenario.review_status = newest.review_status


async def review_scenario_version(
    session: AsyncSession,
    scenario: Scenario,
    version: ScenarioVersion,
    *,
    approved: bool,
    reviewer_id: str,
    note: str | None,
) -> None:
    """Approve (current when it is the newest approved) or reject a pending scenario version.

    As for plugins, approving a version of a taken-down scenario makes it current but does
    not list the scenario again.
    """
    decide_pending(
        session,
        version,
        approved=approved,
        reviewer_id=reviewer_id,
        note=note,
        trigger=Trigger.ADMIN,
    )
    await session.flush()
    if approved and await make_current_if_newest(session, version, scenario.latest_version):
        scenario.latest_version = version.version
    sync_scenario_status(scenario, version)
    await session.flush()


async def take_down_scenario(session: AsyncSession, scenario: Scenario) -> None:
    """Developer takedown: the public group stops serving it; versions are kept."""
    if scenario.review_status == ReviewStatus.TAKEN_DOWN:
        raise InvalidState("Scenario is already taken down")
    scenario.review_status = ReviewStatus.TAKEN_DOWN
    await session.flush()
