"""Scenarios and their versions (CONTRACT 8).

A scenario is addressed by its own id (the pluginKey pattern), not a UUID. Its row carries
the metadata of its newest version (highest semver, any state), so lists filter, search
and count on one table; each version keeps its own copy, reviewed on its own. The version
whose is_latest is true is the newest approved one: what the public group serves.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.kit.dbtypes import IdType, JSONType
from marketplace.models.base import Base, TimestampMixin
from marketplace.models.catalog import (
    ReviewedVersionMixin,
    ReviewStatus,
    reviewed_version_table_args,
)

_STATUSES = ", ".join(repr(s.value) for s in ReviewStatus)
# Display metadata a version describes; the scenario row mirrors its newest version's.
SCENARIO_METADATA = (
    "name",
    "name_zh",
    "description",
    "description_zh",
    "type",
    "category",
    "permissions",
    "changelog",
)


class Scenario(TimestampMixin, Base):
    __tablename__ = "scenarios"
    __table_args__ = (
        CheckConstraint(f"review_status IN ({_STATUSES})", name="review_status_valid"),
        CheckConstraint("length(id) BETWEEN 3 AND 64", name="id_length"),
        Index("ix_scenarios_owner_id", "owner_id", "created_at"),
        Index("ix_scenarios_review_status", "review_status"),
        Index("ix_scenarios_category", "category"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False
    )
    # The newest version and its metadata (CONTRACT 8: "version and the rest describe
    # its newest version").
    version: Mapped[str] = mapped_column(String(100), nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    name_zh: Mapped[str | None] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    description_zh: Mapped[str | None] = mapped_column(Text)
    type: Mapped[str] = mapped_column(String(32), nullable=False)
    category: Mapped[str] = mapped_column(
        String(64), ForeignKey("categories.key", ondelete="RESTRICT"), nullable=False
    )
    permissions: Mapped[list[str]] = mapped_column(JSONType, nullable=False, default=list)
    changelog: Mapped[str | None] = mapped_column(Text)
    sha256: Mapped[str | None] = mapped_column(String(64))
    size: Mapped[int | None] = mapped_column(BigInteger)
    # taken_down once the developer takes it down; otherwise the newest version's status.
    review_status: Mapped[str] = mapped_column(
        String(20), nullable=False, default=ReviewStatus.PENDING.value
    )
    # The version whose is_latest is true (newest approved); None while none is approved.
    latest_version: Mapped[str | None] = mapped_column(String(100))


class ScenarioVersion(ReviewedVersionMixin, Base):
    __tablename__ = "scenario_versions"
    __table_args__ = reviewed_version_table_args("scenario_versions", "scenario_id")

    scenario_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("scenarios.id", ondelete="CASCADE"), nullable=False
    )
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    name_zh: Mapped[str | None] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    description_zh: Mapped[str | None] = mapped_column(Text)
    type: Mapped[str] = mapped_column(String(32), nullable=False)
    category: Mapped[str] = mapped_column(
        String(64), ForeignKey("categories.key", ondelete="RESTRICT"), nullable=False
    )
    permissions: Mapped[list[str]] = mapped_column(JSONType, nullable=False, default=list)
    changelog: Mapped[str | None] = mapped_column(Text)
