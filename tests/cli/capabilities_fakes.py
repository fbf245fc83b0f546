"""The fake service's side of CONTRACT 13 for the install client's tests: versions of
`demo-plugin` to install or update to, and their capabilities."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from marketplace_client.audit import REVOCATIONS

from .fake_api import FakeApi
from .helpers import base_manifest
from .test_install import SIGNER, registry, serve_manifest

KEY = "demo-plugin"
DETAIL = f"/api/v1/plugins/detail/{KEY}"
EMPTY_OBSERVED: dict[str, list[Any]] = {
    "network": [],
    "filesWritten": [],
    "processes": [],
    "sensitiveReads": [],
}


def capabilities_path(version: str) -> str:
    return f"/api/v1/plugins/capabilities/{KEY}/{version}"


def tool(name: str, description: str | None = "Does a thing", tag: str = "") -> dict[str, Any]:
    """A tool as the endpoint lists it; `tag` stands for a change in its schema."""
    text = json.dumps([name, description, tag])
    return {"name": name, "description": description, "fingerprint": _digest(text)}


def prompt(name: str, description: str | None = "A prompt", tag: str = "") -> dict[str, Any]:
    return tool(name, description, "prompt" + tag)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def capabilities(
    version: str = "1.0.0",
    *,
    status: str = "done",
    tools: list[dict[str, Any]] | None = None,
    prompts: list[dict[str, Any]] | None = None,
    declared: list[str] | None = None,
    observed: dict[str, list[Any]] | None = None,
    undeclared: list[str] | None = None,
) -> dict[str, Any]:
    """The `data` of GET /api/v1/plugins/capabilities/KEY/VERSION."""
    done = status == "done"
    return {
        "pluginKey": KEY,
        "version": version,
        "status": status,
        "server": {"name": "demo-server", "version": "0.3.0", "instructions": None}
        if done
        else None,
        "tools": tools or [],
        "prompts": prompts or [],
        "declared": declared or [],
        "observed": {**EMPTY_OBSERVED, **(observed or {})},
        "undeclared": undeclared or [],
    }


def serve_capabilities(fake: FakeApi, data: dict[str, Any]) -> None:
    fake.ok("GET", capabilities_path(data["version"]), data)


def serve_version(
    fake: FakeApi, version: str, *, permissions: list[str] | None = None, current: bool = True
) -> dict[str, Any]:
    """`demo-plugin` VERSION (config only, a stdio MCP server) for `install` (latest) and
    `update` (the version itself), and the catalogue and the update check saying it is
    current."""
    manifest = base_manifest(
        KEY, main="", type="mcp", version=version, mcp={"command": "demo-server"}
    )
    if permissions:
        manifest["permissions"] = permissions
    serve_manifest(fake, "config_only", manifest)
    latest = fake.routes[("GET", f"/api/v1/plugins/download/{KEY}/latest")]
    fake.routes[("GET", f"/api/v1/plugins/download/{KEY}/{version}")] = list(latest)
    if current:
        fake.ok("GET", DETAIL, {"pluginKey": KEY, "latestVersion": version})
        fake.offer_latest(KEY, version)
    return manifest


def serve_revocations(fake: FakeApi) -> None:
    """An empty signed revocation list, issued now (what `list` verifies first)."""
    issued = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    SIGNER.serve_keys(fake)
    fake.ok("GET", REVOCATIONS, SIGNER.sign({"issuedAt": issued, "items": []}))


def entry(root: Path) -> dict[str, Any]:
    """The registry's record of demo-plugin."""
    plugin: dict[str, Any] = registry(root)["plugins"][KEY]
    return plugin


def accepted(root: Path) -> dict[str, Any]:
    record: dict[str, Any] = entry(root)["accepted"]
    return record


def state(root: Path) -> tuple[bytes, bytes | None, list[str]]:
    """What an update that did not happen must leave as it was: the registry's and the
    secrets' bytes and the plugin's folders."""
    secrets = root / "secrets.json"
    return (
        (root / "registry.json").read_bytes(),
        secrets.read_bytes() if secrets.exists() else None,
        sorted(p.name for p in (root / KEY).iterdir()),
    )
