"""A live publishing token inside an upload is revoked at once and the upload refused
(CONTRACT 11); the other secrets become error findings (`rules.secrets`, `rules.review`).

The revocation commits although the upload fails: in the request's transaction, through
an error that `keeps_writes`, or in a transaction of its own for streamed uploads (whose
request transaction ended before the body arrived).
"""

from __future__ import annotations

from collections.abc import Collection

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.auth import pat
from marketplace.errors import AppError
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT

LEAKED_TOKEN = "package contains a marketplace token; the token has been revoked"  # noqa: S105

log = structlog.get_logger("marketplace.publishing")


def _refusal(kind: ItemKind[ItemT, VersionT], revoked: list[str]) -> AppError:
    # Token ids only: the values never reach a log.
    log.warning("publishing_token_revoked", reason=pat.REVOKED_FOUND_IN_PACKAGE, ids=revoked)
    return kind.package_invalid(LEAKED_TOKEN)


async def refuse_live_tokens(
    session: AsyncSession, kind: ItemKind[ItemT, VersionT], tokens: Collection[str]
) -> None:
    """In the request's write transaction, before anything else is written: revoke the
    live tokens among `tokens` and refuse; the request commits the revocation."""
    revoked = await pat.revoke_found(session, tokens) if tokens else []
    if revoked:
        error = _refusal(kind, revoked)
        error.keeps_writes = True
        raise error


async def refuse_live_tokens_apart(
    sessions: async_sessionmaker[AsyncSession],
    kind: ItemKind[ItemT, VersionT],
    tokens: Collection[str],
) -> None:
    """For a streamed upload: revoke in a transaction of its own, then refuse."""
    if not tokens:
        return
    async with sessions.begin() as session:
        revoked = await pat.revoke_found(session, tokens)
    if revoked:
        raise _refusal(kind, revoked)
