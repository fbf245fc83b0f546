"""API calls and database reads shared by the organization tests (CONTRACT 17)."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import AuditLog, Organization, OrganizationMember, Plugin
from tests.factories import Account
from tests.plugins.helpers import publish_body

ORGS = "/api/v1/developer/orgs"
PLUGINS = "/api/v1/developer/plugins"
Sessions = async_sessionmaker[AsyncSession]


async def create(
    client: httpx.AsyncClient, caller: Account, slug: str, name: str = "Acme Tools"
) -> httpx.Response:
    return await client.post(ORGS, json={"slug": slug, "name": name}, headers=caller.headers)


async def add(
    client: httpx.AsyncClient, caller: Account, slug: str, email: str, role: str = "member"
) -> httpx.Response:
    return await client.post(
        f"{ORGS}/{slug}/members", json={"email": email, "role": role}, headers=caller.headers
    )


async def remove(
    client: httpx.AsyncClient, caller: Account, slug: str, user_id: str
) -> httpx.Response:
    return await client.delete(f"{ORGS}/{slug}/members/{user_id}", headers=caller.headers)


async def members(client: httpx.AsyncClient, caller: Account, slug: str) -> httpx.Response:
    return await client.get(f"{ORGS}/{slug}/members", headers=caller.headers)


async def transfer(
    client: httpx.AsyncClient, caller: Account, plugin_id: str, slug: str
) -> httpx.Response:
    return await client.post(
        f"{PLUGINS}/{plugin_id}/transfer", json={"org": slug}, headers=caller.headers
    )


async def publish(
    client: httpx.AsyncClient, caller: Account, key: str, **overrides: Any
) -> httpx.Response:
    return await client.post(
        f"{PLUGINS}/publish", json=publish_body(pluginKey=key, **overrides), headers=caller.headers
    )


async def roles(sessions: Sessions, org_id: str) -> dict[str, str]:
    """user id -> role, as the database holds them."""
    async with sessions() as session:
        rows = await session.execute(
            select(OrganizationMember.user_id, OrganizationMember.role).where(
                OrganizationMember.org_id == org_id
            )
        )
        return {user_id: role for user_id, role in rows}


async def org_row(sessions: Sessions, slug: str) -> Organization | None:
    async with sessions() as session:
        found: Organization | None = await session.scalar(
            select(Organization).where(Organization.slug == slug)
        )
        return found


async def plugin_row(sessions: Sessions, plugin_id: str) -> Plugin | None:
    async with sessions() as session:
        return await session.get(Plugin, plugin_id)


async def plugin_by_key(sessions: Sessions, key: str) -> Plugin | None:
    async with sessions() as session:
        found: Plugin | None = await session.scalar(select(Plugin).where(Plugin.plugin_key == key))
        return found


async def audit(sessions: Sessions, resource_id: str) -> list[AuditLog]:
    """The audit records of a resource, oldest first."""
    async with sessions() as session:
        rows = await session.scalars(
            select(AuditLog)
            .where(AuditLog.resource_id == resource_id)
            .order_by(AuditLog.created_at, AuditLog.id)
        )
        return list(rows)
