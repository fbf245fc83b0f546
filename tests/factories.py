"""Test data made directly in the database: plain async functions, overridable fields."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from typing import Any

from argon2 import PasswordHasher
from fastapi import FastAPI
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.auth.tokens import create_access_token
from marketplace.models import (
    DeveloperProfile,
    Distribution,
    IdentityStatus,
    Install,
    Organization,
    OrganizationMember,
    OrgRole,
    Plugin,
    PluginVersion,
    Purchase,
    ReviewStatus,
    Role,
    User,
)

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

    # ---------------------------------------------------------------- catalogue
    # Rows go straight into the database; its triggers move the catalogue generation in
    # the same transaction, as they do for the service's own writes (migration 0016).

    async def plugin(
        self,
        owner: Account | None = None,
        *,
        plugin_key: str | None = None,
        name: str | None = None,
        name_zh: str = "插件",
        description: str = "A plugin for tests",
        description_zh: str = "测试用的插件",
        type: str = "mcp",
        category: str = "productivity",
        review_status: ReviewStatus | str = ReviewStatus.APPROVED,
        enabled: bool | None = None,
        is_free: bool = True,
        price: Decimal | str | None = None,
        validity_days: int | None = None,
        featured: bool = False,
        tags: list[str] | None = None,
        download_count: int = 0,
        rating_sum: int = 0,
        rating_count: int = 0,
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
        **extra: Any,
    ) -> Plugin:
        """A plugin; listed (approved and enabled) unless told otherwise.

        enabled defaults to True exactly when review_status is approved; a paid plugin
        (is_free=False) costs 9.90 unless a price is given.
        """
        if owner is None:
            owner = await self.developer()
        status = ReviewStatus(review_status)
        suffix = uuid.uuid4().hex[:8]
        if price is None:
            price = Decimal("0") if is_free else Decimal("9.90")
        now = datetime.now(UTC)
        row = Plugin(
            plugin_key=plugin_key or f"plugin-{suffix}",
            name=name or f"Plugin {suffix}",
            name_zh=name_zh,
            description=description,
            description_zh=description_zh,
            type=type,
            category=category,
            is_free=is_free,
            price=Decimal(price),
            validity_days=validity_days,
            tags=tags or [],
            featured=featured,
            enabled=status == ReviewStatus.APPROVED if enabled is None else enabled,
            review_status=status.value,
            download_count=download_count,
            rating_sum=rating_sum,
            rating_count=rating_count,
            owner_id=owner.id,
            created_at=created_at or now,
            updated_at=updated_at or created_at or now,
            **extra,
        )
        async with self.sessions() as session:
            session.add(row)
            await session.commit()
        return row

    async def version(
        self,
        plugin: Plugin,
        version: str = "1.0.0",
        *,
        review_status: ReviewStatus | str = ReviewStatus.APPROVED,
        is_latest: bool | None = None,
        distribution: Distribution | str = Distribution.TARBALL,
        manifest: dict[str, Any] | None = None,
        changelog: str | None = None,
        created_at: datetime | None = None,
        **extra: Any,
    ) -> PluginVersion:
        """A version; an approved one becomes current (isLatest) unless is_latest=False.
        `extra` sets more columns (a channel, a rollout)."""
        status = ReviewStatus(review_status)
        mode = Distribution(distribution)
        latest = status == ReviewStatus.APPROVED if is_latest is None else is_latest
        if manifest is None:
            manifest = {"id": plugin.plugin_key, "version": version, "category": plugin.category}
            if mode == Distribution.TARBALL:
                manifest["main"] = "index.js"
            elif mode == Distribution.CONFIG_ONLY:
                manifest.update(main="", mcp={"command": "npx", "args": [plugin.plugin_key]})
            else:
                manifest.update(main="", inlineCode="export default () => 1")
        digest = hashlib.sha256(f"{plugin.id}/{version}".encode()).hexdigest()
        tarball = mode == Distribution.TARBALL
        row = PluginVersion(
            plugin_id=plugin.id,
            version=version,
            changelog=changelog,
            manifest=manifest,
            distribution=mode.value,
            sha256=digest if tarball else None,
            size=4096 if tarball else None,
            blob_key=f"{digest[:2]}/{digest[2:4]}/{digest}" if tarball else None,
            is_latest=False,
            review_status=status.value,
            created_at=created_at or datetime.now(UTC),
            **extra,
        )
        async with self.sessions() as session:
            if latest:
                await session.execute(
                    update(PluginVersion)
                    .where(PluginVersion.plugin_id == plugin.id)
                    .values(is_latest=False)
                )
                await session.execute(
                    update(Plugin).where(Plugin.id == plugin.id).values(latest_version=version)
                )
                row.is_latest = True
            session.add(row)
            await session.commit()
        if latest:
            plugin.latest_version = version
        return row

    async def update_plugin(self, plugin: Plugin, **values: Any) -> None:
        """Change a plugin's columns (a review, a takedown, ...); the database's triggers move
        the catalogue generation."""
        async with self.sessions() as session:
            await session.execute(update(Plugin).where(Plugin.id == plugin.id).values(**values))
            await session.commit()
        for key, value in values.items():
            setattr(plugin, key, value)

    # ---------------------------------------------------------------- organizations

    async def org(
        self,
        owner: Account | None = None,
        *,
        slug: str | None = None,
        name: str | None = None,
        members: dict[str, OrgRole] | None = None,
    ) -> Organization:
        """An organization with `owner` as its owner (a new verified developer unless
        given) and `members` (account id -> role) besides."""
        if owner is None:
            owner = await self.developer()
        suffix = uuid.uuid4().hex[:8]
        row = Organization(
            slug=slug or f"org-{suffix}", name=name or f"Org {suffix}", created_by=owner.id
        )
        async with self.sessions() as session:
            session.add(row)
            await session.flush()
            for user_id, role in {owner.id: OrgRole.OWNER, **(members or {})}.items():
                session.add(OrganizationMember(org_id=row.id, user_id=user_id, role=role.value))
            await session.commit()
        return row

    async def member(
        self, org: Organization, account: Account, role: OrgRole = OrgRole.MEMBER
    ) -> None:
        async with self.sessions() as session:
            session.add(OrganizationMember(org_id=org.id, user_id=account.id, role=role.value))
            await session.commit()

    async def purchase(
        self,
        buyer: Account,
        plugin: Plugin,
        *,
        status: str = "paid",
        expires_at: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> Purchase:
        row = Purchase(
            user_id=buyer.id,
            plugin_id=plugin.id,
            plugin_key=plugin.plugin_key,
            price=plugin.price,
            validity_days=plugin.validity_days,
            status=status,
            idempotency_key=idempotency_key,
            provider="builtin",
            purchased_at=datetime.now(UTC),
            expires_at=expires_at,
        )
        async with self.sessions() as session:
            session.add(row)
            await session.commit()
        return row

    async def install(self, user: Account, plugin: Plugin, version: str = "1.0.0") -> Install:
        """An install record alone (downloadCount untouched): enough to be allowed to rate."""
        row = Install(user_id=user.id, plugin_id=plugin.id, version=version)
        async with self.sessions() as session:
            session.add(row)
            await session.commit()
        return row
