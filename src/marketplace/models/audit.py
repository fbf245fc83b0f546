"""Append-only audit records of review decisions (seed 2.6)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.kit.dbtypes import IdType, UTCDateTime, utcnow
from marketplace.models.base import Base, IdMixin


class AuditLog(IdMixin, Base):
    __tablename__ = "audit_logs"
    __table_args__ = (
        Index("ix_audit_logs_resource", "resource_type", "resource_id", "created_at"),
        Index("ix_audit_logs_created_at", "created_at"),
    )

    action: Mapped[str] = mapped_column(String(40), nullable=False)
    # No foreign key: audit records outlive what they describe.
    actor_id: Mapped[str | None] = mapped_column(IdType)
    resource_type: Mapped[str] = mapped_column(String(40), nullable=False)
    resource_id: Mapped[str] = mapped_column(String(64), nullable=False)
    outcome: Mapped[str] = mapped_column(String(20), nullable=False)
    trigger: Mapped[str] = mapped_column(String(20), nullable=False)
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
