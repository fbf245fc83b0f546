"""Users, developer profiles and refresh tokens."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.kit.dbtypes import IdType, UTCDateTime
from marketplace.models.base import Base, IdMixin, TimestampMixin
from marketplace.roles import IdentityStatus, Role


def _in(values: type[enum.StrEnum], column: str) -> str:
    return f"{column} IN ({', '.join(repr(v.value) for v in values)})"


class User(IdMixin, TimestampMixin, Base):
    __tablename__ = "users"
    __table_args__ = (CheckConstraint(_in(Role, "role"), name="role_valid"),)

    # Stored lower-cased so uniqueness ignores case.
    email: Mapped[str] = mapped_column(String(320), unique=True, nullable=False)
    password_hash: Mapped[str] = mapped_column(String(255), nullable=False)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    role: Mapped[str] = mapped_column(String(20), nullable=False, default=Role.USER.value)


class DeveloperProfile(TimestampMixin, Base):
    __tablename__ = "developer_profiles"
    __table_args__ = (
        CheckConstraint(_in(IdentityStatus, "identity_status"), name="identity_status_valid"),
        Index("ix_developer_profiles_identity_status", "identity_status"),
    )

    user_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    display_name: Mapped[str] = mapped_column(String(100), nullable=False)
    website: Mapped[str | None] = mapped_column(String(500))
    identity_status: Mapped[str] = mapped_column(
        String(20), nullable=False, default=IdentityStatus.UNVERIFIED.value
    )
    real_name: Mapped[str | None] = mapped_column(String(200))
    organization: Mapped[str | None] = mapped_column(String(200))
    contact_email: Mapped[str | None] = mapped_column(String(320))
    submitted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    reviewed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    review_note: Mapped[str | None] = mapped_column(Text)
    reviewed_by: Mapped[str | None] = mapped_column(IdType)


class RefreshToken(IdMixin, Base):
    __tablename__ = "refresh_tokens"

    user_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
    )
    # Only the SHA-256 of the opaque token is stored; a database leak yields no usable token.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Every token rotated from one login shares the login token's id; a replayed (already
    # rotated) token revokes the whole family.
    family_id: Mapped[str] = mapped_column(IdType, nullable=False, index=True)
