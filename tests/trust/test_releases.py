"""Release records (CONTRACT 11): signed in the approval's transaction, served with every
download info, null before approval, signed lazily for versions approved before 0007."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import JSON, null, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import PluginVersion, ScenarioVersion
from marketplace.trust.keyring import Keyring, rotate_file
from marketplace_rules.canonical import canonical_json
from tests.factories import Account, Factory
from tests.helpers import ok
from tests.plugins.helpers import create_version, publish, review_plugin, review_version
from tests.scenarios import helpers as scenarios
from tests.trust.releases import open_release

from ..packages.tarballs import package

ADMIN_PLUGINS = "/api/v1/admin/plugins"
USER_DOWNLOAD = "/api/v1/plugins/download"


def tool_package(key: str, version: str) -> bytes:
    manifest = {"id": key, "version": version, "main": "index.js", "category": "utility"}
    return package({**manifest, "type": "tool"}, {"index.js": b"export default 1\n"})


async def upload(
    client: httpx.AsyncClient,
    account: Account,
    plugin: dict[str, Any],
    data: bytes,
    version: str,
    *,
    admin: bool = False,
) -> dict[str, Any]:
    path = (
        f"{ADMIN_PLUGINS}/{plugin['id']}/upload"
        if admin
        else f"/api/v1/developer/plugins/{plugin['id']}/upload-version"
    )
    response = await client.post(
        path,
        data={"version": version},
        files={"file": ("plugin.tar.gz", data, "application/gzip")},
        headers=account.headers,
    )
    result: dict[str, Any] = ok(response, 201)
    return result


async def admin_download(
    client: httpx.AsyncClient, admin: Account, version_id: str
) -> dict[str, Any]:
    url = f"{ADMIN_PLUGINS}/versions/{version_id}/download"
    data: dict[str, Any] = ok(await client.get(url, headers=admin.headers))
    return data


async def stored(
    sessions: async_sessionmaker[AsyncSession], model: Any, version_id: str
) -> tuple[datetime | None, dict[str, str] | None]:
    async with sessions() as session:
        row = (
            await session.execute(
                select(model.approved_at, model.release).where(model.id == version_id)
            )
        ).one()
    return row[0], row[1]


def approved_text(moment: datetime | None) -> str:
    assert moment is not None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_a_reviewed_tarball_version_is_signed_when_approved(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, sessionmaker: Any
) -> None:
    dev, admin, user = await factory.developer(), await factory.admin(), await factory.user()
    plugin = await publish(client, dev, type="tool", category="utility")
    data = tool_package(plugin["pluginKey"], "1.0.0")
    version = await upload(client, dev, plugin, data, "1.0.0")
    assert await stored(sessionmaker, PluginVersion, version["id"]) == (None, None)
    pending = await admin_download(client, admin, version["id"])
    assert pending["release"] is None

    ok(await review_plugin(client, admin, plugin["id"], approved=True))  # linkage approves 1.0.0

    approved_at, record = await stored(sessionmaker, PluginVersion, version["id"])
    assert record is not None
    fields = open_release(app, record)
    assert fields == {
        "kind": "plugin",
        "key": plugin["pluginKey"],
        "version": "1.0.0",
        "distribution": "tarball",
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "approvedAt": approved_text(approved_at),
    }
    assert record["keyId"] == app.state.keyring.signing_key().key_id
    info = ok(await client.get(f"{USER_DOWNLOAD}/{plugin['id']}/1.0.0", headers=user.headers))
    assert info["release"] == record
    assert (await admin_download(client, admin, version["id"]))["release"] == record


async def test_version_review_signs_and_a_rejection_does_not(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, sessionmaker: Any
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev, type="tool", category="utility")
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    first = await upload(client, dev, plugin, tool_package(plugin["pluginKey"], "1.0.0"), "1.0.0")
    second = await upload(client, dev, plugin, tool_package(plugin["pluginKey"], "1.1.0"), "1.1.0")
    ok(await review_version(client, admin, first["id"], approved=True))
    ok(await review_version(client, admin, second["id"], approved=False, reviewNote="no"))
    assert (
        open_release(app, (await stored(sessionmaker, PluginVersion, first["id"]))[1])["version"]
        == "1.0.0"
    )
    assert await stored(sessionmaker, PluginVersion, second["id"]) == (None, None)
    assert (await admin_download(client, admin, second["id"]))["release"] is None


async def test_an_admin_upload_is_signed_at_once(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    admin = await factory.admin()
    plugin = await publish(client, admin, type="tool", category="utility")
    data = tool_package(plugin["pluginKey"], "2.0.0")
    version = await upload(client, admin, plugin, data, "2.0.0", admin=True)
    info = await admin_download(client, admin, version["id"])
    fields = open_release(app, info["release"])
    assert (fields["distribution"], fields["sha256"], fields["size"]) == (
        "tarball",
        info["sha256"],
        info["size"],
    )


@pytest.mark.parametrize("distribution", ["config_only", "inline"])
async def test_manifest_versions_sign_the_canonical_json_of_the_served_manifest(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, distribution: str
) -> None:
    admin, user = await factory.admin(), await factory.user()
    plugin_type = "mcp" if distribution == "config_only" else "tool"
    plugin = await publish(client, admin, type=plugin_type, category="utility")
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    # Numbers a database may write back differently (JSONB: 1e16 becomes an integer):
    # the record must name what downloads serve, not what the request sent.
    manifest: dict[str, Any] = {
        "id": plugin["pluginKey"],
        "version": "1.0.0",
        "main": "",
        "category": "utility",
        "type": plugin_type,
        "weight": 1e16,
        "ratio": 0.1,
        "名前": "天气",
    }
    if distribution == "inline":
        manifest["inlineCode"] = "export default () => 1"
    else:
        manifest["mcp"] = {"command": "npx", "args": ["weather-mcp"]}
    response = await client.post(
        f"{ADMIN_PLUGINS}/{plugin['id']}/create-version",
        json={"version": "1.0.0", "manifest": manifest},
        headers=admin.headers,
    )
    assert ok(response, 201)["reviewStatus"] == "approved"
    info = ok(await client.get(f"{USER_DOWNLOAD}/{plugin['id']}/latest", headers=user.headers))
    assert info["distribution"] == distribution
    served = canonical_json(info["manifest"])
    fields = open_release(app, info["release"])
    assert fields["distribution"] == distribution
    assert (fields["sha256"], fields["size"]) == (hashlib.sha256(served).hexdigest(), len(served))
    assert (fields["kind"], fields["key"], fields["version"]) == (
        "plugin",
        plugin["pluginKey"],
        "1.0.0",
    )


async def test_a_scenario_release_is_signed_and_served(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, sessionmaker: Any
) -> None:
    dev, admin, user = await factory.developer(), await factory.admin(), await factory.user()
    scenario = await scenarios.publish(client, dev)
    data = scenarios.scenario_package(scenario["id"], "1.0.0")
    ok(await scenarios.upload(client, dev, scenario["id"], data))
    version_id = await scenarios.version_id(client, admin, scenario["id"], "1.0.0")
    admin_url = f"{scenarios.ADMIN}/versions/{version_id}/download"
    assert ok(await client.get(admin_url, headers=admin.headers))["release"] is None

    await scenarios.approve(client, admin, scenario["id"])

    approved_at, record = await stored(sessionmaker, ScenarioVersion, version_id)
    info = ok(
        await client.get(f"{scenarios.PUBLIC}/{scenario['id']}/download", headers=user.headers)
    )
    assert info["release"] == record
    assert open_release(app, record) == {
        "kind": "scenario",
        "key": scenario["id"],
        "version": "1.0.0",
        "distribution": "tarball",
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "approvedAt": approved_text(approved_at),
    }
    assert ok(await client.get(admin_url, headers=admin.headers))["release"] == record


@pytest.mark.parametrize("empty", [null(), JSON.NULL], ids=["sql-null", "json-null"])
async def test_a_version_approved_before_release_records_is_signed_on_first_download(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, sessionmaker: Any, empty: Any
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(plugin_key="legacy-tool")
    version = await factory.version(plugin, "1.0.0")
    # As migration 0007 leaves it: approved, dated, no record.
    legacy_time = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    async with sessionmaker.begin() as session:
        await session.execute(
            update(PluginVersion)
            .where(PluginVersion.id == version.id)
            .values(approved_at=legacy_time, release=empty)
        )
    assert await stored(sessionmaker, PluginVersion, version.id) == (legacy_time, None)

    info = ok(await client.get(f"{USER_DOWNLOAD}/{plugin.id}/1.0.0", headers=user.headers))

    approved_at, record = await stored(sessionmaker, PluginVersion, version.id)
    assert approved_at == legacy_time
    assert record is not None and info["release"] == record
    assert open_release(app, record) == {
        "kind": "plugin",
        "key": "legacy-tool",
        "version": "1.0.0",
        "distribution": "tarball",
        "sha256": version.sha256,
        "size": 4096,
        "approvedAt": "2026-01-02T03:04:05Z",
    }
    again = ok(await client.get(f"{USER_DOWNLOAD}/{plugin.id}/1.0.0", headers=user.headers))
    assert again["release"] == record


async def test_two_first_downloads_at_once_agree_on_one_record(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    version = await factory.version(plugin, "1.0.0", distribution="config_only")
    url = f"{USER_DOWNLOAD}/{plugin.id}/1.0.0"
    first, second = await asyncio.gather(
        client.get(url, headers=user.headers), client.get(url, headers=user.headers)
    )
    assert (first.status_code, second.status_code) == (200, 200)
    _, record = await stored(sessionmaker, PluginVersion, version.id)
    assert ok(first)["release"] == ok(second)["release"] == record


async def test_releases_signed_before_a_rotation_keep_their_key(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    admin, user = await factory.admin(), await factory.user()
    keyring: Keyring = app.state.keyring
    plugin = await publish(client, admin)
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    await create_version(client, admin, plugin, "1.0.0", admin=True)
    old_key = keyring.signing_key().key_id
    assert keyring.path is not None
    fresh, retired = rotate_file(keyring.path)
    assert [key.key_id for key in retired] == [old_key]
    await create_version(client, admin, plugin, "1.1.0", admin=True)

    old = ok(await client.get(f"{USER_DOWNLOAD}/{plugin['id']}/1.0.0", headers=user.headers))
    new = ok(await client.get(f"{USER_DOWNLOAD}/{plugin['id']}/1.1.0", headers=user.headers))
    assert old["release"]["keyId"] == old_key
    assert new["release"]["keyId"] == fresh.key_id != old_key
    assert open_release(app, old["release"])["version"] == "1.0.0"
    assert open_release(app, new["release"])["version"] == "1.1.0"


async def test_openapi_documents_release_on_every_download(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    for name in ("DownloadTarball", "DownloadConfigOnly", "DownloadInline", "ScenarioDownloadOut"):
        assert "release" in schemas[name]["properties"], name
        assert "release" in schemas[name]["required"], name
    record = schemas["ReleaseRecord"]
    assert set(record["properties"]) == {"keyId", "payload", "signature", "logIndex"}
    assert set(record["required"]) == {"keyId", "payload", "signature", "logIndex"}
