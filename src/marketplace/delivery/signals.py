"""Client signals (CONTRACT 16): installs, uninstalls, crash and abuse reports.

At most one signal per user, plugin, version and kind a day, held by a unique constraint:
the first answers 201 and counts, repeats answer 200 and count nothing. Each new signal
moves the day's and the version's counters in its own transaction, and a signal about a
rolling version judges the automatic halt there too: the plugin's and then the version's
row are locked first (the one lock order), so of two concurrent signals the second sees
what the first decided, and a threshold is crossed, and acted on, exactly once. Rollout
moves take the same plugin lock (FOR UPDATE), so a move and a halt never cross either.
"""

from __future__ import annotations

from sqlalchemy import exists, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.config import Settings
from marketplace.delivery import counters, rollout
from marketplace.delivery.counters import VersionCounts
from marketplace.errors import InvalidState
from marketplace.models import (
    Plugin,
    PluginSignal,
    PluginVersion,
    ReviewStatus,
    RolloutState,
    SignalKind,
)
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.audit import Trigger
from marketplace.publishing.lookup import find_version

DAILY_COUNTER = {
    SignalKind.INSTALL: "installs",
    SignalKind.UNINSTALL: "uninstalls",
    SignalKind.CRASH: "crash_reports",
    SignalKind.ABUSE: "abuse_reports",
}


def _is_rolling(version: PluginVersion) -> bool:
    return (
        version.review_status == ReviewStatus.APPROVED
        and version.rollout_state == RolloutState.ROLLING
    )


async def _lock_plugin(session: AsyncSession, plugin_id: str) -> Plugin:
    """The plugin's row lock for the halt's decision. FOR NO KEY UPDATE on PostgreSQL, the
    lock its own UPDATEs take: an install has already inserted its record (a KEY SHARE lock
    on the plugin through the foreign key) and raised the download count, so FOR UPDATE
    would wait for every concurrent install's KEY SHARE while they wait for its UPDATE."""
    plugin = await session.scalar(
        select(Plugin)
        .where(Plugin.id == plugin_id)
        .with_for_update(key_share=True)
        .execution_options(populate_existing=True)
    )
    if plugin is None:  # looked up in this request; only a concurrent delete gets here
        raise InvalidState("Plugin no longer exists")
    return plugin


async def _same_day(
    session: AsyncSession, user_id: str, version: PluginVersion, kind: SignalKind
) -> PluginSignal | None:
    return await session.scalar(
        select(PluginSignal).where(
            PluginSignal.user_id == user_id,
            PluginSignal.plugin_id == version.plugin_id,
            PluginSignal.version == version.version,
            PluginSignal.kind == kind.value,
            PluginSignal.day == counters.today(),
        )
    )


async def _first_of_user(session: AsyncSession, signal: PluginSignal) -> bool:
    """Whether no earlier day holds the same user's signal of this kind and version (the
    version's distinct-user counters). A lookup on the unique index, not a scan."""
    earlier = exists().where(
        PluginSignal.user_id == signal.user_id,
        PluginSignal.plugin_id == signal.plugin_id,
        PluginSignal.version == signal.version,
        PluginSignal.kind == signal.kind,
        PluginSignal.day != signal.day,
    )
    return not await session.scalar(select(earlier))


async def _installed_it(session: AsyncSession, signal: PluginSignal) -> bool:
    """Whether the user reported installing this version (on any day): only installers'
    uninstalls and crashes count against a rollout, so accounts that never installed it
    cannot halt it."""
    installed = exists().where(
        PluginSignal.user_id == signal.user_id,
        PluginSignal.plugin_id == signal.plugin_id,
        PluginSignal.version == signal.version,
        PluginSignal.kind == SignalKind.INSTALL.value,
    )
    return bool(await session.scalar(select(installed)))


async def _version_amounts(
    session: AsyncSession, kind: SignalKind, signal: PluginSignal
) -> dict[str, int]:
    if kind == SignalKind.ABUSE:
        return {"abuse_reports": 1}
    first = await _first_of_user(session, signal)
    if kind == SignalKind.INSTALL:
        return {"installs": int(first)}
    counted = int(first and await _installed_it(session, signal))
    if kind == SignalKind.UNINSTALL:
        return {"uninstalls": counted}
    return {"crash_reports": 1, "crash_users": counted}


async def record(
    session: AsyncSession,
    settings: Settings,
    *,
    user_id: str,
    plugin: Plugin,
    version: PluginVersion,
    kind: SignalKind,
    message: str | None = None,
) -> tuple[PluginSignal, bool]:
    """The day's signal (created: True when this call made it)."""
    if _is_rolling(version):
        plugin = await _lock_plugin(session, plugin.id)
        version = await find_version(session, PLUGINS, version.id, lock=True)
    existing = await _same_day(session, user_id, version, kind)
    if existing is not None:
        return existing, False
    signal = PluginSignal(
        user_id=user_id,
        plugin_id=plugin.id,
        version=version.version,
        kind=kind.value,
        day=counters.today(),
        message=message,
    )
    try:
        async with session.begin_nested():  # added inside: see commerce.service
            session.add(signal)
            await session.flush()
    except IntegrityError:  # the same user's concurrent signal won
        existing = await _same_day(session, user_id, version, kind)
        if existing is None:
            raise
        return existing, False
    await counters.add_daily(session, plugin.id, {DAILY_COUNTER[kind]: 1})
    amounts = await _version_amounts(session, kind, signal)
    counts = await counters.add_version(session, plugin.id, version.version, **amounts)
    if _is_rolling(version):
        await _judge(session, settings, plugin, version, counts)
    return signal, True


def _share(part: int, whole: int) -> float:
    return 100.0 * part / whole


async def _judge(
    session: AsyncSession,
    settings: Settings,
    plugin: Plugin,
    version: PluginVersion,
    counts: VersionCounts,
) -> None:
    """Halt the rolling version when its users' signals cross a threshold (settings)."""
    if counts.installs < settings.rollout_halt_min_installs:
        return
    uninstalled = _share(counts.uninstalls, counts.installs)
    crashed = _share(counts.crash_users, counts.installs)
    if uninstalled > settings.rollout_halt_uninstall_percent:
        reason = (
            f"{counts.uninstalls} of {counts.installs} installs uninstalled it "
            f"({uninstalled:.1f}% > {settings.rollout_halt_uninstall_percent:g}%)"
        )
    elif crashed > settings.rollout_halt_crash_percent:
        reason = (
            f"{counts.crash_users} of {counts.installs} installs reported a crash "
            f"({crashed:.1f}% > {settings.rollout_halt_crash_percent:g}%)"
        )
    else:
        return
    await rollout.halt(
        session,
        plugin,
        version,
        rollout.AUTOMATIC_PREFIX + reason,
        actor_id=None,
        trigger=Trigger.AUTOMATIC,
    )
