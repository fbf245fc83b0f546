"""GET /api/v1/limits: the upload limits a client checks before sending anything."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from marketplace.config import Settings
from tests.factories import Factory
from tests.helpers import err, ok

KIB, MIB = 1024, 1024 * 1024


async def test_limits_answers_the_configured_sizes_without_a_token(
    client: httpx.AsyncClient,
) -> None:
    assert ok(await client.get("/api/v1/limits")) == {
        "pluginPackageMaxBytes": 100 * MIB,
        "scenarioPackageMaxBytes": 50 * MIB,
        "iconMaxBytes": 256 * KIB,
        "iconMediaTypes": ["image/jpeg", "image/png", "image/svg+xml", "image/webp"],
    }


async def test_limits_follow_the_settings(
    client: httpx.AsyncClient, app: FastAPI, settings: Settings
) -> None:
    app.state.settings = settings.model_copy(update={"plugin_package_max_mb": 3})

    assert ok(await client.get("/api/v1/limits"))["pluginPackageMaxBytes"] == 3 * MIB


async def test_limits_with_an_invalid_token_is_401(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/limits", headers={"Authorization": "Bearer nope"})

    err(response, 401, "UNAUTHORIZED")


async def test_limits_does_not_shadow_a_plugin_called_limits(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="limits")

    assert ok(await client.get("/api/v1/plugins/detail/limits"))["pluginKey"] == "limits"
    err(await client.get("/api/v1/plugins/limits"), 404, "NOT_FOUND")
