"""Request and response shapes of CONTRACT 16."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StrictInt
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from marketplace.delivery.offers import Reason
from marketplace.kit.schemas import InputModel, Money, OutputModel, RequiredText, SafeText
from marketplace.models import Channel
from marketplace.publishing.takedown import REASON_MAX_CHARS

MAX_UPDATE_ITEMS = 500
MESSAGE_MAX_CHARS = 2000
VersionField = Annotated[str, Field(min_length=1, max_length=100)]


class RolloutIn(InputModel):
    percent: Annotated[StrictInt, Field(ge=1, le=100)]


class HaltIn(InputModel):
    reason: Annotated[RequiredText, Field(min_length=1, max_length=REASON_MAX_CHARS)]


class ResumeIn(InputModel):
    """Resume takes no body: an empty object is allowed, any field is refused (CONTRACT 1)."""


class InstalledPluginIn(TypedDict):
    """One installed plugin. A typed dict, not a model: a check carries up to 500, and
    these two short strings need no trimming (a key or version with spaces matches
    nothing and is answered `not_listed`)."""

    __pydantic_config__ = ConfigDict(extra="forbid", strict=True)  # type: ignore[misc]

    pluginKey: Annotated[str, Field(min_length=1, max_length=64)]
    version: VersionField


class UpdateCheckIn(InputModel):
    install_id: Annotated[str, Field(min_length=8, max_length=128)]
    channel: Channel = Channel.STABLE
    items: Annotated[list[InstalledPluginIn], Field(max_length=MAX_UPDATE_ITEMS)]


class UpdateOfferOut(TypedDict):
    """One answer of the update check; a typed dict (its wire names) for the reason the
    request's items are one."""

    pluginKey: str
    current: str
    offered: str | None
    reason: Reason


class UpdateCheckOut(OutputModel):
    items: list[UpdateOfferOut]


class UninstallIn(InputModel):
    version: VersionField


class ReportIn(InputModel):
    version: VersionField
    kind: Literal["crash", "abuse"]
    message: Annotated[SafeText, Field(max_length=MESSAGE_MAX_CHARS)] | None = None


class SignalOut(OutputModel):
    id: str
    plugin_id: str
    version: str
    kind: str
    day: date


class DayStats(OutputModel):
    date: str
    installs: int
    uninstalls: int
    downloads: int
    crash_reports: int
    purchases: int
    revenue: Money


class VersionStats(OutputModel):
    version: str
    active_installs: int
    installs: int
    uninstalls: int
    crash_reports: int


class PluginStats(OutputModel):
    days: list[DayStats]
    versions: list[VersionStats]
