"""Publishing tokens of an account: issue, list, revoke (CONTRACT 11)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.auth import pat
from marketplace.errors import InvalidState, NotFound
from marketplace.kit.sql import is_row_id
from marketplace.models import PublishingToken, User

# Live tokens an account may hold at once: enough for every CI pipeline one owner runs,
# bounded so that a stolen login cannot mint tokens without end.
LIVE_TOKENS_MAX = 50


class TokenNotFound(NotFound):
    message = "Publishing token does not exist"


async def issue(
    session: AsyncSession,
    user: User,
    *,
    name: str,
    scopes: Sequence[str],
    plugins: Sequence[str] | None,
    expires_in_days: int,
) -> tuple[PublishingToken, str]:
    """A new token row and the token itself (its only appearance: only the hash is kept)."""
    now = datetime.now(UTC)
    live = await session.scalar(
        select(func.count())
        .select_from(PublishingToken)
        .where(
            PublishingToken.user_id == user.id,
            PublishingToken.revoked_at.is_(None),
            PublishingToken.expires_at > now,
        )
    )
    if (live or 0) >= LIVE_TOKENS_MAX:
        raise InvalidState(
            f"This account already has {LIVE_TOKENS_MAX} live publishing tokens; delete one first"
        )
    token = pat.new_token()
    row = PublishingToken(
        user_id=user.id,
        name=name,
        token_hash=pat.hash_token(token),
        scopes=sorted(scopes),
        plugins=list(plugins) if plugins is not None else None,
        created_at=now,
        expires_at=now + timedelta(days=expires_in_days),
    )
    session.add(row)
    await session.flush()
    return row, token


async def tokens_of(session: AsyncSession, user: User) -> list[PublishingToken]:
    """Every token of the account, newest first, revoked and expired ones included (so the
    owner sees why a token stopped working)."""
    rows = await session.scalars(
        select(PublishingToken)
        .where(PublishingToken.user_id == user.id)
        .order_by(PublishingToken.created_at.desc(), PublishingToken.id)
    )
    return list(rows)


async def revoke(session: AsyncSession, user: User, token_id: str) -> PublishingToken:
    """Revoke one of the account's tokens; one revoked already keeps its first reason."""
    row = None
    if is_row_id(token_id):
        row = await session.scalar(
            select(PublishingToken)
            .where(PublishingToken.id == token_id, PublishingToken.user_id == user.id)
            .with_for_update()
        )
    if row is None:
        raise TokenNotFound()
    if row.revoked_at is None:
        row.revoked_at, row.revoked_reason = datetime.now(UTC), pat.REVOKED_BY_OWNER
        await session.flush()
    return row
