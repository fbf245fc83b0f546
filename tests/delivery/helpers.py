"""API-level helpers for rollout and channel tests (CONTRACT 16)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import Plugin, PluginVersion
from tests.factories import Account
from tests.helpers import ok
from tests.packages.tarballs import package

ADMIN_PLUGINS = "/api/v1/admin/plugins"
DEV_PLUGINS = "/api/v1/developer/plugins"


def rollout_path(version_id: str, plugin_ref: str | None = None) -> str:
    """The owner's path when a plugin is named, else the administrators' one."""
    if plugin_ref is None:
        return f"{ADMIN_PLUGINS}/versions/{version_id}/rollout"
    return f"{DEV_PLUGINS}/{plugin_ref}/versions/{version_id}/rollout"


@dataclass
class Mover:
    """Rollout moves as one caller makes them: the owner through the developer group
    (`plugin_ref` set), or an administrator through the admin group."""

    client: httpx.AsyncClient
    account: Account
    plugin_ref: str | None

    @property
    def trigger(self) -> str:
        return "admin" if self.plugin_ref is None else "developer"

    async def put(self, version_id: str, body: Any) -> httpx.Response:
        return await self.client.put(
            rollout_path(version_id, self.plugin_ref), json=body, headers=self.account.headers
        )

    async def set(self, version_id: str, percent: Any) -> httpx.Response:
        return await self.put(version_id, {"percent": percent})

    async def halt(self, version_id: str, reason: Any = "crashes on start") -> httpx.Response:
        return await self.client.post(
            f"{rollout_path(version_id, self.plugin_ref)}/halt",
            json={"reason": reason},
            headers=self.account.headers,
        )

    async def resume(self, version_id: str) -> httpx.Response:
        return await self.client.post(
            f"{rollout_path(version_id, self.plugin_ref)}/resume", headers=self.account.headers
        )


@dataclass(frozen=True)
class StoredRollout:
    review_status: str
    is_latest: bool
    percent: int
    state: str
    halted_reason: str | None


async def stored_rollout(
    sessionmaker: async_sessionmaker[AsyncSession], version_id: str
) -> StoredRollout:
    """The version's rollout as the database holds it."""
    async with sessionmaker() as session:
        row = await session.get(PluginVersion, version_id)
        assert row is not None
        return StoredRollout(
            row.review_status,
            row.is_latest,
            row.rollout_percent,
            row.rollout_state,
            row.rollout_halted_reason,
        )


async def stored_plugin(sessionmaker: async_sessionmaker[AsyncSession], plugin_id: str) -> Plugin:
    async with sessionmaker() as session:
        row = await session.get(Plugin, plugin_id)
        assert row is not None
        return row


async def rollout_audits(
    client: httpx.AsyncClient, admin: Account, version_id: str
) -> list[dict[str, Any]]:
    """The version's ROLLOUT_* audit records through the admin API, oldest first."""
    data = ok(
        await client.get(
            "/api/v1/admin/audit-logs",
            params={"resourceType": "plugin_version", "resourceId": version_id, "limit": 100},
            headers=admin.headers,
        )
    )
    items: list[dict[str, Any]] = data["items"]
    return [a for a in reversed(items) if a["action"].startswith("ROLLOUT_")]


def audit_summary(audits: list[dict[str, Any]]) -> list[tuple[str, str | None, str, str, str]]:
    """(action, actorId, trigger, outcome, note) of each record."""
    return [
        (
            a["action"],
            a["actorId"],
            a["detail"]["trigger"],
            a["detail"]["outcome"],
            a["detail"]["note"],
        )
        for a in audits
    ]


async def admin_version(
    client: httpx.AsyncClient, admin: Account, plugin_id: str, version_id: str
) -> dict[str, Any]:
    """One version as the admin group's version list shows it."""
    data = ok(await client.get(f"{ADMIN_PLUGINS}/{plugin_id}/versions", headers=admin.headers))
    [found] = [v for v in data["items"] if v["id"] == version_id]
    return dict(found)


async def channel_version(
    client: httpx.AsyncClient,
    account: Account,
    plugin: dict[str, Any],
    version: str,
    *,
    admin: bool = False,
    **extra: Any,
) -> httpx.Response:
    """create-version of a configuration-only version with extra body fields (a channel)."""
    group = "admin" if admin else "developer"
    manifest = {
        "id": plugin["pluginKey"],
        "version": version,
        "main": "",
        "category": "productivity",
        "type": "mcp",
        "mcp": {"command": "npx", "args": ["weather-mcp"]},
    }
    return await client.post(
        f"/api/v1/{group}/plugins/{plugin['id']}/create-version",
        json={"version": version, "manifest": manifest, **extra},
        headers=account.headers,
    )


def tool_package(key: str, version: str) -> bytes:
    manifest = {"id": key, "version": version, "main": "index.js", "category": "utility"}
    return package({**manifest, "type": "tool"}, {"index.js": b"export default 1\n"})


async def upload_version(
    client: httpx.AsyncClient,
    account: Account,
    plugin: dict[str, Any],
    version: str,
    *,
    admin: bool = False,
    channel: str | None = None,
) -> httpx.Response:
    """A package upload (developer upload-version, or the admin upload) with a channel field."""
    path = (
        f"{ADMIN_PLUGINS}/{plugin['id']}/upload"
        if admin
        else f"{DEV_PLUGINS}/{plugin['id']}/upload-version"
    )
    fields = {"version": version} | ({"channel": channel} if channel is not None else {})
    data = tool_package(plugin["pluginKey"], version)
    files = {"file": ("plugin.tar.gz", data, "application/gzip")}
    return await client.post(path, data=fields, files=files, headers=account.headers)
