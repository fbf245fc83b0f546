"""Server-side site sessions: start at login, resume on every request, end at logout.

The browser holds a random token; the table holds its SHA-256, the site, the user, the
CSRF token and three times. A session opens only the site it was started on. It ends at
its absolute expiry or after an idle spell, whichever comes first; both limits are
settings, read again on every request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.config import Settings
from marketplace.models import ConsoleSession, User
from marketplace.web.security import hash_token, new_token
from marketplace.web.sites import Site


@dataclass(frozen=True)
class SignedIn:
    """The signed-in account of one request on one site, and its session's CSRF token."""

    site: Site
    user: User
    session_id: str
    csrf_token: str

    @property
    def allowed(self) -> bool:
        """Whether the account's role, read now, still lets it into the site."""
        return self.site.may_enter(self.user)


def lifetime(settings: Settings) -> timedelta:
    return timedelta(hours=settings.console_session_hours)


def idle_limit(settings: Settings) -> timedelta:
    return timedelta(minutes=settings.console_idle_minutes)


async def start(db: AsyncSession, site: Site, user: User, settings: Settings) -> str:
    """A new session for `user` on `site`; returns the cookie's token (never stored as
    is)."""
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
            site=site.key,
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


async def resume(db: AsyncSession, site: Site, token: str, settings: Settings) -> SignedIn | None:
    """The session's account, its last-seen time moved to now; None when the token is
    unknown, its session is another site's, or it expired (an expired session is
    deleted)."""
    found = (
        await db.execute(
            select(ConsoleSession, User)
            .join(User, User.id == ConsoleSession.user_id)
            .where(ConsoleSession.token_hash == hash_token(token), ConsoleSession.site == site.key)
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
    return SignedIn(site=site, user=user, session_id=row.id, csrf_token=row.csrf_token)


async def end(db: AsyncSession, session_id: str) -> None:
    await db.execute(delete(ConsoleSession).where(ConsoleSession.id == session_id))


async def forget(db: AsyncSession, site: Site, token: str) -> None:
    """End the site's session a token names, if any (a new login replaces the browser's
    old one)."""
    await db.execute(
        delete(ConsoleSession).where(
            ConsoleSession.token_hash == hash_token(token), ConsoleSession.site == site.key
        )
    )
