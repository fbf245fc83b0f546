"""`marketplace audit`: the CLI against the real service, through the app in the test."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.factories import Account, Factory
from tests.helpers import ok
from tests.takedown.bridge import run_cli
from tests.takedown.helpers import REVOCATIONS, Released, admin_takedown, released_plugin


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep the CLI away from the real user's config, token and plugins."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MARKETPLACE_CONFIG_DIR", str(tmp_path / "config"))
    for name in ("MARKETPLACE_BACKEND", "MARKETPLACE_TOKEN", "MARKETPLACE_PLUGINS_DIR"):
        monkeypatch.delenv(name, raising=False)


def registry(root: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((root / "registry.json").read_text())
    return document


async def _installed(
    client: httpx.AsyncClient, factory: Factory, root: Path, version: str
) -> tuple[Released, Account]:
    """A plugin released as 1.0.0 then 1.1.0, with `version` installed by a user."""
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    user = await factory.user()
    args = ["install", r.key, "--version", version, "--dir", str(root), "--token", user.token]
    result, _ = await run_cli(client, args)
    assert result.exit_code == 0, result.output
    assert registry(root)["plugins"][r.key]["version"] == version
    return r, user


async def test_clean_install_exits_0(
    client: httpx.AsyncClient, factory: Factory, tmp_path: Path
) -> None:
    root = tmp_path / "plugins"
    r, _ = await _installed(client, factory, root, "1.1.0")
    ok(await admin_takedown(client, r.admin, r.ids["1.0.0"]))  # revoked, but not installed
    result, bridge = await run_cli(client, ["audit", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        f"No revoked versions installed (1 plugin in {root} checked against 1 revocation, "
        "list issued "
    )
    assert bridge.paths == [("GET", REVOCATIONS), ("GET", "/api/v1/keys")]


async def test_installed_revoked_version_is_listed_and_exits_1(
    client: httpx.AsyncClient, factory: Factory, tmp_path: Path
) -> None:
    root = tmp_path / "plugins"
    r, _ = await _installed(client, factory, root, "1.1.0")
    ok(await admin_takedown(client, r.admin, r.ids["1.1.0"], "steals tokens"))
    before = registry(root)
    result, _ = await run_cli(client, ["audit", "--dir", str(root)])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"REVOKED {r.key} 1.1.0: steals tokens (revoked 20")
    assert lines[1] == (
        "1 installed version is revoked; run `marketplace audit --fix` to update or remove them."
    )
    assert registry(root) == before
    assert (root / r.key / "1.1.0").is_dir()


async def test_fix_moves_a_revoked_install_to_the_current_version(
    client: httpx.AsyncClient, factory: Factory, tmp_path: Path
) -> None:
    root = tmp_path / "plugins"
    r, user = await _installed(client, factory, root, "1.1.0")
    ok(await admin_takedown(client, r.admin, r.ids["1.1.0"], "steals tokens"))
    args = ["audit", "--dir", str(root), "--fix", "--token", user.token]
    result, bridge = await run_cli(client, args)
    assert result.exit_code == 0, result.output
    assert "  fixed: updated to 1.0.0" in result.stdout.splitlines()
    assert result.stdout.splitlines()[-1] == "Fixed 1 of 1 revoked install."
    entry = registry(root)["plugins"][r.key]
    assert entry["version"] == "1.0.0"
    assert entry["path"] == str(root / r.key / "1.0.0")
    assert sorted(p.name for p in (root / r.key).iterdir()) == ["1.0.0"]
    assert ("POST", f"/api/v1/plugins/install/{r.key}") in bridge.paths
    again, _ = await run_cli(client, ["audit", "--dir", str(root)])
    assert again.exit_code == 0, again.output


async def test_fix_removes_a_revoked_install_with_no_version_left(
    client: httpx.AsyncClient, factory: Factory, tmp_path: Path
) -> None:
    root = tmp_path / "plugins"
    r, user = await _installed(client, factory, root, "1.1.0")
    ok(await admin_takedown(client, r.admin, r.ids["1.1.0"]))
    ok(await admin_takedown(client, r.admin, r.ids["1.0.0"]))
    args = ["audit", "--dir", str(root), "--fix", "--token", user.token, "--json"]
    result, _ = await run_cli(client, args)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["success"] is True
    [finding] = document["data"]["revoked"]
    assert (finding["key"], finding["version"], finding["fix"]["action"]) == (
        r.key,
        "1.1.0",
        "removed",
    )
    assert document["data"]["remaining"] == 0
    assert r.key not in registry(root)["plugins"]
    assert r.key not in registry(root)["mcpServers"]
    assert not (root / r.key).exists()


def _tampered_payload(request: httpx.Request, response: httpx.Response) -> httpx.Response:
    if request.url.path != REVOCATIONS:
        return response
    body = response.json()
    document = json.loads(base64.b64decode(body["data"]["payload"]))
    document["items"] = []  # hide the revocation
    body["data"]["payload"] = base64.b64encode(json.dumps(document).encode()).decode()
    return httpx.Response(200, json=body)


def _unknown_key(request: httpx.Request, response: httpx.Response) -> httpx.Response:
    if request.url.path != REVOCATIONS:
        return response
    body = response.json()
    body["data"]["keyId"] = "0123456789abcdef"
    return httpx.Response(200, json=body)


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_tampered_payload, "the signature of the revocation list does not verify with key"),
        (_unknown_key, "the revocation list is signed by key 0123456789abcdef, which"),
    ],
)
async def test_a_refused_signature_exits_2_and_changes_nothing(
    client: httpx.AsyncClient,
    factory: Factory,
    tmp_path: Path,
    tamper: Any,
    message: str,
) -> None:
    root = tmp_path / "plugins"
    r, user = await _installed(client, factory, root, "1.1.0")
    ok(await admin_takedown(client, r.admin, r.ids["1.1.0"]))
    before = registry(root)
    args = ["audit", "--dir", str(root), "--fix", "--token", user.token]
    result, bridge = await run_cli(client, args, tamper=tamper)
    assert result.exit_code == 2, result.output
    assert "error: REVOCATIONS_SIGNATURE_INVALID: " in result.stderr
    assert message in result.stderr
    assert "nothing was changed" in result.stderr
    assert result.stdout == ""
    assert registry(root) == before
    assert (root / r.key / "1.1.0").is_dir()
    assert [method for method, _ in bridge.paths] == ["GET", "GET"]


async def test_an_unreachable_service_exits_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from marketplace_client.context import Runtime
    from marketplace_client.main import app as cli_app

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    runtime = Runtime(transport=httpx.MockTransport(refuse))
    args = ["audit", "--dir", str(tmp_path), "--backend", "http://down.test"]
    result = CliRunner().invoke(cli_app, args, obj=runtime)
    assert result.exit_code == 2
    assert "error: NETWORK_ERROR: cannot reach http://down.test" in result.stderr


def test_an_old_list_is_warned_about() -> None:
    from datetime import UTC, datetime

    from marketplace_client.audit import warn_if_stale
    from marketplace_client.output import Output

    warnings: list[str] = []

    class Recording(Output):
        def warn(self, message: str) -> None:
            warnings.append(message)

    now = datetime(2026, 11, 24, 12, tzinfo=UTC)
    warn_if_stale(Recording(), "2026-11-24T09:00:00Z", now)
    assert warnings == []
    warn_if_stale(Recording(), "2026-11-23T11:00:00Z", now)
    assert warnings == [
        "the revocation list was issued at 2026-11-23T11:00:00Z, more than a day ago: "
        "it may be an old copy (check the service and your clock)"
    ]
