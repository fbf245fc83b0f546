"""Publishing tokens (`mkt_pat_...`): issue, authenticate, and what each one may reach.

A token acts as its owner, with the owner's role read from the database on every request
(as for the JWT path), narrowed by its scopes:

- `read`: GET/HEAD calls the owner's role allows;
- `publish`: the developer group (plugins and scenarios), reads and writes, and the public
  category list (the publishing tool checks a manifest's category against it); with
  `plugins` set, writes reach only those pluginKeys (scenario writes not at all);
- never: the token and account endpoints, nor any other write (admin, purchases, ratings,
  installs). All of these are 403 FORBIDDEN; an unknown, expired or revoked token is 401.

The policy is checked once, in the current-user dependency (`auth.deps`), so no route can
forget it; the pluginKey restriction where a route first knows its plugin (`publishing.lookup`).
"""

from __future__ import annotations

import enum
import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.errors import Forbidden, Unauthorized
from marketplace.models import PublishingToken, User
from marketplace_rules.vocabulary import PAT_PREFIX

# last_used_at moves at most this often: a write per request would cost every GET a write
# transaction (and on SQLite the one write lock); a minute is precise enough for an owner
# deciding whether a token is still in use.
TOUCH_EVERY = timedelta(minutes=1)
REVOKED_BY_OWNER = "deleted by its owner"
REVOKED_FOUND_IN_PACKAGE = "found in an uploaded package"

_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
# Paths (route templates) a token never reaches: it cannot mint or list tokens, nor act on
# the account (profile, developer registration, identity).
_ACCOUNT_PREFIXES = ("/api/v1/auth/", "/api/v1/developer/register", "/api/v1/developer/identity")
# The developer group: plugins and scenarios of their owner.
_PLUGIN_GROUP = "/api/v1/developer/plugins"
_SCENARIO_GROUP = "/api/v1/marketplace/developer/"
# Reads outside the developer group that publishing needs.
_PUBLISH_READS = frozenset({"/api/v1/plugins/categories", "/api/v1/limits"})
# POSTs that only read (their query is a body): a read scope reaches them.
_READ_POSTS = frozenset({"/api/v1/plugins/updates"})


class Scope(enum.StrEnum):
    READ = "read"
    PUBLISH = "publish"


@dataclass(frozen=True, slots=True)
class TokenGrant:
    """What the request's publishing token allows (None on the request: not a token)."""

    token_id: str
    scopes: frozenset[str]
    plugins: frozenset[str] | None


def is_publishing_token(token: str) -> bool:
    return token.startswith(PAT_PREFIX)


def new_token() -> str:
    return PAT_PREFIX + secrets.token_urlsafe(32)  # 256 random bits


def hash_token(token: str) -> str:
    # SHA-256 without salt or stretching is enough: the token is 256 random bits, so there
    # is no dictionary to try and no brute force that could invert it.
    return hashlib.sha256(token.encode()).hexdigest()


def _refusal(row: PublishingToken | None, now: datetime) -> str | None:
    if row is None:
        return "Invalid or expired token"
    if row.revoked_at is not None:
        return f"Publishing token has been revoked ({row.revoked_reason})"
    if now >= row.expires_at:
        return "Publishing token has expired"
    return None


async def authenticate(session: AsyncSession, token: str) -> tuple[User, PublishingToken]:
    """The owner and the row of a live token; 401 UNAUTHORIZED otherwise."""
    found = (
        await session.execute(
            select(PublishingToken, User)
            .join(User, User.id == PublishingToken.user_id)
            .where(PublishingToken.token_hash == hash_token(token))
        )
    ).first()
    row, user = (found[0], found[1]) if found is not None else (None, None)
    refusal = _refusal(row, datetime.now(UTC))
    if refusal is not None or row is None or user is None:
        raise Unauthorized(refusal)
    return user, row


def grant_of(row: PublishingToken) -> TokenGrant:
    plugins = frozenset(row.plugins) if row.plugins is not None else None
    return TokenGrant(row.id, frozenset(row.scopes), plugins)


def check_route(grant: TokenGrant, method: str, path: str) -> None:
    """403 FORBIDDEN unless the token's scopes reach this route (see the module doc)."""
    if path.startswith(_ACCOUNT_PREFIXES):
        raise Forbidden("Publishing tokens cannot manage tokens or the account; log in instead")
    developer_group = path.startswith(_PLUGIN_GROUP) or path.startswith(_SCENARIO_GROUP)
    if method in _SAFE or path in _READ_POSTS:
        publishing_read = developer_group or path in _PUBLISH_READS
        if Scope.READ in grant.scopes or (publishing_read and Scope.PUBLISH in grant.scopes):
            return
        raise Forbidden("This token has no read scope")
    if not developer_group:
        raise Forbidden("Publishing tokens may only write to the developer group")
    if Scope.PUBLISH not in grant.scopes:
        raise Forbidden("This token has no publish scope")
    if grant.plugins is not None and path.startswith(_SCENARIO_GROUP):
        raise Forbidden("This token is limited to some plugins; it cannot write scenarios")


def check_plugin(grant: TokenGrant | None, plugin_key: str | None) -> None:
    """403 FORBIDDEN when a token limited to some pluginKeys writes another item
    (`plugin_key` None: the item is not a plugin)."""
    if grant is None or grant.plugins is None:
        return
    if plugin_key is None or plugin_key not in grant.plugins:
        raise Forbidden("This token is not allowed to publish this plugin")


def needs_touch(row: PublishingToken, now: datetime) -> bool:
    return row.last_used_at is None or now - row.last_used_at >= TOUCH_EVERY


async def touch_apart(sessions: async_sessionmaker[AsyncSession], token_id: str) -> None:
    """Move last_used_at in a short transaction of its own (for read requests, whose
    session must not start writing); the condition keeps concurrent requests to one write."""
    now = datetime.now(UTC)
    async with sessions.begin() as session:
        await session.execute(
            update(PublishingToken)
            .where(PublishingToken.id == token_id)
            .where(
                or_(
                    PublishingToken.last_used_at.is_(None),
                    PublishingToken.last_used_at < now - TOUCH_EVERY,
                )
            )
            .values(last_used_at=now)
        )


async def revoke_found(session: AsyncSession, tokens: Iterable[str]) -> list[str]:
    """Revoke every live token among `tokens` (found in an uploaded package or manifest);
    the ids of those revoked. The caller commits this even though it refuses the upload."""
    hashes = sorted({hash_token(token) for token in tokens})
    if not hashes:
        return []
    now = datetime.now(UTC)
    rows = await session.scalars(
        select(PublishingToken)
        .where(PublishingToken.token_hash.in_(hashes))
        .where(PublishingToken.revoked_at.is_(None))
        .where(PublishingToken.expires_at > now)
    )
    revoked = []
    for row in rows:
        row.revoked_at, row.revoked_reason = now, REVOKED_FOUND_IN_PACKAGE
        revoked.append(row.id)
    await session.flush()
    return revoked
