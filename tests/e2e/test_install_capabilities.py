"""CONTRACT 13's install client against a live server, inspection included: `install`
shows the tools the sandbox listed and records them as accepted; `update` to a version
with a new tool, a changed one and a new permission refuses without a terminal (exit 4,
nothing changed) and goes through with --yes; `list` then has nothing to mark.

Needs the service's side of CONTRACT 13 (the inspection worker of `marketplace serve` and
`GET /api/v1/plugins/capabilities/KEY/VERSION`): run it with
`pytest -p no:xdist tests/e2e/test_install_capabilities.py`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.market import Market, write_plugin
from tests.helpers import ok

pytestmark = pytest.mark.e2e

CONSENT_EXIT = 4
# CONTRACT 13: without load an inspection ends within 60 s of the upload.
INSPECTION_WAIT = 120.0

# A stdio MCP server in the standard library only (the sandbox's python3 has no SDK): it
# lists the tools of tools.json beside it; with `connect` it first tries a TEST-NET address.
SERVER = """\
import json
import socket
import sys

TOOLS = json.load(open("tools.json", encoding="utf-8"))
if "connect" in sys.argv[1:]:
    try:
        socket.create_connection(("203.0.113.7", 443), timeout=1).close()
    except OSError:
        pass


def send(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    method, ident = request.get("method"), request.get("id")
    if ident is None:
        continue
    if method == "initialize":
        result = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
            "serverInfo": {"name": "e2e-capabilities", "version": "0.1.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method in ("prompts/list", "resources/list"):
        result = {method.split("/")[0]: []}
    elif method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": method}})
        continue
    send({"jsonrpc": "2.0", "id": ident, "result": result})
"""
TEXT_INPUT = {"type": "object", "properties": {"text": {"type": "string"}}}
ECHO = {"name": "echo", "description": "Echo the input", "inputSchema": TEXT_INPUT}
ECHO_CHANGED = {**ECHO, "description": "Echo the input, and keep a copy"}
SHOUT = {"name": "shout", "description": "Echo in capitals\nLoudly.", "inputSchema": TEXT_INPUT}


def publish(
    market: Market,
    parent: Path,
    key: str,
    version: str,
    tools: list[dict[str, Any]],
    *,
    args: tuple[str, ...] = (),
    permissions: list[str] | None = None,
) -> None:
    manifest: dict[str, Any] = {
        "version": version,
        "type": "mcp",
        "main": "server.py",
        "mcp": {"command": "python3", "args": ["server.py", *args]},
    }
    if permissions:
        manifest["permissions"] = permissions
    folder = write_plugin(
        parent,
        key,
        folder=f"{key}-{version}",
        files={"server.py": SERVER, "tools.json": json.dumps(tools)},
        **manifest,
    )
    result = market.as_admin("publish", str(folder))
    assert result.returncode == 0, result.stderr


def inspected(market: Market, key: str, version: str) -> dict[str, Any]:
    """The version's public capabilities once its inspection has ended."""
    deadline = time.monotonic() + INSPECTION_WAIT
    while True:
        response = httpx.get(f"{market.url}/api/v1/plugins/capabilities/{key}/{version}")
        data: dict[str, Any] = ok(response)
        if data["status"] not in ("queued", "running"):
            break
        assert time.monotonic() < deadline, f"{key} {version} still {data['status']}"
        time.sleep(1.0)
    error = market.version(key, version)["inspection"]["error"]
    assert data["status"] == "done", f"inspection {data['status']}: {error}"
    return data


def run(market: Market, token: str, target: Path, *args: str) -> Any:
    # stdin is a pipe: no terminal to ask on.
    return market.cli(*args, "--dir", str(target), token=token, stdin="")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def test_install_shows_and_records_tools_and_update_asks_before_new_ones(
    market: Market, tmp_path: Path
) -> None:
    key, src = "caps-consent", tmp_path / "src"
    publish(market, src, key, "1.0.0", [ECHO])
    first = inspected(market, key, "1.0.0")
    token, target = market.new_user("caps-consent-user"), tmp_path / "plugins"

    installed = run(market, token, target, "install", key)

    assert installed.returncode == 0, installed.stderr
    lines = installed.stdout.splitlines()
    assert f"Inspection of {key} 1.0.0: done (server e2e-capabilities 0.1.0)" in lines
    assert lines[lines.index("Tools: 1") + 1] == "  echo  Echo the input"
    [echo] = first["tools"]
    registry_file = target / "registry.json"
    accepted = read_json(registry_file)["plugins"][key]["accepted"]
    assert (accepted["status"], accepted["tools"], accepted["permissions"]) == (
        "done",
        {"echo": echo["fingerprint"]},
        [],
    )

    publish(market, src, key, "1.1.0", [ECHO_CHANGED, SHOUT], permissions=["fs.write"])
    inspected(market, key, "1.1.0")
    before = registry_file.read_bytes()

    refused = run(market, token, target, "update", key)

    assert refused.returncode == CONSENT_EXIT, refused.stderr
    assert refused.stderr.strip().startswith(
        f"error: {key}: CONSENT_REQUIRED: {key} 1.1.0 adds tool shout; changes tool echo; "
        "asks for permission fs.write, beyond what you accepted"
    )
    assert refused.stderr.strip().endswith(f"({key} 1.0.0 stays installed)")
    assert registry_file.read_bytes() == before
    assert sorted(p.name for p in (target / key).iterdir()) == ["1.0.0"]

    agreed = run(market, token, target, "update", key, "--yes", "--json")

    assert agreed.returncode == 0, agreed.stderr
    [item] = json.loads(agreed.stdout)["data"]["items"]
    assert item["updated"] is True
    changed = item["changes"]["toolsChanged"]
    assert changed == [
        {"name": "echo", "before": "Echo the input", "after": ECHO_CHANGED["description"]}
    ]
    record = read_json(registry_file)["plugins"][key]
    assert record["version"] == "1.1.0"
    assert sorted(record["accepted"]["tools"]) == ["echo", "shout"]
    assert record["accepted"]["permissions"] == ["fs.write"]

    listed = market.cli("list", "--dir", str(target), "--backend", market.url, "--json")
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)["data"]["items"]
    assert (entry["status"], entry["inspection"], entry["beyondAccepted"]) == (
        "up to date",
        "done",
        None,
    )


def test_install_shows_what_the_sandbox_saw(market: Market, tmp_path: Path) -> None:
    key, src = "caps-observed", tmp_path / "src"
    publish(market, src, key, "1.0.0", [ECHO], args=("connect",), permissions=["network:*"])
    inspected(market, key, "1.0.0")
    token, target = market.new_user("caps-observed-user"), tmp_path / "plugins"

    result = run(market, token, target, "install", key)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "Permissions declared: network:*" in lines
    observed = lines[lines.index("Observed when run in the sandbox:") + 1]
    assert observed.startswith("  network: ")
    assert "203.0.113.7:443" in observed


def test_a_version_without_a_stdio_server_says_there_is_nothing_to_inspect(
    market: Market, tmp_path: Path
) -> None:
    key = "caps-config-only"
    remote = {"transport": "sse", "url": "https://caps.example/sse"}
    folder = write_plugin(
        tmp_path / "src", key, main="", type="mcp", mcp=remote, permissions=["fs.write"]
    )
    assert market.as_admin("publish", str(folder)).returncode == 0
    token, target = market.new_user("caps-config-only-user"), tmp_path / "plugins"

    result = run(market, token, target, "install", key, "--json")

    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)["data"]["capabilities"]
    assert (shown["status"], shown["declared"], shown["tools"]) == (
        "not_applicable",
        ["fs.write"],
        [],
    )
