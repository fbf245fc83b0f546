"""Test data made directly in the database: plain async functions, overridable fields."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache

from argon2 import PasswordHasher
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.auth.tokens import create_access_token
from marketplace.models import DeveloperProfile, IdentityStatus, Role, User

PASSWORD = "correct horse battery"


@cache
def _password_hash() -> str:
    # Hashed once per process: Argon2 is slow on purpose and tests make many accounts.
    return PasswordHasher().hash(PASSWORD)


@dataclass
class Account:
    id: str
    email: str
    name: str
    role: Role
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


class Factory:
    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.sessions: async_sessionmaker[AsyncSession] = app.state.write_sessionmaker

    def token_for(self, user_id: str) -> str:
        token, _ = create_access_token(user_id, self.app.state.secret, 60)
        return token

    async def user(
        self,
        role: Role = Role.USER,
        *,
        identity: IdentityStatus | None = None,
        email: str | None = None,
        name: str | None = None,
    ) -> Account:
        email = email or f"{role.value.lower()}-{uuid.uuid4().hex[:8]}@example.com"
        name = name or f"{role.value.title()} {uuid.uuid4().hex[:4]}"
        async with self.sessions() as session:
            user = User(email=email, password_hash=_password_hash(), name=name, role=role.value)
            session.add(user)
            await session.flush()
            if role.at_least(Role.DEVELOPER):
                status = identity or (
                    IdentityStatus.VERIFIED if role != Role.DEVELOPER else IdentityStatus.UNVERIFIED
                )
                session.add(
                    DeveloperProfile(
                        user_id=user.id,
                        display_name=name,
                        identity_status=status.value,
                        submitted_at=datetime.now(UTC)
                        if status != IdentityStatus.UNVERIFIED
                        else None,
                    )
                )
            await session.commit()
            return Account(user.id, email, name, role, self.token_for(user.id))

    async def developer(self, *, verified: bool = True) -> Account:
        status = IdentityStatus.VERIFIED if verified else IdentityStatus.UNVERIFIED
        return await self.user(Role.DEVELOPER, identity=status)

    async def admin(self) -> Account:
        return await self.user(Role.ADMIN)

    async def super_admin(self) -> Account:
        return await self.user(Role.SUPER_ADMIN)
