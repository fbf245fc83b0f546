"""Delivery (CONTRACT 16): client signals and the daily and per-version counters that
statistics read. Channels and rollouts are columns of `plugin_versions` (catalog.py)."""

from __future__ import annotations

import enum
from datetime import date, datetime
from decimal import Decimal

from sqlalchemy import (
    CheckConstraint,
    Date,
    ForeignKey,
    Index,
    Integer,
    Numeric,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.kit.dbtypes import IdType, UTCDateTime, utcnow
from marketplace.models.base import Base, IdMixin


class SignalKind(enum.StrEnum):
    INSTALL = "install"  # recorded by POST /install
    UNINSTALL = "uninstall"
    CRASH = "crash"
    ABUSE = "abuse"


def _counter() -> Mapped[int]:
    return mapped_column(Integer, nullable=False, default=0, server_default=text("0"))


class PluginSignal(IdMixin, Base):
    """One signal per user, plugin, version and kind a day: the database keeps the rule, so
    a repeated report counts once whatever races it."""

    __tablename__ = "plugin_signals"
    __table_args__ = (
        UniqueConstraint("user_id", "plugin_id", "version", "kind", "day"),
        CheckConstraint("kind IN ('install', 'uninstall', 'crash', 'abuse')", name="kind_valid"),
        Index("ix_plugin_signals_plugin_day", "plugin_id", "day"),
    )

    user_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    )
    plugin_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("plugins.id", ondelete="CASCADE"), nullable=False
    )
    version: Mapped[str] = mapped_column(String(100), nullable=False)
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    day: Mapped[date] = mapped_column(Date, nullable=False)  # UTC
    message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class PluginDailyStats(Base):
    """A plugin's events of one UTC day, counted in each event's own transaction."""

    __tablename__ = "plugin_daily_stats"

    plugin_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("plugins.id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    installs: Mapped[int] = _counter()
    uninstalls: Mapped[int] = _counter()
    downloads: Mapped[int] = _counter()
    crash_reports: Mapped[int] = _counter()
    abuse_reports: Mapped[int] = _counter()
    purchases: Mapped[int] = _counter()
    revenue: Mapped[Decimal] = mapped_column(
        Numeric(14, 2), nullable=False, default=Decimal("0"), server_default=text("0")
    )


class PluginVersionStats(Base):
    """A version's all-time counters; the automatic halt judges from them. `installs`
    counts distinct users who reported installing it; `uninstalls` and `crash_users`
    distinct users among those; `crash_reports` every crash report. `judged_*` are the
    counts when its rollout was last resumed: the automatic halt judges what came after."""

    __tablename__ = "plugin_version_stats"

    plugin_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("plugins.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[str] = mapped_column(String(100), primary_key=True)
    installs: Mapped[int] = _counter()
    uninstalls: Mapped[int] = _counter()
    crash_reports: Mapped[int] = _counter()
    crash_users: Mapped[int] = _counter()
    abuse_reports: Mapped[int] = _counter()
    judged_installs: Mapped[int] = _counter()
    judged_uninstalls: Mapped[int] = _counter()
    judged_crash_users: Mapped[int] = _counter()
