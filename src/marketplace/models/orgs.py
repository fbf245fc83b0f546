"""Organizations and their members (CONTRACT 17); a plugin may belong to one
(`plugins.org_id`, catalog.py)."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.kit.dbtypes import IdType, UTCDateTime, utcnow
from marketplace.models.base import Base, IdMixin


class OrgRole(enum.StrEnum):
    OWNER = "owner"  # manages the members; may move personal plugins in
    MEMBER = "member"  # operates the organization's plugins


class Organization(IdMixin, Base):
    __tablename__ = "organizations"

    # The pluginKey pattern (CONTRACT 17); the unique constraint decides two racing creates.
    slug: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    created_by: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="RESTRICT"), nullable=False
    )


class OrganizationMember(Base):
    """One row per member; an organization always keeps at least one owner (the service
    checks it under the organization's row lock)."""

    __tablename__ = "organization_members"
    __table_args__ = (
        CheckConstraint("role IN ('owner', 'member')", name="role_valid"),
        # "My organizations" and the ownership check read by user.
        Index("ix_organization_members_user_id", "user_id"),
    )

    org_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    role: Mapped[str] = mapped_column(String(20), nullable=False)
    added_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
