"""GET /api/v1/plugins/download/{pluginId}/{version}."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.commerce.helpers import FakeBlobStore
from tests.factories import Factory
from tests.helpers import err, ok
from tests.trust.releases import open_release

API = "/api/v1/plugins/download"


async def test_download_tarball_gives_presigned_url_sha256_and_size(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore, settings, app
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(plugin_key="weather")
    version = await factory.version(plugin, "1.2.0")
    data = ok(await client.get(f"{API}/{plugin.id}/1.2.0", headers=user.headers))
    assert set(data) == {"distribution", "url", "sha256", "size", "expiresAt", "release"}
    release = open_release(app, data["release"])
    assert release["kind"] == "plugin" and release["key"] == "weather"
    assert (release["version"], release["sha256"], release["size"]) == (
        "1.2.0",
        version.sha256,
        4096,
    )
    assert data["distribution"] == "tarball"
    assert data["url"].startswith(f"https://blobs.test/{version.blob_key}")
    assert (data["sha256"], data["size"]) == (version.sha256, 4096)
    assert blob_store.calls == [
        (version.blob_key, "weather-1.2.0.tar.gz", settings.download_url_seconds)
    ]
    expires = datetime.fromisoformat(data["expiresAt"])
    expected = datetime.now(UTC) + timedelta(seconds=settings.download_url_seconds)
    assert abs((expires - expected).total_seconds()) < 5


async def test_download_config_only_gives_the_manifest(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore, app
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    version = await factory.version(plugin, distribution="config_only")
    data = ok(await client.get(f"{API}/{plugin.id}/1.0.0", headers=user.headers))
    release = data.pop("release")
    assert data == {"distribution": "config_only", "configOnly": True, "manifest": version.manifest}
    assert open_release(app, release)["distribution"] == "config_only"
    assert blob_store.calls == []


async def test_download_inline_gives_the_manifest_with_its_code(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore, app
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    version = await factory.version(plugin, distribution="inline")
    data = ok(await client.get(f"{API}/{plugin.id}/1.0.0", headers=user.headers))
    release = data.pop("release")
    assert data == {"distribution": "inline", "manifest": version.manifest}
    assert open_release(app, release)["distribution"] == "inline"
    assert "inlineCode" in data["manifest"]


async def test_download_latest_is_the_current_version(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    current = await factory.version(plugin, "1.1.0")
    await factory.version(plugin, "2.0.0", review_status="pending")
    data = ok(await client.get(f"{API}/{plugin.plugin_key}/latest", headers=user.headers))
    assert data["sha256"] == current.sha256


async def test_download_an_older_approved_version(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    old = await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.1.0")
    data = ok(await client.get(f"{API}/{plugin.id}/1.0.0", headers=user.headers))
    assert data["sha256"] == old.sha256


async def test_download_is_not_cached(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    response = await client.get(f"{API}/{plugin.id}/1.0.0", headers=user.headers)
    assert response.headers["cache-control"] == "private, no-store"


async def test_download_needs_login(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin()
    await factory.version(plugin)
    err(await client.get(f"{API}/{plugin.id}/1.0.0"), 401, "UNAUTHORIZED")


async def test_download_of_unknown_plugin_is_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    err(
        await client.get(f"{API}/nothing-here/1.0.0", headers=user.headers), 404, "PLUGIN_NOT_FOUND"
    )


async def test_download_of_unknown_version_is_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    err(
        await client.get(f"{API}/{plugin.id}/9.9.9", headers=user.headers),
        404,
        "PLUGIN_VERSION_NOT_FOUND",
    )


@pytest.mark.parametrize("status", ["pending", "rejected", "taken_down"])
async def test_download_of_a_version_not_approved_is_403(
    client: httpx.AsyncClient, factory: Factory, status: str
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.1.0", review_status=status)
    err(
        await client.get(f"{API}/{plugin.id}/1.1.0", headers=user.headers),
        403,
        "PLUGIN_VERSION_NOT_APPROVED",
    )


@pytest.mark.parametrize(
    "state",
    [
        {"review_status": "pending"},
        {"review_status": "rejected"},
        {"review_status": "taken_down"},
        {"review_status": "approved", "enabled": False},
    ],
)
async def test_download_from_an_unlisted_plugin_is_403(
    client: httpx.AsyncClient, factory: Factory, state: dict[str, Any]
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    await factory.update_plugin(plugin, **state)
    err(
        await client.get(f"{API}/{plugin.id}/1.0.0", headers=user.headers),
        403,
        "PLUGIN_VERSION_NOT_APPROVED",
    )


async def test_download_latest_without_an_approved_version_is_403(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin, review_status="pending")
    err(
        await client.get(f"{API}/{plugin.id}/latest", headers=user.headers),
        403,
        "PLUGIN_VERSION_NOT_APPROVED",
    )


async def test_download_of_paid_plugin_without_purchase_is_402(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.version(plugin)
    err(
        await client.get(f"{API}/{plugin.id}/1.0.0", headers=user.headers),
        402,
        "PLUGIN_NOT_PURCHASED",
    )
    assert blob_store.calls == []


async def test_download_of_paid_plugin_with_purchase(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.version(plugin)
    await factory.purchase(user, plugin)
    assert ok(await client.get(f"{API}/{plugin.id}/1.0.0", headers=user.headers))["url"]


async def test_download_with_expired_subscription_is_402(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, validity_days=30)
    await factory.version(plugin)
    await factory.purchase(user, plugin, expires_at=datetime.now(UTC) - timedelta(minutes=1))
    err(
        await client.get(f"{API}/{plugin.id}/1.0.0", headers=user.headers),
        402,
        "PLUGIN_NOT_PURCHASED",
    )


async def test_download_with_only_a_pending_purchase_is_402(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.version(plugin)
    await factory.purchase(user, plugin, status="pending")
    err(
        await client.get(f"{API}/{plugin.id}/1.0.0", headers=user.headers),
        402,
        "PLUGIN_NOT_PURCHASED",
    )


async def test_download_of_own_paid_plugin_needs_no_purchase(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner, is_free=False)
    await factory.version(plugin)
    assert ok(await client.get(f"{API}/{plugin.id}/1.0.0", headers=owner.headers))["url"]


async def test_download_of_paid_plugin_by_admin_needs_no_purchase(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore
) -> None:
    admin = await factory.admin()
    plugin = await factory.plugin(is_free=False)
    await factory.version(plugin)
    assert ok(await client.get(f"{API}/{plugin.id}/1.0.0", headers=admin.headers))["url"]


async def test_download_checks_approval_before_purchase(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.version(plugin, review_status="pending")
    err(
        await client.get(f"{API}/{plugin.id}/1.0.0", headers=user.headers),
        403,
        "PLUGIN_VERSION_NOT_APPROVED",
    )
