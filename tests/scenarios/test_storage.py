"""Scenario blobs are references too: gc keeps them, plugin deletion does not remove them."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import httpx
from fastapi import FastAPI

from marketplace.publishing.blobs import referenced_blob_keys, unreferenced
from marketplace.storage.base import blob_key
from marketplace.storage.gc import collect_garbage
from tests.factories import Factory
from tests.helpers import ok
from tests.packages.tarballs import package
from tests.plugins.helpers import publish as publish_plugin
from tests.plugins.test_upload import tool_manifest
from tests.plugins.test_upload import upload as upload_plugin
from tests.scenarios.helpers import publish, upload


async def test_gc_keeps_scenario_blobs(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, sessionmaker
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    data = package({"id": scenario["id"], "version": "1.0.0"})
    key = blob_key(hashlib.sha256(data).hexdigest())
    ok(await upload(client, dev, scenario["id"], data))
    async with sessionmaker() as session:
        referenced = await referenced_blob_keys(session)
        assert key in referenced
        assert await unreferenced(session, [key, "00/00/" + "0" * 64]) == ["00/00/" + "0" * 64]
    later = datetime.now(UTC) + timedelta(hours=2)
    assert await collect_garbage(app.state.blob_store, referenced, now=later) == []
    assert await app.state.blob_store.exists(key)


async def test_deleting_a_plugin_keeps_a_blob_a_scenario_shares(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish_plugin(client, dev, type="tool", category="utility")
    scenario = await publish(client, dev, id=plugin["pluginKey"])
    # One archive that is valid for both: its manifest names the same id and version.
    data = package(tool_manifest(plugin["pluginKey"], "1.0.0"), {"index.js": b"x"})
    ok(await upload_plugin(client, dev, plugin, data), 201)
    ok(await upload(client, dev, scenario["id"], data))
    ok(await client.delete(f"/api/v1/admin/plugins/{plugin['id']}", headers=admin.headers))
    assert await app.state.blob_store.exists(blob_key(hashlib.sha256(data).hexdigest()))


async def test_category_used_by_a_scenario_cannot_be_deleted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    ok(
        await client.post(
            "/api/v1/admin/plugins/categories",
            json={"key": "flows", "name": "Flows", "nameZh": "流程"},
            headers=admin.headers,
        ),
        201,
    )
    await publish(client, dev, category="flows")
    response = await client.delete("/api/v1/admin/plugins/categories/flows", headers=admin.headers)
    assert response.status_code == 409 and response.json()["error"]["code"] == "INVALID_STATE"
    keys = [
        c["key"]
        for c in ok(await client.get("/api/v1/admin/plugins/categories", headers=admin.headers))[
            "items"
        ]
    ]
    assert "flows" in keys
