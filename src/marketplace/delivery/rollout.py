"""Staged rollout moves (CONTRACT 16), each audited in its own transaction.

A version's rollout decides who the update check offers it to, never whether it is current
(seed 9.5: approval makes a stable version current). The rules:
- a pending stable version's percent may be set freely (100: full, below: rolling);
- once approved, a rolling version's percent may only grow, and 100 makes it full;
- a rolling approved version may be halted, and a halted one resumed (back to rolling);
- a full version never rolls again; prerelease, rejected and taken-down versions have no
  rollout. Anything else is 409 INVALID_STATE.
The caller holds the plugin's and the version's row locks (item first, then version).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.delivery import counters
from marketplace.errors import InvalidState
from marketplace.kit.dbtypes import utcnow
from marketplace.models import (
    FULL_PERCENT,
    AuditLog,
    Channel,
    Plugin,
    PluginVersion,
    ReviewStatus,
    RolloutState,
)
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.audit import Action, Trigger

AUTOMATIC_PREFIX = "automatic: "


def _label(plugin: Plugin, version: PluginVersion) -> str:
    return PLUGINS.version_label(plugin, version.version)


def _check_has_rollout(plugin: Plugin, version: PluginVersion) -> None:
    if version.channel != Channel.STABLE:
        raise InvalidState(f"{_label(plugin, version)} is a prerelease: it has no rollout")
    if version.review_status not in (ReviewStatus.PENDING, ReviewStatus.APPROVED):
        raise InvalidState(
            f"{_label(plugin, version)} is {version.review_status}: it has no rollout"
        )


def _audit(
    session: AsyncSession,
    action: Action,
    version: PluginVersion,
    *,
    actor_id: str | None,
    trigger: Trigger,
    note: str,
) -> None:
    session.add(
        AuditLog(
            action=action.value,
            actor_id=actor_id,
            resource_type=PLUGINS.version_resource,
            resource_id=version.id,
            outcome=version.rollout_state,
            trigger=trigger.value,
            note=note,
        )
    )


async def set_percent(
    session: AsyncSession,
    plugin: Plugin,
    version: PluginVersion,
    percent: int,
    *,
    actor_id: str | None,
    trigger: Trigger,
) -> None:
    """PUT .../rollout: the share of installs the update check offers the version to."""
    _check_has_rollout(plugin, version)
    before = version.rollout_percent
    if version.review_status == ReviewStatus.APPROVED:
        if version.rollout_state == RolloutState.FULL:
            raise InvalidState(f"{_label(plugin, version)} is fully rolled out already")
        if version.rollout_state == RolloutState.HALTED:
            raise InvalidState(f"The rollout of {_label(plugin, version)} is halted: resume it")
        if percent < before:
            raise InvalidState(
                f"The rollout of {_label(plugin, version)} is at {before}%: it may only grow"
            )
    if percent == before:
        return  # already there (a retried request): nothing moved, nothing to audit
    version.rollout_percent = percent
    version.rollout_state = RolloutState.FULL if percent == FULL_PERCENT else RolloutState.ROLLING
    version.rollout_updated_at = utcnow()
    _audit(
        session,
        Action.ROLLOUT_SET,
        version,
        actor_id=actor_id,
        trigger=trigger,
        note=f"{before}% -> {percent}%",
    )
    await session.flush()


def _check_rolling(plugin: Plugin, version: PluginVersion) -> None:
    _check_has_rollout(plugin, version)
    if version.review_status != ReviewStatus.APPROVED:
        raise InvalidState(f"{_label(plugin, version)} is pending: only its percent can be set")
    if version.rollout_state != RolloutState.ROLLING:
        raise InvalidState(
            f"Only a rolling version can be halted; {_label(plugin, version)} is "
            f"{version.rollout_state}"
        )


async def halt(
    session: AsyncSession,
    plugin: Plugin,
    version: PluginVersion,
    reason: str,
    *,
    actor_id: str | None,
    trigger: Trigger,
) -> None:
    """POST .../rollout/halt: nobody is offered the version; installs on it are offered the
    version below it (the update check's `halted_rollback`)."""
    _check_rolling(plugin, version)
    version.rollout_state = RolloutState.HALTED
    version.rollout_halted_reason = reason
    version.rollout_updated_at = utcnow()
    _audit(session, Action.ROLLOUT_HALT, version, actor_id=actor_id, trigger=trigger, note=reason)
    await session.flush()


async def resume(
    session: AsyncSession,
    plugin: Plugin,
    version: PluginVersion,
    *,
    actor_id: str | None,
    trigger: Trigger,
) -> None:
    """POST .../rollout/resume: a halted version rolls again at the percent it had; the
    automatic halt judges it afresh, on the signals that come after."""
    _check_has_rollout(plugin, version)
    if version.rollout_state != RolloutState.HALTED:
        raise InvalidState(
            f"Only a halted rollout can be resumed; {_label(plugin, version)} is "
            f"{version.rollout_state}"
        )
    reason = version.rollout_halted_reason
    await counters.judge_afresh(session, plugin.id, version.version)
    version.rollout_state = RolloutState.ROLLING
    version.rollout_halted_reason = None
    version.rollout_updated_at = utcnow()
    _audit(
        session,
        Action.ROLLOUT_RESUME,
        version,
        actor_id=actor_id,
        trigger=trigger,
        note=f"at {version.rollout_percent}% (was halted: {reason})",
    )
    await session.flush()
