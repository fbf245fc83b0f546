"""Accounts, tokens and developer identity: the rules, with no HTTP in sight."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import structlog
from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.auth.passwords import hash_password, verify_password
from marketplace.auth.tokens import create_access_token, hash_refresh_token, new_refresh_token
from marketplace.config import Settings
from marketplace.errors import (
    EmailExists,
    InvalidState,
    RefreshTokenReused,
    Unauthorized,
    UserNotFound,
)
from marketplace.kit.dbtypes import new_id
from marketplace.kit.pagination import Page
from marketplace.kit.sql import icontains, insert_unique
from marketplace.models import DeveloperProfile, IdentityStatus, RefreshToken, Role, User
from marketplace_rules.text import has_forbidden_chars

log = structlog.get_logger("marketplace.accounts")


@dataclass(frozen=True)
class IssuedTokens:
    access_token: str
    refresh_token: str
    expires_in: int
    user: User


async def create_user(
    session: AsyncSession, *, email: str, password: str, name: str, role: Role = Role.USER
) -> User:
    email = email.lower()
    if await session.scalar(select(User.id).where(User.email == email)) is not None:
        raise EmailExists()
    user = User(email=email, password_hash=await hash_password(password), name=name, role=role)
    # The unique index decides a race between two registrations of one address.
    await insert_unique(session, user, EmailExists())
    if role.at_least(Role.DEVELOPER):
        session.add(DeveloperProfile(user_id=user.id, display_name=name))
        await session.flush()
    return user


async def authenticate(session: AsyncSession, email: str, password: str) -> User:
    if has_forbidden_chars(email):
        # No stored address holds such characters (and PostgreSQL refuses NUL outright).
        await verify_password(None, "")
        raise Unauthorized("Invalid e-mail or password")
    user = await session.scalar(select(User).where(User.email == email.lower()))
    stored = user.password_hash if user else None
    if await verify_password(stored, password) and user is not None:
        return user
    # Accounts registered before passwords were kept as sent were stored trimmed.
    if password != password.strip() and user is not None:
        if await verify_password(stored, password.strip()):
            return user
    raise Unauthorized("Invalid e-mail or password")


async def issue_tokens(
    session: AsyncSession,
    user: User,
    settings: Settings,
    secret: str,
    *,
    family_id: str | None = None,
) -> IssuedTokens:
    """A new access and refresh token; the refresh token starts a family unless given one."""
    access, expires_in = create_access_token(user.id, secret, settings.access_token_minutes)
    refresh = new_refresh_token()
    now = datetime.now(UTC)
    token_id = new_id()
    session.add(
        RefreshToken(
            id=token_id,
            family_id=family_id or token_id,
            user_id=user.id,
            token_hash=hash_refresh_token(refresh),
            created_at=now,
            expires_at=now + timedelta(days=settings.refresh_token_days),
        )
    )
    await session.flush()
    return IssuedTokens(access, refresh, expires_in, user)


async def rotate_refresh_token(
    session: AsyncSession, token: str, settings: Settings, secret: str
) -> IssuedTokens:
    now = datetime.now(UTC)
    # Consume atomically: of two concurrent refreshes with one token, only one wins.
    consumed = await session.execute(
        update(RefreshToken)
        .where(RefreshToken.token_hash == hash_refresh_token(token))
        .where(RefreshToken.revoked_at.is_(None))
        .where(RefreshToken.expires_at > now)
        .values(revoked_at=now)
        .returning(RefreshToken.user_id, RefreshToken.family_id)
    )
    row = consumed.one_or_none()
    if row is None:
        await _refuse_replay(session, token, now)
        raise Unauthorized("Invalid or expired refresh token")
    user = await session.get(User, row.user_id)
    if user is None:
        raise Unauthorized("Invalid or expired refresh token")
    return await issue_tokens(session, user, settings, secret, family_id=row.family_id)


async def revoke_refresh_token(session: AsyncSession, token: str) -> None:
    """Logout: the token and every token of its family stop working."""
    now = datetime.now(UTC)
    result = await session.execute(
        update(RefreshToken)
        .where(RefreshToken.token_hash == hash_refresh_token(token))
        .where(RefreshToken.revoked_at.is_(None))
        .values(revoked_at=now)
        .returning(RefreshToken.family_id)
    )
    family_id = result.scalar_one_or_none()
    if family_id is None:
        await _refuse_replay(session, token, now)
        raise Unauthorized("Invalid or expired refresh token")
    await _revoke_family(session, family_id, now)


async def _refuse_replay(session: AsyncSession, token: str, now: datetime) -> None:
    """A revoked token presented again means it leaked (OAuth 2 security BCP, refresh token
    rotation): revoke its family, committed with the 401. Unknown and merely expired tokens
    return, for the caller's plain 401."""
    replayed = (
        await session.execute(
            select(RefreshToken.user_id, RefreshToken.family_id)
            .where(RefreshToken.token_hash == hash_refresh_token(token))
            .where(RefreshToken.revoked_at.is_not(None))
        )
    ).one_or_none()
    if replayed is None:
        return
    revoked = await _revoke_family(session, replayed.family_id, now)
    log.warning(
        "refresh token replayed; family revoked",
        user_id=replayed.user_id,
        family_id=replayed.family_id,
        revoked=revoked,
    )
    raise RefreshTokenReused()


async def _revoke_family(session: AsyncSession, family_id: str, now: datetime) -> int:
    result = await session.execute(
        update(RefreshToken)
        .where(RefreshToken.family_id == family_id)
        .where(RefreshToken.revoked_at.is_(None))
        .values(revoked_at=now)
        .returning(RefreshToken.id)
    )
    return len(result.all())


async def register_developer(
    session: AsyncSession, user: User, display_name: str, website: str | None
) -> User:
    if await session.get(DeveloperProfile, user.id) is not None:
        raise InvalidState("Already registered as a developer")
    session.add(DeveloperProfile(user_id=user.id, display_name=display_name, website=website))
    if user.role == Role.USER:
        user.role = Role.DEVELOPER
    await session.flush()
    return user


async def developer_profile(session: AsyncSession, user: User) -> DeveloperProfile:
    profile = await session.get(DeveloperProfile, user.id)
    if profile is None:
        # Admins may act as developers without registering; give them a profile on demand.
        profile = DeveloperProfile(user_id=user.id, display_name=user.name)
        session.add(profile)
        await session.flush()
    return profile


async def developer_profile_for_read(
    session: AsyncSession, writes: async_sessionmaker[AsyncSession], user: User
) -> DeveloperProfile:
    """`developer_profile` for a read request, whose session does not write (on SQLite it
    cannot: db.make_read_engine): a missing profile is made in a short write transaction
    of its own. Two first reads at once make one (the loser reads the winner's)."""
    profile = await session.get(DeveloperProfile, user.id)
    if profile is not None:
        return profile
    try:
        async with writes.begin() as write:
            return await developer_profile(write, user)
    except IntegrityError:
        async with writes() as again:
            made = await again.get(DeveloperProfile, user.id)
        if made is None:
            raise
        return made


async def submit_identity(
    session: AsyncSession,
    user: User,
    *,
    real_name: str,
    organization: str | None,
    contact_email: str | None,
) -> DeveloperProfile:
    profile = await developer_profile(session, user)
    if profile.identity_status == IdentityStatus.VERIFIED:
        raise InvalidState("Identity is already verified")
    profile.real_name = real_name
    profile.organization = organization
    profile.contact_email = contact_email
    profile.identity_status = IdentityStatus.PENDING
    profile.submitted_at = datetime.now(UTC)
    profile.reviewed_at = None
    profile.review_note = None
    await session.flush()
    return profile


async def review_identity(
    session: AsyncSession, admin: User, user_id: str, *, approved: bool, note: str | None
) -> DeveloperProfile:
    profile = await session.get(DeveloperProfile, user_id, with_for_update=True)
    if profile is None:
        raise UserNotFound("Developer does not exist")
    allowed = {IdentityStatus.PENDING} | ({IdentityStatus.VERIFIED} if not approved else set())
    if profile.identity_status not in allowed:
        raise InvalidState(f"Cannot review an identity that is {profile.identity_status}")
    profile.identity_status = IdentityStatus.VERIFIED if approved else IdentityStatus.REJECTED
    profile.reviewed_at = datetime.now(UTC)
    profile.review_note = note
    profile.reviewed_by = admin.id
    await session.flush()
    return profile


async def list_developers(
    session: AsyncSession,
    page: Page,
    *,
    identity_status: IdentityStatus | None,
    search: str | None,
    oldest_submission_first: bool = False,
) -> tuple[list[tuple[User, DeveloperProfile]], int, dict[str, int]]:
    """Newest accounts first; or, for a review queue, the longest-waiting submission first."""
    base = select(User, DeveloperProfile).join(
        DeveloperProfile, DeveloperProfile.user_id == User.id
    )
    if search:
        base = base.where(
            or_(
                icontains(User.email, search),
                icontains(User.name, search),
                icontains(DeveloperProfile.display_name, search),
            )
        )
    # Counts share the search condition but ignore the status filter (as the plugin lists do).
    count_rows = await session.execute(
        base.with_only_columns(DeveloperProfile.identity_status, func.count()).group_by(
            DeveloperProfile.identity_status
        )
    )
    counts = {status.value: 0 for status in IdentityStatus}
    for status, count in count_rows.all():
        counts[status] = count
    counts["all"] = sum(counts.values())
    filtered = base
    if identity_status is not None:
        filtered = filtered.where(DeveloperProfile.identity_status == identity_status)
    total = counts[identity_status.value] if identity_status is not None else counts["all"]
    order = (
        (DeveloperProfile.submitted_at.asc().nulls_last(), User.id)
        if oldest_submission_first
        else (User.created_at.desc(), User.id)
    )
    rows = await session.execute(filtered.order_by(*order).offset(page.offset).limit(page.size))
    return [(u, p) for u, p in rows.all()], total, counts


async def change_role(session: AsyncSession, user_id: str, role: Role) -> User:
    user = await session.get(User, user_id, with_for_update=True)
    if user is None:
        raise UserNotFound()
    if user.role == Role.SUPER_ADMIN and role != Role.SUPER_ADMIN:
        others = await session.scalar(
            select(func.count())
            .select_from(User)
            .where(User.role == Role.SUPER_ADMIN, User.id != user.id)
        )
        if not others:
            raise InvalidState("The last SUPER_ADMIN cannot be demoted")
    user.role = role
    if role.at_least(Role.DEVELOPER):
        await developer_profile(session, user)
    await session.flush()
    return user
