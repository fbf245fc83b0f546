"""The update check (CONTRACT 16): up to 500 installed plugins in a fixed number of
queries. Each plugin's delivery (its offerable versions and their rollouts) is cached per
listing generation, which the database moves with every review decision, takedown and
rollout move (migration 0016's triggers on plugin_versions): a warm check reads the
generation and nothing else.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from sqlalchemy import ColumnElement, Select, and_, bindparam, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.catalog.cache import CatalogCache
from marketplace.catalog.service import version_key
from marketplace.delivery.offers import Delivery, Offer, Release, offer
from marketplace.models import Channel, Plugin, PluginVersion, ReviewStatus, RolloutState

# Rows of versions that may be offered or were withdrawn (pending and rejected never are).
_OFFERABLE = and_(
    PluginVersion.plugin_id == Plugin.id,
    PluginVersion.review_status.in_([ReviewStatus.APPROVED.value, ReviewStatus.TAKEN_DOWN.value]),
)
NOT_LISTED = "not_listed"  # cached for keys that name no listed plugin
NOTHING: frozenset[str] = frozenset()
# Plain strings: compared hundreds of times per cold check.
TAKEN_DOWN, PRERELEASE, FULL = (
    ReviewStatus.TAKEN_DOWN.value,
    Channel.PRERELEASE.value,
    RolloutState.FULL.value,
)
# Equalities (not IS TRUE), so the lookup stays within ix_plugins_delivery.
LISTED = and_(Plugin.review_status == ReviewStatus.APPROVED.value, Plugin.enabled == true())


def _delivery(
    plugin_key: str, current: str | None, rows: Sequence[tuple[str, str, str, str, int]]
) -> Delivery:
    if len(rows) == 1 and rows[0][1] != TAKEN_DOWN and rows[0][2] != PRERELEASE:
        # Most plugins: one stable version. Answered without the general case's sorting.
        version, _status, _channel, state, percent = rows[0]
        release = Release(version, version_key(version), state, percent)
        return Delivery(plugin_key, (release,), None, NOTHING, current, state == FULL)
    stable: list[Release] = []
    prereleases: list[tuple[str, tuple[int, object]]] = []
    taken_down: set[str] = set()
    for version, status, channel, state, percent in rows:
        if status == TAKEN_DOWN:
            taken_down.add(version)
        elif channel == PRERELEASE:
            prereleases.append((version, version_key(version)))
        else:
            stable.append(Release(version, version_key(version), state, percent))
    stable.sort(key=lambda release: release.order, reverse=True)
    return Delivery(
        plugin_key=plugin_key,
        stable=tuple(stable),
        prerelease=max(prereleases, key=lambda p: p[1], default=None),
        taken_down=frozenset(taken_down),
        current=current,
        all_full=all(release.state == FULL for release in stable),
    )


def _deliveries(
    keys: ColumnElement[bool],
) -> Select[str, str | None, str, str, str, str, int]:
    """Columns, not entities, from the two covering indexes of migration 0017; built once,
    so a check binds its keys and the compiled (and prepared) statement is reused."""
    return (
        select(
            Plugin.plugin_key,
            Plugin.latest_version,
            PluginVersion.version,
            PluginVersion.review_status,
            PluginVersion.channel,
            PluginVersion.rollout_state,
            PluginVersion.rollout_percent,
        )
        .outerjoin(PluginVersion, _OFFERABLE)
        .where(keys, LISTED)
    )


# `IN (...)` with the keys bound. On PostgreSQL `= ANY($1)` (one array parameter, the same
# SQL text for any number of keys) was tried and measured slower: 14.4 ms of server time
# against 9.6 for a cold check of 200 plugins at 100,000 (docs/performance.md).
DELIVERIES = _deliveries(Plugin.plugin_key.in_(bindparam("keys", expanding=True)))


async def load_deliveries(session: AsyncSession, keys: Iterable[str]) -> dict[str, Delivery | None]:
    """One query for all the keys: each listed plugin with its offerable versions."""
    wanted = list(dict.fromkeys(keys))
    found: dict[str, Delivery | None] = dict.fromkeys(wanted)
    if not wanted:
        return found
    rows = await session.execute(DELIVERIES, {"keys": wanted})
    currents: dict[str, str | None] = {}
    versions: dict[str, list[tuple[str, str, str, str, int]]] = defaultdict(list)
    for key, current, version, status, channel, state, percent in rows:
        currents[key] = current
        if version is not None:
            versions[key].append((version, status, channel, state, percent))
    for key, current in currents.items():
        found[key] = _delivery(key, current, versions[key])
    return found


async def check(
    session: AsyncSession,
    cache: CatalogCache,
    install_id: str,
    channel: Channel,
    items: Sequence[tuple[str, str]],
) -> list[Offer]:
    """The offer for each (pluginKey, version) an install runs, in the order given."""
    generation = await cache.generation(session)
    deliveries: dict[str, Delivery | None] = {}
    missing: list[str] = []
    for key, _version in items:
        cached = cache.delivery(generation, key)
        if cached is None:
            missing.append(key)
        else:
            deliveries[key] = None if cached == NOT_LISTED else cached
    if missing:
        for key, delivery in (await load_deliveries(session, missing)).items():
            deliveries[key] = delivery
            cache.store_delivery(generation, key, delivery or NOT_LISTED)
    return [
        offer(deliveries[key], install_id, version, version_key(version), channel)
        for key, version in items
    ]
