"""The signed revocation list's rows: one per version ever taken down (CONTRACT 11).

Kept apart from the version tables on purpose: an administrator's DELETE of a plugin removes
its versions, but machines that installed a withdrawn version must still learn about it, so
a revocation outlives the version it names (like an audit record, it is never edited or
deleted). Rows are written in the takedown's own transaction.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.kit.dbtypes import IdType, UTCDateTime
from marketplace.models.base import Base, IdMixin


class Revocation(IdMixin, Base):
    __tablename__ = "revocations"
    __table_args__ = (
        # One revocation per version, whatever races (the item lock already serialises them).
        UniqueConstraint("kind", "version_id"),
        # The list's order: oldest first, the id as a stable tiebreak.
        Index("ix_revocations_revoked_at", "revoked_at", "id"),
    )

    kind: Mapped[str] = mapped_column(String(20), nullable=False)  # "plugin" | "scenario"
    # No foreign keys: the version (and its item) may be deleted later.
    version_id: Mapped[str] = mapped_column(IdType, nullable=False)
    key: Mapped[str] = mapped_column(String(64), nullable=False)  # pluginKey or scenario id
    version: Mapped[str] = mapped_column(String(100), nullable=False)
    # What the release record signed (None for a scenario version without a package).
    sha256: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    revoked_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    # The takedown's entry in the transparency log (CONTRACT 15), inside the signed list.
    log_index: Mapped[int | None] = mapped_column(BigInteger)
