"""What the update check offers one install of one plugin (CONTRACT 16). Pure functions
of the plugin's versions: the same install gets the same answer while the rollout stays.
"""

from __future__ import annotations

import enum
import hashlib
from typing import Any, NamedTuple

from marketplace.models import Channel, RolloutState

BUCKETS = 10_000  # an install's bucket: 0-9999, so 1 % is 100 buckets


class Reason(enum.StrEnum):
    UP_TO_DATE = "up_to_date"
    UPDATE = "update"
    ROLLING_NOT_SELECTED = "rolling_not_selected"
    HALTED_ROLLBACK = "halted_rollback"
    REVOKED = "revoked"
    NOT_LISTED = "not_listed"


# Named tuples, not frozen dataclasses: a cold check builds hundreds of them per request,
# and a frozen dataclass's __init__ costs several times a tuple's.
class Release(NamedTuple):
    """An approved stable version that may be offered."""

    version: str
    order: tuple[int, Any]  # semver precedence (catalog.service.version_key)
    state: str  # RolloutState
    percent: int


class Delivery(NamedTuple):
    """What the update check needs to know of one listed plugin; cached per listing
    generation, which every rollout move and review decision moves."""

    plugin_key: str
    stable: tuple[Release, ...]  # approved stable versions, newest first
    prerelease: tuple[str, tuple[int, Any]] | None  # the newest approved prerelease
    taken_down: frozenset[str]
    current: str | None  # the seed's current version (latestVersion)
    all_full: bool  # no stable version rolls or is halted: the common case, answered fast


class Offer(NamedTuple):
    offered: str | None
    reason: Reason


def bucket(install_id: str, plugin_key: str, version: str) -> int:
    digest = hashlib.sha256(f"{install_id}:{plugin_key}:{version}".encode()).hexdigest()
    return int(digest[:8], 16) % BUCKETS


def is_selected(install_id: str, plugin_key: str, release: Release) -> bool:
    """Sticky: an install's bucket for a version never changes, so growing the percent only
    adds installs, and the same install is always in or out."""
    return bucket(install_id, plugin_key, release.version) < release.percent * (BUCKETS // 100)


def offer(
    delivery: Delivery | None,
    install_id: str,
    current: str,
    current_order: tuple[int, Any],
    channel: Channel,
) -> Offer:
    """The version to move to (None: stay) and why."""
    if delivery is None:
        return Offer(None, Reason.NOT_LISTED)
    prerelease = delivery.prerelease if channel == Channel.PRERELEASE else None
    if delivery.all_full and prerelease is None and current not in delivery.taken_down:
        newest = delivery.stable[0] if delivery.stable else None
        if newest is not None and newest.order > current_order:
            return Offer(newest.version, Reason.UPDATE)
        return Offer(None, Reason.UP_TO_DATE)
    target = _target(delivery, install_id)
    if current in delivery.taken_down:
        # The current version, unless it is halted: a halted version is offered to nobody,
        # so then the version the install would be offered anyway.
        found = next((r for r in delivery.stable if r.version == delivery.current), None)
        if found is None or found.state == RolloutState.HALTED:
            found = target
        best = _newest(found.version if found else None, found.order if found else None, prerelease)
        return Offer(best, Reason.REVOKED)
    passed_over = any(
        release.order > current_order
        and release.state == RolloutState.ROLLING
        and not is_selected(install_id, delivery.plugin_key, release)
        for release in delivery.stable
    )
    newer = target is not None and target.order > current_order
    stable_offer = target.version if newer and target is not None else None
    halted = any(r.version == current and r.state == RolloutState.HALTED for r in delivery.stable)
    if halted and not newer:
        result = Offer(target.version if target is not None else None, Reason.HALTED_ROLLBACK)
    elif stable_offer is not None:
        result = Offer(stable_offer, Reason.UPDATE)
    elif passed_over:
        result = Offer(None, Reason.ROLLING_NOT_SELECTED)
    else:
        result = Offer(None, Reason.UP_TO_DATE)
    if prerelease is not None:
        floor = max(current_order, target.order) if newer and target is not None else current_order
        if prerelease[1] > floor:
            return Offer(prerelease[0], Reason.UPDATE)
    return result


def _target(delivery: Delivery, install_id: str) -> Release | None:
    """The newest stable version this install may be offered: halted ones are offered to
    nobody, and a rolling one only to the installs its percent selects (the search then
    goes on downward, by the same rule)."""
    for release in delivery.stable:
        if release.state == RolloutState.HALTED:
            continue
        if release.state == RolloutState.ROLLING and not is_selected(
            install_id, delivery.plugin_key, release
        ):
            continue
        return release
    return None


def _newest(
    version: str | None,
    order: tuple[int, Any] | None,
    prerelease: tuple[str, tuple[int, Any]] | None,
) -> str | None:
    if prerelease is not None and (order is None or prerelease[1] > order):
        return prerelease[0]
    return version
