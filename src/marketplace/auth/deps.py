"""Who is calling: token → user (role read from the database on every request)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import structlog
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.auth import pat
from marketplace.auth.tokens import decode_access_token
from marketplace.db import DbSession, is_write_request
from marketplace.errors import DatabaseUnavailable, DeveloperNotVerified, Forbidden, Unauthorized
from marketplace.kit.error_codes import raises
from marketplace.models import DeveloperProfile, IdentityStatus, Role, User

log = structlog.get_logger("marketplace.auth")

_bearer = HTTPBearer(auto_error=False, description="Access token from /api/v1/auth/login")


def _token_from(request: Request, credentials: HTTPAuthorizationCredentials | None) -> str | None:
    if credentials is not None:
        return credentials.credentials
    header = request.headers.get("authorization")
    if header is not None:
        # Present but not "Bearer <token>": malformed, which is 401, not anonymous.
        raise Unauthorized("Malformed Authorization header")
    return None


async def _load_token_user(request: Request, session: AsyncSession, token: str) -> User:
    """A publishing token: live (else 401), allowed on this route (else 403), its
    last-used time moved at most once a minute (`pat.TOUCH_EVERY`)."""
    user, row = await pat.authenticate(session, token)
    grant = pat.grant_of(row)
    route = request.scope.get("route")
    pat.check_route(grant, request.method, getattr(route, "path", request.url.path))
    now = datetime.now(UTC)
    if pat.needs_touch(row, now):
        if is_write_request(request):
            row.last_used_at = now  # committed with the request's own writes
        else:
            # A read request's session must stay a reader (on SQLite a write would take
            # the one write lock for the whole request): a short transaction of its own.
            try:
                await pat.touch_apart(request.app.state.write_sessionmaker, row.id)
            except DatabaseUnavailable:
                # Bookkeeping only: a read is not failed for it; the next use retries.
                log.warning("publishing_token_touch_skipped", token_id=row.id)
    request.state.token_grant = grant
    request.state.user_id = user.id
    return user


async def _load_user(request: Request, session: AsyncSession, token: str) -> User:
    if pat.is_publishing_token(token):
        return await _load_token_user(request, session, token)
    claims = decode_access_token(token, request.app.state.secret)
    if claims is None:
        raise Unauthorized("Invalid or expired token")
    user = await session.get(User, claims.user_id)
    if user is None:
        raise Unauthorized("Invalid or expired token")
    request.state.user_id = user.id
    return user


# 401: a token that is not valid; 403: a publishing token whose scopes do not reach the route.
@raises(Unauthorized, Forbidden)
async def optional_user(
    request: Request,
    session: DbSession,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> User | None:
    """Anonymous is fine; an invalid token is still 401 (CONTRACT: even where none is needed)."""
    token = _token_from(request, credentials)
    if token is None:
        return None
    return await _load_user(request, session, token)


@raises(Unauthorized)
async def current_user(user: Annotated[User | None, Depends(optional_user)]) -> User:
    if user is None:
        raise Unauthorized()
    return user


CurrentUser = Annotated[User, Depends(current_user)]
OptionalUser = Annotated[User | None, Depends(optional_user)]


def role_refused(needed: Role, user: User) -> Forbidden:
    """403 FORBIDDEN saying which role the route needs and which the caller has."""
    higher = [r.value for r in Role if r.rank > needed.rank]
    also = f" (or {', '.join(higher)})" if higher else ""
    return Forbidden(
        f"This needs the {needed.value} role{also}; you are {user.role}",
        details={"requiredRole": needed.value},
    )


def require_role(role: Role) -> object:
    @raises(Forbidden)
    async def dependency(user: CurrentUser) -> User:
        if not Role(user.role).at_least(role):
            raise role_refused(role, user)
        return user

    return Depends(dependency)


Developer = Annotated[User, require_role(Role.DEVELOPER)]
Admin = Annotated[User, require_role(Role.ADMIN)]
SuperAdmin = Annotated[User, require_role(Role.SUPER_ADMIN)]


@raises(DeveloperNotVerified)
async def verified_developer(user: Developer, session: DbSession) -> User:
    """Writes of the developer groups need a verified identity (seed 5.2)."""
    profile = await session.get(DeveloperProfile, user.id)
    if profile is None or profile.identity_status != IdentityStatus.VERIFIED:
        raise DeveloperNotVerified()
    return user


VerifiedDeveloper = Annotated[User, Depends(verified_developer)]


async def token_grant(request: Request) -> pat.TokenGrant | None:
    """What the request's publishing token allows; None when the caller did not use one."""
    grant: pat.TokenGrant | None = getattr(request.state, "token_grant", None)
    return grant


TokenGrant = Annotated[pat.TokenGrant | None, Depends(token_grant)]
