"""Publishing tokens (`mkt_pat_...`): named, scoped, expiring credentials for CI."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.kit.dbtypes import IdType, JSONType, UTCDateTime
from marketplace.models.base import Base, IdMixin


class PublishingToken(IdMixin, Base):
    __tablename__ = "publishing_tokens"
    __table_args__ = (
        CheckConstraint("expires_at > created_at", name="expires_after_creation"),
        CheckConstraint("length(name) BETWEEN 1 AND 100", name="name_length"),
        # A revocation always says why (the owner's list shows it).
        CheckConstraint(
            "(revoked_at IS NULL) = (revoked_reason IS NULL)", name="revoked_with_reason"
        ),
    )

    user_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
    )
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    # Only the SHA-256 of the token is stored. A plain (unsalted, fast) hash is enough: the
    # token carries 256 random bits, so no dictionary or brute force can invert it.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    scopes: Mapped[list[str]] = mapped_column(JSONType, nullable=False)
    # None: every plugin of the owner; else only these pluginKeys.
    plugins: Mapped[list[str] | None] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_reason: Mapped[str | None] = mapped_column(Text)
