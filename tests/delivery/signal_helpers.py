"""API calls and database reads shared by the signal and statistics tests (CONTRACT 16)."""

from __future__ import annotations

from datetime import date
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import (
    Plugin,
    PluginDailyStats,
    PluginSignal,
    PluginVersion,
    PluginVersionStats,
)
from tests.factories import Account, Factory
from tests.helpers import ok

API = "/api/v1/plugins"
Sessions = async_sessionmaker[AsyncSession]


async def install(
    client: httpx.AsyncClient, user: Account, plugin_id: str, version: str = "1.0.0"
) -> httpx.Response:
    return await client.post(
        f"{API}/install/{plugin_id}", json={"version": version}, headers=user.headers
    )


async def uninstall(
    client: httpx.AsyncClient, user: Account, plugin_id: str, version: str = "1.0.0"
) -> httpx.Response:
    return await client.post(
        f"{API}/uninstall/{plugin_id}", json={"version": version}, headers=user.headers
    )


async def report(
    client: httpx.AsyncClient,
    user: Account,
    plugin_id: str,
    version: str = "1.0.0",
    kind: str = "crash",
    message: str | None = None,
) -> httpx.Response:
    body: dict[str, Any] = {"version": version, "kind": kind}
    if message is not None:
        body["message"] = message
    return await client.post(f"{API}/report/{plugin_id}", json=body, headers=user.headers)


async def download(
    client: httpx.AsyncClient, user: Account, plugin_id: str, version: str = "1.0.0"
) -> httpx.Response:
    return await client.get(f"{API}/download/{plugin_id}/{version}", headers=user.headers)


async def stats(
    client: httpx.AsyncClient, owner: Account, plugin_id: str, days: Any = None
) -> httpx.Response:
    params = {} if days is None else {"days": days}
    return await client.get(
        f"/api/v1/developer/plugins/{plugin_id}/stats", params=params, headers=owner.headers
    )


async def users(factory: Factory, count: int) -> list[Account]:
    return [await factory.user() for _ in range(count)]


async def rolling_version(
    factory: Factory, owner: Account | None = None, percent: int = 10
) -> tuple[Plugin, PluginVersion]:
    """A listed plugin with a full 1.0.0 and an approved 1.1.0 rolling out to `percent` %."""
    plugin = await factory.plugin(owner)
    await factory.version(plugin, "1.0.0")
    version = await factory.version(
        plugin, "1.1.0", rollout_percent=percent, rollout_state="rolling"
    )
    return plugin, version


def set_halt_settings(app: FastAPI, **values: Any) -> None:
    """This test's automatic-halt thresholds (the app fixture restores its settings)."""
    app.state.settings = app.state.settings.model_copy(
        update={f"rollout_halt_{name}": value for name, value in values.items()}
    )


async def signal_rows(sessions: Sessions, plugin_id: str) -> list[PluginSignal]:
    async with sessions() as session:
        rows = await session.scalars(
            select(PluginSignal).where(PluginSignal.plugin_id == plugin_id)
        )
        return list(rows)


async def daily_rows(sessions: Sessions, plugin_id: str) -> dict[date, PluginDailyStats]:
    async with sessions() as session:
        rows = await session.scalars(
            select(PluginDailyStats).where(PluginDailyStats.plugin_id == plugin_id)
        )
        return {row.day: row for row in rows}


async def version_stat_rows(sessions: Sessions, plugin_id: str) -> dict[str, PluginVersionStats]:
    async with sessions() as session:
        rows = await session.scalars(
            select(PluginVersionStats).where(PluginVersionStats.plugin_id == plugin_id)
        )
        return {row.version: row for row in rows}


async def version_row(sessions: Sessions, version_id: str) -> PluginVersion:
    async with sessions() as session:
        row = await session.get(PluginVersion, version_id)
        assert row is not None
        return row


async def rollout_of(
    client: httpx.AsyncClient, admin: Account, plugin_id: str, version: str
) -> dict[str, Any]:
    """The version's `rollout` as the admin version list shows it."""
    data = ok(
        await client.get(f"/api/v1/admin/plugins/{plugin_id}/versions", headers=admin.headers)
    )
    [found] = [item for item in data["items"] if item["version"] == version]
    rollout: dict[str, Any] = found["rollout"]
    return rollout


async def halt_records(
    client: httpx.AsyncClient, admin: Account, version_id: str
) -> list[dict[str, Any]]:
    data = ok(
        await client.get(
            "/api/v1/admin/audit-logs",
            params={
                "resourceType": "plugin_version",
                "resourceId": version_id,
                "action": "ROLLOUT_HALT",
            },
            headers=admin.headers,
        )
    )
    items: list[dict[str, Any]] = data["items"]
    return items
