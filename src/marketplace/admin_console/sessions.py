"""Server-side console sessions: start at login, resume on every request, end at logout.

The browser holds a random token; the table holds its SHA-256, the user, the CSRF token
and three times. A session ends at its absolute expiry or after an idle spell, whichever
comes first; both limits are settings, read again on every request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.admin_console.security import hash_token, new_token
from marketplace.config import Settings
from marketplace.models import ConsoleSession, Role, User


def may_review(user: User) -> bool:
    """ADMIN or SUPER_ADMIN, as read from the database on this request."""
    return Role(user.role).at_least(Role.ADMIN)


@dataclass(frozen=True)
class Reviewer:
    """The signed-in account of one request, and its session's CSRF token."""

    user: User
    session_id: str
    csrf_token: str

    @property
    def allowed(self) -> bool:
        return may_review(self.user)


def lifetime(settings: Settings) -> timedelta:
    return timedelta(hours=settings.console_session_hours)


def idle_limit(settings: Settings) -> timedelta:
    return timedelta(minutes=settings.console_idle_minutes)


async def start(db: AsyncSession, user: User, settings: Settings) -> str:
    """A new session for `user`; returns the cookie's token (never stored as is)."""
    now = datetime.now(UTC)
    # Sweep this user's dead sessions while we are here: the table stays small.
    await db.execute(
        delete(ConsoleSession).where(
            ConsoleSession.user_id == user.id, ConsoleSession.expires_at <= now
        )
    )
    token = new_token()
    db.add(
        ConsoleSession(
            token_hash=hash_token(token),
            user_id=user.id,
            csrf_token=new_token(),
            created_at=now,
            expires_at=now + lifetime(settings),
            last_seen_at=now,
        )
    )
    await db.flush()
    return token


def _expired(row: ConsoleSession, settings: Settings, now: datetime) -> bool:
    # The settings in force now apply too, so shortening them takes effect at once.
    ends = min(row.expires_at, row.created_at + lifetime(settings))
    return now >= ends or now - row.last_seen_at >= idle_limit(settings)


async def resume(db: AsyncSession, token: str, settings: Settings) -> Reviewer | None:
    """The session's account, its last-seen time moved to now; None when the token is
    unknown or its session expired (an expired session is deleted)."""
    found = (
        await db.execute(
            select(ConsoleSession, User)
            .join(User, User.id == ConsoleSession.user_id)
            .where(ConsoleSession.token_hash == hash_token(token))
        )
    ).one_or_none()
    if found is None:
        return None
    row, user = found
    now = datetime.now(UTC)
    if _expired(row, settings, now):
        await db.delete(row)
        await db.flush()
        return None
    row.last_seen_at = now
    await db.flush()
    return Reviewer(user=user, session_id=row.id, csrf_token=row.csrf_token)


async def end(db: AsyncSession, session_id: str) -> None:
    await db.execute(delete(ConsoleSession).where(ConsoleSession.id == session_id))


async def forget(db: AsyncSession, token: str) -> None:
    """End the session a token names, if any (a new login replaces the browser's old one)."""
    await db.execute(delete(ConsoleSession).where(ConsoleSession.token_hash == hash_token(token)))
