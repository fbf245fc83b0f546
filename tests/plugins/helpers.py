"""API-level helpers for plugin tests: publish, create versions, review, all through HTTP."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.factories import Account
from tests.helpers import ok


def unique_key(prefix: str = "plug") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def publish_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "pluginKey": unique_key(),
        "name": "Weather",
        "nameZh": "天气",
        "description": "Shows the weather",
        "descriptionZh": "显示天气",
        "type": "mcp",
    }
    body.update(overrides)
    return body


def config_manifest(key: str, version: str, **overrides: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "id": key,
        "version": version,
        "main": "",
        "category": "productivity",
        "type": "mcp",
        "mcp": {"command": "npx", "args": ["weather-mcp"]},
    }
    manifest.update(overrides)
    return manifest


async def publish(client: httpx.AsyncClient, dev: Account, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = ok(
        await client.post(
            "/api/v1/developer/plugins/publish", json=publish_body(**overrides), headers=dev.headers
        ),
        201,
    )
    return data


async def create_version(
    client: httpx.AsyncClient,
    account: Account,
    plugin: dict[str, Any],
    version: str,
    *,
    admin: bool = False,
    **manifest_overrides: Any,
) -> dict[str, Any]:
    group = "admin" if admin else "developer"
    data: dict[str, Any] = ok(
        await client.post(
            f"/api/v1/{group}/plugins/{plugin['id']}/create-version",
            json={
                "version": version,
                "manifest": config_manifest(plugin["pluginKey"], version, **manifest_overrides),
            },
            headers=account.headers,
        ),
        201,
    )
    return data


async def review_plugin(
    client: httpx.AsyncClient, admin: Account, plugin_id: str, **body: Any
) -> httpx.Response:
    return await client.post(
        f"/api/v1/admin/plugins/{plugin_id}/review", json=body, headers=admin.headers
    )


async def review_version(
    client: httpx.AsyncClient, admin: Account, version_id: str, **body: Any
) -> httpx.Response:
    return await client.post(
        f"/api/v1/admin/plugins/versions/{version_id}/review", json=body, headers=admin.headers
    )


async def admin_versions(
    client: httpx.AsyncClient, admin: Account, plugin_id: str
) -> list[dict[str, Any]]:
    data = ok(
        await client.get(f"/api/v1/admin/plugins/{plugin_id}/versions", headers=admin.headers)
    )
    items: list[dict[str, Any]] = data["items"]
    return items
