"""Manifests nested too deeply are refused before anything is stored, on every path.

A 300-deep manifest once answered 500 yet committed its version and blob, and from then
on the admin queue and the developer's plugin detail answered 500 as well.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from marketplace_rules.limits import MANIFEST_MAX_DEPTH
from tests.factories import Account, Factory
from tests.helpers import err, ok
from tests.packages.tarballs import file, manifest_file, tar_gz
from tests.plugins.helpers import config_manifest, publish
from tests.plugins.test_upload import tool_manifest, upload

pytestmark = pytest.mark.fault


def _nested(levels: int) -> Any:
    """levels nested objects: {"a": {"a": ... {}}}."""
    value: Any = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def _deep_json(levels: int) -> str:
    # Built as text: json.dumps itself recurses and would stop first.
    return '{"a": ' * (levels - 1) + "{}" + "}" * (levels - 1)


async def _create_version(
    client: httpx.AsyncClient, dev: Account, plugin: dict[str, Any], extra: Any
) -> httpx.Response:
    manifest = config_manifest(plugin["pluginKey"], "1.0.0", extra=extra)
    return await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/create-version",
        json={"version": "1.0.0", "manifest": manifest},
        headers=dev.headers,
    )


async def _lists_still_answer(
    client: httpx.AsyncClient, dev: Account, admin: Account, plugin: dict[str, Any]
) -> list[dict[str, Any]]:
    queue = ok(await client.get("/api/v1/admin/plugins/versions/pending", headers=admin.headers))
    assert isinstance(queue["items"], list)
    detail = ok(await client.get(f"/api/v1/developer/plugins/{plugin['id']}", headers=dev.headers))
    versions: list[dict[str, Any]] = detail["versions"]
    return versions


async def test_create_version_at_the_depth_limit_passes_and_one_deeper_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    # The manifest is level 1, so `extra` may hold MANIFEST_MAX_DEPTH - 1 levels.
    too_deep = await _create_version(client, dev, plugin, _nested(MANIFEST_MAX_DEPTH))
    body = err(too_deep, 400, "VALIDATION_FAILED")
    assert f"nests deeper than {MANIFEST_MAX_DEPTH} levels" in body["message"]
    assert await _lists_still_answer(client, dev, admin, plugin) == []
    fits = await _create_version(client, dev, plugin, _nested(MANIFEST_MAX_DEPTH - 1))
    assert ok(fits, 201)["version"] == "1.0.0"
    assert len(await _lists_still_answer(client, dev, admin, plugin)) == 1


@pytest.mark.parametrize("levels", [300, 100_000])
async def test_a_body_nested_past_any_limit_is_400(
    client: httpx.AsyncClient, factory: Factory, levels: int
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    manifest = json.dumps(config_manifest(plugin["pluginKey"], "1.0.0"))
    body = f'{{"version": "1.0.0", "manifest": {manifest[:-1]}, "extra": {_deep_json(levels)}}}}}'
    response = await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/create-version",
        content=body.encode(),
        headers={**dev.headers, "content-type": "application/json"},
    )
    err(response, 400, "VALIDATION_FAILED")
    assert await _lists_still_answer(client, dev, admin, plugin) == []


@pytest.mark.parametrize("levels", [MANIFEST_MAX_DEPTH, 300, 5_000])
async def test_an_uploaded_manifest_nested_too_deeply_is_refused_and_nothing_stored(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory, levels: int
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    manifest = json.dumps(tool_manifest(plugin["pluginKey"], "1.0.0"))
    document = f'{manifest[:-1]}, "extra": {_deep_json(levels)}}}'.encode()
    data = tar_gz([manifest_file(document), file("index.js", b"export default 1\n")])
    response = await upload(client, dev, plugin, data)
    body = err(response, 400, "PLUGIN_PACKAGE_INVALID")
    assert "manifest.json" in body["message"]
    assert await _lists_still_answer(client, dev, admin, plugin) == []
    store = app.state.blob_store
    assert [key async for key in store.iter_keys()] == []
