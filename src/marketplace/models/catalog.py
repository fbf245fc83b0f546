"""Categories, plugins and plugin versions."""

from __future__ import annotations

import enum
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    Numeric,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from marketplace.kit.dbtypes import IdType, JSONType, UTCDateTime, utcnow
from marketplace.models.base import Base, IdMixin, TimestampMixin

if TYPE_CHECKING:
    from marketplace.models.inspections import PluginInspection


class PluginType(enum.StrEnum):
    MCP = "mcp"
    TOOL = "tool"
    CHANNEL = "channel"
    SCENARIO = "scenario"
    HOOK = "hook"
    COMPOSITE = "composite"
    SKILL = "skill"


class ReviewStatus(enum.StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    TAKEN_DOWN = "taken_down"


class Channel(enum.StrEnum):
    STABLE = "stable"
    PRERELEASE = "prerelease"


class RolloutState(enum.StrEnum):
    FULL = "full"
    ROLLING = "rolling"
    HALTED = "halted"


FULL_PERCENT = 100


class Distribution(enum.StrEnum):
    TARBALL = "tarball"
    CONFIG_ONLY = "config_only"
    INLINE = "inline"


def _in(values: type[enum.StrEnum], column: str) -> str:
    return f"{column} IN ({', '.join(repr(v.value) for v in values)})"


SEED_CATEGORIES: list[tuple[str, str, str]] = [
    ("productivity", "Productivity", "效率"),
    ("development", "Development", "开发"),
    ("automation", "Automation", "自动化"),
    ("database", "Database", "数据库"),
    ("design", "Design", "设计"),
    ("frontend", "Frontend", "前端"),
    ("office", "Office", "办公"),
    ("ai", "AI", "人工智能"),
    ("utility", "Utility", "工具"),
    ("channel", "Channel", "渠道"),
]


class Category(Base):
    __tablename__ = "categories"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    name_zh: Mapped[str] = mapped_column(String(100), nullable=False)
    sort_order: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class Plugin(IdMixin, TimestampMixin, Base):
    __tablename__ = "plugins"
    __table_args__ = (
        CheckConstraint(_in(PluginType, "type"), name="type_valid"),
        CheckConstraint(_in(ReviewStatus, "review_status"), name="review_status_valid"),
        CheckConstraint("price >= 0", name="price_not_negative"),
        CheckConstraint(
            "(is_free AND price = 0) OR (NOT is_free AND price > 0)", name="price_rule"
        ),
        CheckConstraint("validity_days IS NULL OR validity_days > 0", name="validity_positive"),
        Index("ix_plugins_owner_id", "owner_id"),
        Index("ix_plugins_org_id", "org_id"),
        Index("ix_plugins_review_status", "review_status"),
        Index("ix_plugins_category", "category"),
        # The update check's lookup by key, answered from the index alone (migration 0017).
        Index(
            "ix_plugins_delivery", "plugin_key", "review_status", "enabled", "latest_version", "id"
        ),
    )

    plugin_key: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    name_zh: Mapped[str] = mapped_column(String(200), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False)
    description_zh: Mapped[str] = mapped_column(Text, nullable=False)
    type: Mapped[str] = mapped_column(String(20), nullable=False)
    category: Mapped[str] = mapped_column(
        String(64), ForeignKey("categories.key", ondelete="RESTRICT"), nullable=False
    )
    is_free: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    price: Mapped[Decimal] = mapped_column(Numeric(12, 2), nullable=False, default=Decimal("0"))
    validity_days: Mapped[int | None] = mapped_column(Integer)
    tags: Mapped[list[str]] = mapped_column(JSONType, nullable=False, default=list)
    license: Mapped[str | None] = mapped_column(String(100))
    homepage: Mapped[str | None] = mapped_column(String(500))
    repository: Mapped[str | None] = mapped_column(String(500))
    icon: Mapped[str | None] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(50), nullable=False, default="developer")
    platforms: Mapped[list[str]] = mapped_column(JSONType, nullable=False, default=list)
    featured: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    review_status: Mapped[str] = mapped_column(
        String(20), nullable=False, default=ReviewStatus.PENDING.value
    )
    review_note: Mapped[str | None] = mapped_column(Text)
    reviewed_by: Mapped[str | None] = mapped_column(String(36))
    latest_version: Mapped[str | None] = mapped_column(String(100))
    # The newest approved prerelease version (CONTRACT 16), apart from the current one.
    latest_prerelease: Mapped[str | None] = mapped_column(String(100))
    download_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    rating_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    rating_sum: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    owner_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False
    )
    # The organization it belongs to (CONTRACT 17): its members operate it; null: personal.
    # The default action (NO ACTION: an organization with plugins cannot be deleted): SQLite
    # adds the key on the column (migration 0018) and reflects no ON DELETE from there.
    org_id: Mapped[str | None] = mapped_column(IdType, ForeignKey("organizations.id"))

    @property
    def rating_average(self) -> Decimal | None:
        """Mean score to 2 decimals; None until someone rates."""
        if not self.rating_count:
            return None
        return (Decimal(self.rating_sum) / Decimal(self.rating_count)).quantize(Decimal("0.01"))


class ListingCount(Base):
    """Listed plugins (approved and enabled) per filter combination, kept by the database's
    own triggers on plugins (migration 0010): exact totals without counting the catalogue."""

    __tablename__ = "catalog_listing_counts"

    category: Mapped[str] = mapped_column(String(64), primary_key=True)
    type: Mapped[str] = mapped_column(String(20), primary_key=True)
    is_free: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    listed: Mapped[int] = mapped_column(BigInteger, nullable=False)


def reviewed_version_table_args(table: str, parent: str) -> tuple[Any, ...]:
    """What the database holds for every kind of reviewed version (DESIGN invariants 1, 2)."""
    return (
        # (item, version) is unique: of two racing uploads one gets 409.
        UniqueConstraint(parent, "version"),
        CheckConstraint(_in(ReviewStatus, "review_status"), name="review_status_valid"),
        # Only an approved version may be current.
        CheckConstraint("NOT is_latest OR review_status = 'approved'", name="latest_is_approved"),
        # At most one current version per item, held by the database itself.
        Index(
            f"uq_{table}_one_latest",
            parent,
            unique=True,
            sqlite_where=text("is_latest"),
            postgresql_where=text("is_latest"),
        ),
        Index(f"ix_{table}_review_status", "review_status", "created_at"),
        Index(f"ix_{table}_blob_key", "blob_key"),
    )


class ReviewedVersionMixin(IdMixin):
    """The columns every kind of reviewed version has (marketplace.publishing)."""

    version: Mapped[str] = mapped_column(String(100), nullable=False)
    sha256: Mapped[str | None] = mapped_column(String(64))
    size: Mapped[int | None] = mapped_column(BigInteger)
    blob_key: Mapped[str | None] = mapped_column(String(200))
    is_latest: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    review_status: Mapped[str] = mapped_column(
        String(20), nullable=False, default=ReviewStatus.PENDING.value
    )
    review_note: Mapped[str | None] = mapped_column(Text)
    reviewed_by: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    # What the automatic checks found ({code, severity, path, message} each, CONTRACT 12),
    # kept with the version so reviewer and publisher read the same list.
    findings: Mapped[list[dict[str, str]]] = mapped_column(
        JSONType, nullable=False, default=list, server_default=text("'[]'")
    )
    # Set when the version is approved; part of the signed release record (CONTRACT 11).
    approved_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # {keyId, payload, signature}: signed once, when the version is approved, and kept, so a
    # client sees the same record whatever key signs today.
    release: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # When an administrator or the owner withdrew the approved version (revocation list).
    taken_down_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class PluginVersion(ReviewedVersionMixin, Base):
    __tablename__ = "plugin_versions"
    __table_args__ = (
        *reviewed_version_table_args("plugin_versions", "plugin_id"),
        CheckConstraint(_in(Distribution, "distribution"), name="distribution_valid"),
        CheckConstraint(_in(Channel, "channel"), name="channel_valid"),
        CheckConstraint(_in(RolloutState, "rollout_state"), name="rollout_state_valid"),
        CheckConstraint("rollout_percent BETWEEN 1 AND 100", name="rollout_percent_range"),
        # Full means everyone: a rolling or halted rollout is below 100.
        CheckConstraint(
            "(rollout_state = 'full') = (rollout_percent = 100)", name="rollout_full_is_100"
        ),
        # Prereleases are opt-in already: they never roll out.
        CheckConstraint(
            "channel = 'stable' OR rollout_state = 'full'", name="prerelease_not_rolled"
        ),
        # A prerelease is never the current version (the seed's rule is for stable ones).
        CheckConstraint("NOT is_latest OR channel = 'stable'", name="latest_is_stable"),
        # The update check's versions of each plugin, answered from the index alone.
        Index(
            "ix_plugin_versions_delivery",
            "plugin_id",
            "review_status",
            "version",
            "channel",
            "rollout_state",
            "rollout_percent",
        ),
    )

    plugin_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("plugins.id", ondelete="CASCADE"), nullable=False
    )
    changelog: Mapped[str | None] = mapped_column(Text)
    manifest: Mapped[dict[str, Any]] = mapped_column(JSONType, nullable=False)
    distribution: Mapped[str] = mapped_column(String(20), nullable=False)
    channel: Mapped[str] = mapped_column(
        String(20), nullable=False, default=Channel.STABLE.value, server_default="stable"
    )
    rollout_percent: Mapped[int] = mapped_column(
        Integer, nullable=False, default=FULL_PERCENT, server_default=text("100")
    )
    rollout_state: Mapped[str] = mapped_column(
        String(20), nullable=False, default=RolloutState.FULL.value, server_default="full"
    )
    rollout_halted_reason: Mapped[str | None] = mapped_column(Text)
    rollout_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  # None: created
    # None: not applicable. Loaded only by the queries whose versions are shown with it
    # (`ItemKind.version_loads`): a report is up to 1 MiB, and public reads never show it.
    # Elsewhere reading it is an error, not a hidden query.
    inspection: Mapped[PluginInspection | None] = relationship(
        lazy="raise", uselist=False, passive_deletes=True
    )

    @property
    def rollout(self) -> dict[str, Any]:
        """The rollout as representations show it (CONTRACT 16)."""
        return {
            "percent": self.rollout_percent,
            "state": self.rollout_state,
            "halted_reason": self.rollout_halted_reason,
            "updated_at": self.rollout_updated_at or self.created_at,
        }
