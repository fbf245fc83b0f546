"""What the browser tests review, made through the live server's API; the findings are the
automatic checks' own."""

from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass
from typing import Any

import httpx

from tests.e2e.market import Market
from tests.helpers import ok


@dataclass(frozen=True)
class Seeded:
    changed_version_id: str  # console-demo 1.1.0: index.js changed, net:fetch added
    reject_version_id: str  # console-other 2.0.0, pending
    new_plugin_id: str  # console-new, pending with its first version
    developer_id: str  # a developer whose identity waits


def _package(manifest: dict[str, Any], files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in {"manifest.json": json.dumps(manifest, indent=2), **files}.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _publish(market: Market, key: str, name: str) -> str:
    headers = {"Authorization": f"Bearer {market.developer_token}"}
    body = {
        "pluginKey": key,
        "name": name,
        "nameZh": name,
        "description": f"{name}: a plugin the console tests review",
        "descriptionZh": "控制台测试用的插件",
        "type": "tool",
        "category": "utility",
    }
    created = ok(
        httpx.post(f"{market.url}/api/v1/developer/plugins/publish", json=body, headers=headers),
        201,
    )
    plugin_id: str = created["id"]
    return plugin_id


def _upload(
    market: Market,
    plugin_id: str,
    key: str,
    version: str,
    files: dict[str, str],
    permissions: list[str],
    changelog: str,
) -> str:
    manifest = {
        "id": key,
        "version": version,
        "name": key,
        "type": "tool",
        "category": "utility",
        "main": "index.js",
        "permissions": permissions,
    }
    response = httpx.post(
        f"{market.url}/api/v1/developer/plugins/{plugin_id}/upload-version",
        headers={"Authorization": f"Bearer {market.developer_token}"},
        data={"version": version, "changelog": changelog},
        files={"file": (f"{key}.tar.gz", _package(manifest, files), "application/gzip")},
        timeout=60,
    )
    version_id: str = ok(response, 201)["id"]
    return version_id


def _approve_plugin(market: Market, plugin_id: str) -> None:
    market.request("POST", f"/api/v1/admin/plugins/{plugin_id}/review", json={"approved": True})


def _pending_identity(market: Market) -> str:
    token = market.new_user("console-identity")
    headers = {"Authorization": f"Bearer {token}"}
    ok(
        httpx.post(
            f"{market.url}/api/v1/developer/register",
            json={"displayName": "Lin Wei Studio", "website": "https://lin.example"},
            headers=headers,
        )
    )
    ok(
        httpx.post(
            f"{market.url}/api/v1/developer/identity",
            json={"realName": "Lin Wei", "organization": "Lin Wei Studio"},
            headers=headers,
        )
    )
    me = ok(httpx.get(f"{market.url}/api/v1/auth/me", headers=headers))
    user_id: str = me["user"]["id"]
    return user_id


def seed(market: Market) -> Seeded:
    index_v1 = "export default function main() {\n  return { tools: [] };\n}\n"
    index_v2 = (
        "export default async function main() {\n"
        '  const list = await fetch("https://tools.example/list");\n'
        "  return { tools: await list.json() };\n"
        "}\n"
    )
    # eval of a string built at run time: an obfuscation warning for the reviewer.
    helper = (
        "export const twice = (x) => x * 2;\n"
        'export const call = (name) => eval("globalThis." + name + "()");\n'
    )

    demo = _publish(market, "console-demo", "Console Demo")
    _upload(market, demo, "console-demo", "1.0.0", {"index.js": index_v1}, ["ui.render"], "First")
    _approve_plugin(market, demo)  # releases 1.0.0 (linkage)
    changed = _upload(
        market,
        demo,
        "console-demo",
        "1.1.0",
        {"index.js": index_v2, "lib/helper.js": helper},
        ["ui.render", "net:fetch"],
        "Fetches the tool list from the network",
    )

    other = _publish(market, "console-other", "Console Other")
    _upload(market, other, "console-other", "1.0.0", {"index.js": index_v1}, [], "First")
    _approve_plugin(market, other)
    to_reject = _upload(market, other, "console-other", "2.0.0", {"index.js": index_v2}, [], "Big")

    new = _publish(market, "console-new", "Console New")
    _upload(market, new, "console-new", "0.1.0", {"index.js": index_v1}, [], "Hello")

    return Seeded(changed, to_reject, new, _pending_identity(market))
