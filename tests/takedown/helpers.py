"""API-level helpers for takedown and revocation tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from marketplace.trust.keyring import verify
from marketplace_rules.canonical import b64decode
from tests.factories import Account, Factory
from tests.helpers import ok
from tests.plugins.helpers import create_version, publish, review_plugin

REVOCATIONS = "/api/v1/plugins/revocations"
ADMIN_PLUGINS = "/api/v1/admin/plugins"
DEV_PLUGINS = "/api/v1/developer/plugins"
ADMIN_SCENARIOS = "/api/v1/admin/scenarios"
DEV_SCENARIOS = "/api/v1/marketplace/developer"


@dataclass
class Released:
    """A developer's listed plugin whose versions were released in the given order."""

    dev: Account
    admin: Account
    plugin: dict[str, Any]
    ids: dict[str, str]  # version -> version id

    @property
    def key(self) -> str:
        return str(self.plugin["pluginKey"])


async def released_plugin(
    client: httpx.AsyncClient, factory: Factory, versions: tuple[str, ...] = ("1.0.0",)
) -> Released:
    """Each version is created by an administrator: approved and current at once, so the
    last one given is current whatever its number."""
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    ids = {}
    for version in versions:
        ids[version] = (await create_version(client, admin, plugin, version, admin=True))["id"]
    return Released(dev, admin, plugin, ids)


async def admin_takedown(
    client: httpx.AsyncClient, admin: Account, version_id: str, reason: Any = "malware"
) -> httpx.Response:
    return await client.post(
        f"{ADMIN_PLUGINS}/versions/{version_id}/takedown",
        json={"reason": reason},
        headers=admin.headers,
    )


async def developer_takedown(
    client: httpx.AsyncClient, dev: Account, plugin: str, version_id: str, reason: Any = "leak"
) -> httpx.Response:
    return await client.post(
        f"{DEV_PLUGINS}/{plugin}/versions/{version_id}/takedown",
        json={"reason": reason},
        headers=dev.headers,
    )


async def plugin_state(
    client: httpx.AsyncClient, admin: Account, plugin_id: str
) -> tuple[str | None, dict[str, tuple[str, bool]]]:
    """(latestVersion, {version: (reviewStatus, isLatest)}) as the admin group reads them."""
    plugin = ok(await client.get(f"{ADMIN_PLUGINS}/{plugin_id}", headers=admin.headers))
    items = ok(await client.get(f"{ADMIN_PLUGINS}/{plugin_id}/versions", headers=admin.headers))
    states = {v["version"]: (v["reviewStatus"], v["isLatest"]) for v in items["items"]}
    return plugin["latestVersion"], states


async def verified_list(client: httpx.AsyncClient) -> dict[str, Any]:
    """The revocation list's payload, after checking its signature with the listed key."""
    response = await client.get(REVOCATIONS)
    signed = ok(response)
    assert set(signed) == {"keyId", "payload", "signature"}
    keys = ok(await client.get("/api/v1/keys"))["items"]
    [key] = [k for k in keys if k["keyId"] == signed["keyId"]]
    payload = b64decode(signed["payload"])
    assert verify(b64decode(key["publicKey"]), payload, b64decode(signed["signature"]))
    document: dict[str, Any] = json.loads(payload)
    return document
