"""Purchases, install records and ratings."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    Numeric,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.kit.dbtypes import IdType, UTCDateTime, utcnow
from marketplace.models.base import Base, IdMixin, TimestampMixin


class Purchase(IdMixin, Base):
    __tablename__ = "purchases"
    __table_args__ = (
        # A repeated idempotency key can never charge twice.
        UniqueConstraint("user_id", "idempotency_key"),
        CheckConstraint("status IN ('pending', 'paid', 'failed')", name="status_valid"),
        Index("ix_purchases_plugin_id", "plugin_id", "purchased_at"),
        Index("ix_purchases_user_plugin", "user_id", "plugin_id"),
    )

    user_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    )
    # Purchases outlive a deleted plugin (admin DELETE keeps them): the key is copied.
    plugin_id: Mapped[str | None] = mapped_column(
        IdType, ForeignKey("plugins.id", ondelete="SET NULL")
    )
    plugin_key: Mapped[str] = mapped_column(String(64), nullable=False)
    price: Mapped[Decimal] = mapped_column(Numeric(12, 2), nullable=False)
    validity_days: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    provider: Mapped[str] = mapped_column(String(40), nullable=False)
    provider_ref: Mapped[str | None] = mapped_column(String(200))
    purchased_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Install(IdMixin, TimestampMixin, Base):
    __tablename__ = "installs"
    __table_args__ = (UniqueConstraint("user_id", "plugin_id"),)

    user_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    )
    plugin_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("plugins.id", ondelete="CASCADE"), nullable=False, index=True
    )
    version: Mapped[str] = mapped_column(String(100), nullable=False)
    installed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class Rating(IdMixin, TimestampMixin, Base):
    __tablename__ = "ratings"
    __table_args__ = (
        UniqueConstraint("user_id", "plugin_id"),
        CheckConstraint("score BETWEEN 1 AND 5", name="score_range"),
        Index("ix_ratings_plugin_id", "plugin_id", "created_at"),
    )

    user_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    )
    plugin_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("plugins.id", ondelete="CASCADE"), nullable=False
    )
    score: Mapped[int] = mapped_column(Integer, nullable=False)
    comment: Mapped[str | None] = mapped_column(Text)
