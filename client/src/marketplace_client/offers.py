"""The update check (CONTRACT 16): what the service offers each installed plugin.

`POST /api/v1/plugins/updates {installId, channel, items: [{pluginKey, version}]}`, one
request per BATCH_SIZE installs (the service's limit), answers per plugin the version to
move to (`offered`, null when none) and why (`reason`). The service decides, not the
client: a staged rollout offers a new version to some installs only (`install_id.py` keeps
this client in the same group), and an install on a halted or taken-down version is
offered an older one. So `update` installs `offered` even when it is lower than what is
installed, and no command compares versions itself to decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import typer

from marketplace_client.api import ApiClient, expect_list, expect_object
from marketplace_client.errors import CliError
from marketplace_client.manifest_check import check_plugin_key
from marketplace_rules.versions import is_valid_version, version_sort_key

UPDATES = "/api/v1/plugins/updates"
BATCH_SIZE = 500
# The version a new install asks about: it sorts below every real version, so the answer
# is what the service would offer an install that has none yet (`install` without --version).
NEW_INSTALL = "0.0.0"

UP_TO_DATE = "up_to_date"
UPDATE = "update"
ROLLING_NOT_SELECTED = "rolling_not_selected"
HALTED_ROLLBACK = "halted_rollback"
REVOKED = "revoked"
NOT_LISTED = "not_listed"


class Channel(StrEnum):
    stable = "stable"
    prerelease = "prerelease"


ChannelOption = Annotated[
    Channel,
    typer.Option(
        "--channel",
        case_sensitive=False,
        help="Versions offered: stable ones, or also prereleases newer than them.",
    ),
]


@dataclass(frozen=True)
class Offer:
    """The service's answer for one installed plugin."""

    key: str
    current: str
    offered: str | None
    reason: str

    @property
    def moves(self) -> bool:
        """Following the offer installs another version."""
        return self.offered is not None and self.offered != self.current

    @property
    def rollback(self) -> bool:
        return self.moves and _lower(self.offered, self.current)

    def why(self) -> str:
        """Why the service offers this version, or none, when `reason` says more than
        "newest": a sentence's tail ("" for up_to_date and update)."""
        if self.reason == HALTED_ROLLBACK:
            return f"the rollout of {self.current} was halted"
        if self.reason == REVOKED:
            return f"{self.current} was taken down"
        if self.reason == ROLLING_NOT_SELECTED:
            return "a newer version is rolling out and is not offered to this install yet"
        if self.reason == NOT_LISTED:
            return "the plugin is no longer listed"
        if self.reason in (UP_TO_DATE, UPDATE):
            return ""
        return f"the service says {self.reason}"  # a reason newer than this client

    def move(self) -> str:
        """`update available: 1.2.0` or `rollback offered: 1.0.0` ("" when none)."""
        if not self.moves:
            return ""
        return f"{'rollback offered' if self.rollback else 'update available'}: {self.offered}"

    def status(self) -> str:
        """What `list` shows for the plugin."""
        if self.reason == NOT_LISTED:
            return "no longer listed"
        why = self.why()
        if self.moves:
            return f"{self.move()} ({why})" if why else self.move()
        if not why or self.reason == ROLLING_NOT_SELECTED:
            return f"up to date ({why})" if why else "up to date"
        return f"{why}; no other version is offered"


def _lower(candidate: str | None, than: str) -> bool:
    if candidate is None or not is_valid_version(than):
        return False
    return version_sort_key(candidate) < version_sort_key(than)


def checkable(key: str, version: object) -> bool:
    """Whether the service can be asked about this registry entry: a damaged one would make
    the whole batch invalid (400), so it is left out and its offer stays unknown."""
    return not check_plugin_key(key, "pluginKey") and is_valid_version(version)


def _parse(answer: Any, asked: Mapping[str, str]) -> dict[str, Offer]:
    items = expect_list(expect_object(answer, "update check").get("items"), "update check")
    offers: dict[str, Offer] = {}
    for item in items:
        entry = expect_object(item, "update check item")
        key, current = entry.get("pluginKey"), entry.get("current")
        offered, reason = entry.get("offered"), entry.get("reason")
        if not (isinstance(key, str) and isinstance(current, str) and isinstance(reason, str)):
            raise CliError(
                "BAD_RESPONSE", "update check: an item lacks pluginKey, current or reason"
            )
        if offered is not None and not is_valid_version(offered):
            raise CliError(
                "BAD_RESPONSE", f"update check: {key}: offered {offered!r} is not a version"
            )
        # Only answers about what was asked, for the version asked about.
        if asked.get(key) == current:
            offers[key] = Offer(key, current, offered, reason)
    return offers


def check_updates(
    api: ApiClient, installed: Mapping[str, str], channel: Channel, install: str
) -> dict[str, Offer]:
    """The offers for `installed` (pluginKey -> version), by key. Entries `checkable`
    rejects, and those the service does not answer about, have none."""
    asked = {key: version for key, version in installed.items() if checkable(key, version)}
    keys = sorted(asked)
    offers: dict[str, Offer] = {}
    for start in range(0, len(keys), BATCH_SIZE):
        batch = {key: asked[key] for key in keys[start : start + BATCH_SIZE]}
        body = {
            "installId": install,
            "channel": channel.value,
            "items": [{"pluginKey": key, "version": version} for key, version in batch.items()],
        }
        offers |= _parse(api.post(UPDATES, json=body), batch)
    return offers
