"""Auth, developer identity and account administration routes (CONTRACT section 2)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Request, status

from marketplace.accounts import service
from marketplace.accounts.schemas import (
    DeveloperCounts,
    DeveloperList,
    DeveloperOut,
    DeveloperRegisterIn,
    IdentityReviewIn,
    IdentityStatusOut,
    IdentitySubmitIn,
    LoginIn,
    RefreshIn,
    RegisterIn,
    RoleIn,
    TokenPair,
    UserData,
    UserOut,
)
from marketplace.auth.deps import Admin, CurrentUser, Developer, SuperAdmin
from marketplace.db import DbSession
from marketplace.errors import EmailExists, InvalidState, Unauthorized, UserNotFound
from marketplace.kit.error_codes import raises
from marketplace.kit.pagination import LimitParams
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.models import DeveloperProfile, IdentityStatus, User

auth_router = api_router(prefix="/api/v1/auth", tags=["auth"])
developer_router = api_router(prefix="/api/v1/developer", tags=["developer identity"])
admin_router = api_router(prefix="/api/v1/admin", tags=["admin: accounts"])


def _user_data(user: User) -> Envelope[UserData]:
    return Envelope(data=UserData(user=UserOut.model_validate(user)))


def _tokens(issued: service.IssuedTokens) -> Envelope[TokenPair]:
    return Envelope(
        data=TokenPair(
            access_token=issued.access_token,
            refresh_token=issued.refresh_token,
            token_type="Bearer",  # noqa: S106 - a scheme name, not a secret
            expires_in=issued.expires_in,
            user=UserOut.model_validate(issued.user),
        )
    )


def _identity(profile: DeveloperProfile) -> Envelope[IdentityStatusOut]:
    return Envelope(
        data=IdentityStatusOut(
            status=IdentityStatus(profile.identity_status),
            submitted_at=profile.submitted_at,
            reviewed_at=profile.reviewed_at,
            review_note=profile.review_note,
        )
    )


@auth_router.post("/register", status_code=status.HTTP_201_CREATED)
@raises(EmailExists)
async def register(body: RegisterIn, session: DbSession) -> Envelope[UserData]:
    """Create a USER account."""
    user = await service.create_user(
        session, email=body.email, password=body.password, name=body.name
    )
    return _user_data(user)


@auth_router.post("/login")
@raises(Unauthorized)
async def login(body: LoginIn, request: Request, session: DbSession) -> Envelope[TokenPair]:
    """Exchange e-mail and password for an access token (data.accessToken) and a refresh token."""
    limiter = request.app.state.limiter
    client = request.client.host if request.client else "unknown"
    await limiter.hit(limiter.login, "login-ip", client)
    await limiter.hit(limiter.login, "login-email", body.email.lower())
    user = await service.authenticate(session, body.email, body.password)
    state = request.app.state
    return _tokens(await service.issue_tokens(session, user, state.settings, state.secret))


@auth_router.post("/refresh")
@raises(Unauthorized)
async def refresh(body: RefreshIn, request: Request, session: DbSession) -> Envelope[TokenPair]:
    """Rotate a refresh token: the old one is revoked, a new pair is returned."""
    state = request.app.state
    issued = await service.rotate_refresh_token(
        session, body.refresh_token, state.settings, state.secret
    )
    return _tokens(issued)


@auth_router.post("/logout")
@raises(Unauthorized)
async def logout(body: RefreshIn, session: DbSession) -> Envelope[dict[str, Any]]:
    """Revoke a refresh token."""
    await service.revoke_refresh_token(session, body.refresh_token)
    return Envelope(data={})


@auth_router.get("/me")
async def me(user: CurrentUser) -> Envelope[UserData]:
    """The calling account."""
    return _user_data(user)


@developer_router.post("/register")
@raises(InvalidState)
async def register_developer(
    body: DeveloperRegisterIn, user: CurrentUser, session: DbSession
) -> Envelope[UserData]:
    """Become a developer (role USER → DEVELOPER, identity unverified)."""
    updated = await service.register_developer(session, user, body.display_name, body.website)
    return _user_data(updated)


@developer_router.post("/identity")
@raises(InvalidState)
async def submit_identity(
    body: IdentitySubmitIn, user: Developer, session: DbSession
) -> Envelope[IdentityStatusOut]:
    """Submit identity details for verification; the status becomes pending."""
    profile = await service.submit_identity(
        session,
        user,
        real_name=body.real_name,
        organization=body.organization,
        contact_email=body.contact_email,
    )
    return _identity(profile)


@developer_router.get("/identity/status")
async def identity_status(
    user: Developer, session: DbSession, request: Request
) -> Envelope[IdentityStatusOut]:
    """The caller's identity verification status."""
    writes = request.app.state.write_sessionmaker
    return _identity(await service.developer_profile_for_read(session, writes, user))


@admin_router.get("/developers")
async def list_developers(
    _admin: Admin,
    session: DbSession,
    page: LimitParams,
    identity_status: Annotated[IdentityStatus | None, Query(alias="identityStatus")] = None,
    search: Annotated[str | None, Query(max_length=200)] = None,
) -> Envelope[DeveloperList]:
    """Developers with identity counts (counts share the search, ignore the status filter)."""
    rows, total, counts = await service.list_developers(
        session, page, identity_status=identity_status, search=search
    )
    items = [
        DeveloperOut(
            id=u.id,
            email=u.email,
            name=u.name,
            role=u.role,
            display_name=p.display_name,
            website=p.website,
            identity_status=p.identity_status,
            real_name=p.real_name,
            organization=p.organization,
            contact_email=p.contact_email,
            submitted_at=p.submitted_at,
            reviewed_at=p.reviewed_at,
            review_note=p.review_note,
            reviewed_by=p.reviewed_by,
            created_at=u.created_at,
        )
        for u, p in rows
    ]
    return Envelope(
        data=DeveloperList(
            items=items,
            total=total,
            page=page.page,
            limit=page.size,
            counts=DeveloperCounts(**counts),
        )
    )


@admin_router.post("/developers/{user_id}/identity/review")
@raises(UserNotFound, InvalidState)
async def review_identity(
    user_id: str, body: IdentityReviewIn, admin: Admin, session: DbSession
) -> Envelope[IdentityStatusOut]:
    """Approve or reject a developer's identity (approved=false also revokes a verification)."""
    profile = await service.review_identity(
        session, admin, user_id, approved=body.approved, note=body.review_note
    )
    return _identity(profile)


@admin_router.put("/users/{user_id}/role")
@raises(UserNotFound, InvalidState)
async def change_role(
    user_id: str, body: RoleIn, _super: SuperAdmin, session: DbSession
) -> Envelope[UserData]:
    """Change an account's role (SUPER_ADMIN only)."""
    return _user_data(await service.change_role(session, user_id, body.role))
