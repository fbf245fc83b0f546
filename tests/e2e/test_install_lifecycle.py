"""The install lifecycle against a live server (issue 13): install again and `update` keep the
saved configuration and remove the earlier version's folder; `list` shows updates and
revocations; `uninstall` removes files, registry entry and secrets; `export` writes a host
configuration that starts the server from anywhere; failed installs leave nothing; installed
files carry real times; inline installs keep no icon path to a missing file; autoConnect
speaks MCP through the SDK to the `mcp-sdk-echo` test plugin (tests/fixtures/plugins).
"""

from __future__ import annotations

import json
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from marketplace_client.mcp_client import probe_stdio
from tests.e2e.market import SVG_ICON, Market, write_plugin
from tests.e2e.test_install import user_group_routes_exist
from tests.helpers import ok

SDK_PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "plugins" / "mcp_sdk_echo"
SECRET = "sk-life-0123456789"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not user_group_routes_exist(), reason="needs the user group endpoints"),
]


def sdk_plugin(parent: Path, key: str, version: str = "1.0.0", **changes: Any) -> Path:
    """A copy of the `mcp-sdk-echo` test plugin as `key` at `version`, started with this
    interpreter (which has the SDK)."""
    folder = parent / f"{key}-{version}"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(SDK_PLUGIN, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(id=key, version=version, **changes)
    manifest["mcp"]["command"] = sys.executable
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return folder


def publish(market: Market, folder: Path, *extra: str) -> None:
    result = market.as_admin("publish", str(folder), *extra)
    assert result.returncode == 0, result.stderr


def run(market: Market, token: str, target: Path, *args: str) -> Any:
    return market.cli(*args, "--dir", str(target), token=token)


def listing(market: Market, target: Path, *extra: str) -> Any:
    """`list` reads only public endpoints: no token."""
    return market.cli("list", "--dir", str(target), "--backend", market.url, *extra)


def offline(market: Market, target: Path, *args: str) -> Any:
    """A command that needs no service (uninstall, export, list --offline)."""
    return market.cli(*args, "--dir", str(target))


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def installed_on_server(market: Market, token: str) -> dict[str, str]:
    response = httpx.get(
        f"{market.url}/api/v1/plugins/installed", headers={"Authorization": f"Bearer {token}"}
    )
    return {i["plugin"]["pluginKey"]: i["version"] for i in ok(response)["items"]}


def test_update_keeps_the_configuration_and_replaces_the_old_folder(
    market: Market, tmp_path: Path
) -> None:
    key, src = "life-update", tmp_path / "src"
    publish(market, sdk_plugin(src, key, autoConnect=False))
    token, target = market.new_user("life-update-user"), tmp_path / "plugins"
    first = run(market, token, target, "install", key, "--config", f"API_KEY={SECRET}")
    assert first.returncode == 0, first.stderr
    assert read_json(target / "secrets.json") == {
        "version": 1,
        "plugins": {key: {"API_KEY": SECRET}},
    }
    assert mode(target / "secrets.json") == 0o600
    assert SECRET not in (target / "registry.json").read_text()

    publish(market, sdk_plugin(src, key, "1.1.0", autoConnect=False))
    listed = listing(market, target)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "PLUGIN       VERSION  STATUS",
        "life-update  1.0.0    update available: 1.1.0",
    ]

    updated = run(market, token, target, "update", key)

    assert updated.returncode == 0, updated.stderr
    assert f"Updated {key} 1.0.0 -> 1.1.0." in updated.stdout
    assert "Note: removed the earlier version folder 1.0.0" in updated.stdout
    assert sorted(p.name for p in (target / key).iterdir()) == ["1.1.0"]
    registry = read_json(target / "registry.json")
    assert registry["plugins"][key]["version"] == "1.1.0"
    assert registry["plugins"][key]["config"] == {"REGION": "eu-west"}
    assert registry["plugins"][key]["secretKeys"] == ["API_KEY"]
    assert registry["mcpServers"][key]["env"] == {"API_KEY": "${API_KEY}", "REGION": "eu-west"}
    assert read_json(target / "secrets.json")["plugins"] == {key: {"API_KEY": SECRET}}
    assert installed_on_server(market, token) == {key: "1.1.0"}

    again = run(market, token, target, "update", "--all")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"{key} is up to date (1.1.0)."
    listed = listing(market, target, "--json")
    [item] = json.loads(listed.stdout)["data"]["items"]
    assert (item["version"], item["status"], item["updateAvailable"]) == (
        "1.1.0",
        "up to date",
        False,
    )


def test_install_again_keeps_the_configuration_and_leaves_no_stale_folder(
    market: Market, tmp_path: Path
) -> None:
    key, src = "life-reinstall", tmp_path / "src"
    publish(market, sdk_plugin(src, key, autoConnect=False))
    token, target = market.new_user("life-reinstall-user"), tmp_path / "plugins"
    args = ("install", key, "--config", f"API_KEY={SECRET}", "--config", "REGION=ap-south")
    assert run(market, token, target, *args).returncode == 0
    publish(market, sdk_plugin(src, key, "2.0.0", autoConnect=False))

    # No --config: the saved values answer the required item (no CONFIG_MISSING).
    result = run(market, token, target, "install", key)

    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (target / key).iterdir()) == ["2.0.0"]
    registry = read_json(target / "registry.json")
    assert registry["plugins"][key]["config"] == {"REGION": "ap-south"}
    assert registry["mcpServers"][key]["args"] == ["server.py", "ok", "--region=ap-south"]
    assert read_json(target / "secrets.json")["plugins"] == {key: {"API_KEY": SECRET}}
    assert installed_on_server(market, token) == {key: "2.0.0"}


def test_uninstall_removes_files_registry_entry_and_secrets(market: Market, tmp_path: Path) -> None:
    src, target = tmp_path / "src", tmp_path / "plugins"
    publish(market, sdk_plugin(src, "life-gone", autoConnect=False))
    publish(market, sdk_plugin(src, "life-kept", autoConnect=False))
    token = market.new_user("life-uninstall-user")
    for key in ("life-gone", "life-kept"):
        result = run(market, token, target, "install", key, "--config", f"API_KEY={key}-secret")
        assert result.returncode == 0, result.stderr

    result = offline(market, target, "uninstall", "life-gone")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"Uninstalled life-gone 1.0.0: removed {target / 'life-gone'}, its registry entry "
        "and its saved configuration."
    )
    assert not (target / "life-gone").exists()
    assert (target / "life-kept" / "1.0.0" / "server.py").is_file()
    registry = read_json(target / "registry.json")
    assert sorted(registry["plugins"]) == sorted(registry["mcpServers"]) == ["life-kept"]
    assert read_json(target / "secrets.json")["plugins"] == {
        "life-kept": {"API_KEY": "life-kept-secret"}
    }
    # The service keeps the user's install record: there is no uninstall report.
    assert installed_on_server(market, token) == {"life-gone": "1.0.0", "life-kept": "1.0.0"}

    again = offline(market, target, "uninstall", "life-gone")
    assert again.returncode == 1
    assert again.stderr.startswith(f"error: NOT_INSTALLED: life-gone is not installed in {target};")

    assert offline(market, target, "uninstall", "life-kept").returncode == 0
    assert not (target / "secrets.json").exists()  # no secret left, no file
    assert read_json(target / "registry.json")["plugins"] == {}


def test_list_shows_a_revoked_install(market: Market, tmp_path: Path) -> None:
    key, src = "life-revoked", tmp_path / "src"
    publish(market, sdk_plugin(src, key, autoConnect=False))
    token, target = market.new_user("life-revoked-user"), tmp_path / "plugins"
    assert run(market, token, target, "install", key, "--config", "API_KEY=x1234").returncode == 0
    version_id = market.version(key, "1.0.0")["id"]
    market.request(
        "POST",
        f"/api/v1/admin/plugins/versions/{version_id}/takedown",
        json={"reason": "leaks data"},
    )

    listed = listing(market, target)

    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1] == "life-revoked  1.0.0    REVOKED: leaks data"
    as_json = json.loads(listing(market, target, "--json").stdout)
    [item] = as_json["data"]["items"]
    assert (item["revoked"], item["revokedReason"], item["latestVersion"]) == (
        True,
        "leaks data",
        None,
    )
    local = offline(market, target, "list", "--offline")
    assert local.stdout.splitlines()[1] == "life-revoked  1.0.0    not checked (--offline)"


def test_export_writes_host_configurations_that_start_the_server_from_anywhere(
    market: Market, tmp_path: Path
) -> None:
    key, src = "life-export", tmp_path / "src"
    publish(market, sdk_plugin(src, key, autoConnect=False))
    remote = write_plugin(
        src, "life-remote", main="", type="mcp", mcp={"transport": "sse", "url": "https://r.test/s"}
    )
    publish(market, remote)
    token, target = market.new_user("life-export-user"), tmp_path / "plugins"
    assert (
        run(market, token, target, "install", key, "--config", f"API_KEY={SECRET}").returncode == 0
    )
    assert run(market, token, target, "install", "life-remote").returncode == 0
    path = target / key / "1.0.0"

    printed = offline(market, target, "export", "--format", "claude-desktop")

    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout) == {
        "mcpServers": {
            key: {
                "command": sys.executable,
                "args": [str(path / "server.py"), "ok", "--region=eu-west"],
                "env": {"API_KEY": SECRET, "REGION": "eu-west"},
            }
        }
    }
    assert printed.stderr.strip() == (
        "warning: life-remote left out: Claude Desktop's configuration starts stdio servers "
        "only (life-remote is sse at https://r.test/s)"
    )
    # The exported entry starts the real server from another folder: the paths are absolute.
    server = json.loads(printed.stdout)["mcpServers"][key]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    info = probe_stdio(server["command"], server["args"], server["env"], elsewhere, timeout=20)
    assert [tool.name for tool in info.tools] == ["echo", "whoami"]
    assert json.loads(info.instructions or "{}")["apiKey"] == SECRET

    host_file = tmp_path / "host" / "mcp.json"
    host_file.parent.mkdir()
    host_file.write_text(json.dumps({"theme": "dark", "mcpServers": {"mine": {"command": "x"}}}))
    written = offline(
        market, target, "export", "--format", "mcp-servers", "--output", str(host_file)
    )

    assert written.returncode == 0, written.stderr
    assert written.stdout.strip() == f"Wrote 2 MCP servers (mcp-servers) to {host_file}."
    assert mode(host_file) == 0o600
    document = read_json(host_file)
    assert document["theme"] == "dark"
    assert sorted(document["mcpServers"]) == ["life-export", "life-remote", "mine"]
    assert document["mcpServers"]["life-remote"] == {"type": "sse", "url": "https://r.test/s"}
    assert document["mcpServers"][key]["cwd"] == str(path)
    assert document["mcpServers"][key]["type"] == "stdio"

    bad = offline(market, target, "export", "--format", "vscode")
    assert bad.returncode == 2
    assert "Invalid value for '--format'" in bad.stderr


def test_failed_installs_leave_nothing_behind(market: Market, tmp_path: Path) -> None:
    key, src = "life-failed", tmp_path / "src"
    publish(market, sdk_plugin(src, key, autoConnect=False))
    token = market.new_user("life-failed-user")
    target = tmp_path / "new" / "plugins"

    missing = run(market, token, target, "install", key)

    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        "error: CONFIG_MISSING: missing required configuration: API_KEY (pass --config KEY=VALUE)"
    )
    assert not (tmp_path / "new").exists()  # not even the install folder it would create
    assert installed_on_server(market, token) == {}

    assert run(market, token, target, "install", key, "--config", "API_KEY=k1234").returncode == 0
    registry_before = (target / "registry.json").read_text()
    secrets_before = (target / "secrets.json").read_text()
    # 1.1.0 asks for a new required item: the update fails and 1.0.0 stays as it was.
    config = [*json.loads((SDK_PLUGIN / "manifest.json").read_text())["config"]]
    config.append({"key": "TENANT", "required": True})
    publish(market, sdk_plugin(src, key, "1.1.0", autoConnect=False, config=config))

    failed = run(market, token, target, "update", key)

    assert failed.returncode == 1
    assert failed.stderr.strip().endswith(
        f"error: {key}: CONFIG_MISSING: missing required configuration: TENANT "
        f"(pass --config KEY=VALUE) ({key} 1.0.0 stays installed)"
    )
    assert sorted(p.name for p in (target / key).iterdir()) == ["1.0.0"]
    assert (target / "registry.json").read_text() == registry_before
    assert (target / "secrets.json").read_text() == secrets_before
    assert installed_on_server(market, token) == {key: "1.0.0"}


def test_installed_files_carry_the_approval_time_not_1970(market: Market, tmp_path: Path) -> None:
    folder = write_plugin(
        tmp_path / "src", "life-dated", files={"index.js": "x\n", "lib/a.js": "a\n"}
    )
    before = time.time()
    publish(market, folder)
    after = time.time()
    token, target = market.new_user("life-dated-user"), tmp_path / "plugins"

    assert run(market, token, target, "install", "life-dated").returncode == 0

    path = target / "life-dated" / "1.0.0"
    for file in (path / "index.js", path / "lib" / "a.js", path / "manifest.json", path / "lib"):
        assert before - 2 <= file.stat().st_mtime <= after + 2, file


def test_inline_install_drops_an_icon_path_it_has_no_file_for(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(
        tmp_path / "src",
        "life-icon",
        icon="icon.svg",
        files={"index.js": "export const a = 1;\n", "icon.svg": SVG_ICON},
    )
    publish(market, folder, "--direct")
    token, target = market.new_user("life-icon-user"), tmp_path / "plugins"

    result = run(market, token, target, "install", "life-icon")

    assert result.returncode == 0, result.stderr
    assert "(inline)" in result.stdout
    assert (
        "Note: icon 'icon.svg' is not part of this install: removed from its manifest.json"
        in result.stdout
    )
    manifest = read_json(target / "life-icon" / "1.0.0" / "manifest.json")
    assert "icon" not in manifest
    assert manifest["id"] == "life-icon"


def test_auto_connect_speaks_mcp_to_the_sdk_test_plugin(market: Market, tmp_path: Path) -> None:
    key = "life-sdk-echo"
    publish(market, sdk_plugin(tmp_path / "src", key))
    token, target = market.new_user("life-sdk-user"), tmp_path / "plugins"

    result = run(market, token, target, "install", key, "--config", f"API_KEY={SECRET}")

    assert result.returncode == 0, result.stderr
    assert "Connected to fixture-server 1.2.3: 2 tools (echo, whoami)" in result.stdout
    assert SECRET not in result.stdout + result.stderr
    failing = sdk_plugin(tmp_path / "src", "life-sdk-exit", mcp={
        "command": sys.executable, "args": ["server.py", "exit"]
    })  # fmt: skip
    publish(market, failing)
    broken = run(market, token, target, "install", "life-sdk-exit", "--config", "API_KEY=k1234")
    assert broken.returncode == 1
    assert broken.stderr.strip().splitlines()[-1] == (
        "error: MCP_CONNECT_FAILED: the server exited before answering; stderr: fixture: "
        "refusing to start (the plugin stays installed and registered)"
    )
    assert (target / "life-sdk-exit" / "1.0.0" / "server.py").is_file()
    assert installed_on_server(market, token) == {key: "1.0.0", "life-sdk-exit": "1.0.0"}
