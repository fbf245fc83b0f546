"""Publishing tokens for CI: /api/v1/auth/tokens (CONTRACT 11). A publishing token cannot
call these (`auth.pat.check_route`): only a login manages tokens."""

from __future__ import annotations

from fastapi import status

from marketplace.accounts import tokens
from marketplace.accounts.token_schemas import NewTokenOut, TokenCreateIn, TokenList, TokenOut
from marketplace.auth.deps import CurrentUser
from marketplace.db import DbSession
from marketplace.errors import InvalidState
from marketplace.kit.error_codes import raises
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope

router = api_router(prefix="/api/v1/auth/tokens", tags=["auth: publishing tokens"])


@router.post("", status_code=status.HTTP_201_CREATED)
@raises(InvalidState)
async def create_token(
    body: TokenCreateIn, user: CurrentUser, session: DbSession
) -> Envelope[NewTokenOut]:
    """Issue a publishing token (`mkt_pat_...`), shown in this answer only."""
    row, token = await tokens.issue(
        session,
        user,
        name=body.name,
        scopes=[scope.value for scope in body.scopes],
        plugins=body.plugins,
        expires_in_days=body.expires_in_days,
    )
    shown = TokenOut.model_validate(row).model_dump()
    return Envelope(data=NewTokenOut(**shown, token=token))


@router.get("")
async def list_tokens(user: CurrentUser, session: DbSession) -> Envelope[TokenList]:
    """The caller's publishing tokens, newest first, without their values."""
    rows = await tokens.tokens_of(session, user)
    return Envelope(data=TokenList(items=[TokenOut.model_validate(row) for row in rows]))


@router.delete("/{token_id}")
@raises(tokens.TokenNotFound)
async def delete_token(token_id: str, user: CurrentUser, session: DbSession) -> Envelope[TokenOut]:
    """Revoke a publishing token at once; it stays listed with its revocation."""
    return Envelope(data=TokenOut.model_validate(await tokens.revoke(session, user, token_id)))
