"""Site sessions, the console's and the portal's (server-side; the browser holds only a
random token)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.kit.dbtypes import IdType, UTCDateTime
from marketplace.models.base import Base, IdMixin


class ConsoleSession(IdMixin, Base):
    __tablename__ = "console_sessions"
    __table_args__ = (CheckConstraint("site IN ('console', 'portal')", name="site_valid"),)

    # Only the SHA-256 of the cookie's token: a database leak yields no usable session.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    # Which site the session opens (migration 0019): a session never crosses sites.
    site: Mapped[str] = mapped_column(String(16), nullable=False, server_default="console")
    user_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
    )
    # Echoed in every form of the session; useless without the cookie it belongs to.
    csrf_token: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
