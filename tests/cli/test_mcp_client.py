"""The autoConnect check: the official MCP SDK's client against a server built with the SDK
(the `mcp-sdk-echo` test plugin), and the ways a server can fail it."""

from __future__ import annotations

import io
import json
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from marketplace_client import mcp_client, mcp_sdk
from marketplace_client.mcp_client import McpError, probe_stdio

from .fake_api import FakeApi
from .helpers import Invoke, base_manifest, stdout_json
from .test_install import REPORT, package, registry, serve_manifest, serve_tarball

SERVER = Path(__file__).parents[1] / "fixtures" / "plugins" / "mcp_sdk_echo" / "server.py"


def probe(mode: str, cwd: Path, timeout: float = 10.0, env: dict[str, str] | None = None) -> Any:
    return probe_stdio(sys.executable, [str(SERVER), mode], env or {}, cwd, timeout=timeout)


def test_handshake_through_the_sdk_reports_server_and_tools(tmp_path: Path) -> None:
    info = probe("ok", tmp_path, env={"API_KEY": "k1"})
    assert (info.name, info.version) == ("fixture-server", "1.2.3")
    assert info.protocol_version  # whatever the SDKs negotiated
    assert [(tool.name, tool.description) for tool in info.tools] == [
        ("echo", "Echo the input"),
        ("whoami", None),
    ]
    seen = json.loads(info.instructions or "{}")
    assert (seen["cwd"], seen["apiKey"]) == (str(tmp_path), "k1")


def test_the_hand_written_protocol_code_is_gone() -> None:
    sources = [Path(module.__file__ or "").read_text() for module in (mcp_client, mcp_sdk)]
    assert "from mcp import" in sources[1]
    for hand_written in ("jsonrpc", "subprocess", "tools/list", "notifications/initialized"):
        assert all(hand_written not in source for source in sources)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("bad-json", "the server wrote a line that is not an MCP message"),
        ("exit", "the server exited before answering; stderr: fixture: refusing to start"),
    ],
)
def test_broken_servers_are_reported(tmp_path: Path, mode: str, message: str) -> None:
    with pytest.raises(McpError) as caught:
        probe(mode, tmp_path, timeout=30.0)  # generous: a loaded machine starts slowly
    assert caught.value.message == message
    assert caught.value.code == "MCP_CONNECT_FAILED"


def test_silent_server_times_out_within_the_bound_and_is_stopped(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(McpError) as caught:
        probe("silent", tmp_path, timeout=0.5)
    assert caught.value.message == "no answer from the server within 0.5s"
    assert time.monotonic() - started < 30  # the SDK's shutdown escalation is bounded too


def test_missing_command_is_a_spawn_error(tmp_path: Path) -> None:
    with pytest.raises(McpError) as caught:
        probe_stdio("/nonexistent/mcp-server", [], {}, tmp_path)
    assert caught.value.message == (
        "cannot start '/nonexistent/mcp-server': No such file or directory"
    )


def test_missing_working_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(McpError) as caught:
        probe("ok", tmp_path / "gone")
    assert caught.value.message == f"the server's folder {tmp_path / 'gone'} does not exist"


def connect_manifest(mode: str, **extra: Any) -> dict[str, Any]:
    mcp = {
        "command": sys.executable,
        "args": [str(SERVER), mode, "${REGION}"],
        "env": {"API_KEY": "${API_KEY}"},
    }
    config = [
        {"key": "API_KEY", "required": True, "secret": True},
        {"key": "REGION", "default": "eu"},
    ]
    return base_manifest(main="", type="mcp", mcp=mcp, autoConnect=True, config=config, **extra)


def test_auto_connect_starts_the_server_with_config_and_lists_tools(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_manifest(fake, "config_only", connect_manifest("ok"))
    root = tmp_path / "plugins"
    result = invoke(["install", "demo-plugin", "--dir", str(root), "--config", "API_KEY=k1"])
    assert result.exit_code == 0, result.output
    assert "Connected to fixture-server 1.2.3: 2 tools (echo, whoami)" in result.stdout
    as_json = invoke(
        ["install", "demo-plugin", "--dir", str(root), "--config", "API_KEY=k1", "--json"]
    )
    connection = stdout_json(as_json)["data"]["connection"]
    assert connection["ok"] is True
    assert connection["serverName"] == "fixture-server"
    seen = json.loads(connection["instructions"])
    assert seen["apiKey"] == "k1"
    assert seen["args"] == ["eu"]
    assert seen["cwd"] == str(root / "demo-plugin" / "1.0.0")


def test_auto_connect_runs_a_server_shipped_in_the_package(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    manifest = base_manifest(
        type="mcp", mcp={"command": sys.executable, "args": ["server.py", "ok"]}, autoConnect=True
    )
    content = package(manifest)
    # Add the fixture server to the package next to manifest.json.
    buffer = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(content), mode="r:gz") as source,
        tarfile.open(fileobj=buffer, mode="w:gz") as target,
    ):
        for member in source.getmembers():
            target.addfile(member, source.extractfile(member))
        data = SERVER.read_bytes()
        info = tarfile.TarInfo("server.py")
        info.size = len(data)
        target.addfile(info, io.BytesIO(data))
    serve_tarball(fake, buffer.getvalue())
    result = invoke(["install", "demo-plugin", "--dir", str(tmp_path / "plugins")])
    assert result.exit_code == 0, result.output
    assert "Connected to fixture-server" in result.stdout


@pytest.mark.parametrize(
    ("mode", "command", "expected"),
    [
        ("bad-json", sys.executable, "not an MCP message"),
        ("exit", sys.executable, "exited before answering"),
        ("silent", sys.executable, "no answer from the server within 1s"),
        ("ok", "/nonexistent/mcp-server", "cannot start"),
    ],
)
def test_failed_auto_connect_is_reported_and_keeps_the_registration(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, mode: str, command: str, expected: str
) -> None:
    manifest = connect_manifest(mode)
    manifest["mcp"]["command"] = command
    serve_manifest(fake, "config_only", manifest)
    root = tmp_path / "plugins"
    result = invoke(
        ["install", "demo-plugin", "--dir", str(root), "--config", "API_KEY=k1", "--json"],
        # Only the silent server needs a short bound; the others must fail for their own
        # reason even on a loaded machine where Python starts slowly.
        mcp_timeout=1.0 if mode == "silent" else 30.0,
    )
    assert result.exit_code == 1
    assert "MCP_CONNECT_FAILED" in result.stderr
    assert expected in result.stderr
    assert "stays installed and registered" in result.stderr
    document = stdout_json(result)
    assert document["success"] is False
    assert document["error"]["code"] == "MCP_CONNECT_FAILED"
    assert document["data"]["connection"]["ok"] is False
    assert "demo-plugin" in registry(root)["mcpServers"]
    assert (root / "demo-plugin" / "1.0.0" / "manifest.json").is_file()
    assert ("POST", REPORT) in fake.calls()


def test_auto_connect_for_a_remote_server_is_noted_not_attempted(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    mcp = {"transport": "streamable-http", "url": "https://m.test/mcp"}
    serve_manifest(fake, "config_only", base_manifest(main="", mcp=mcp, autoConnect=True))
    result = invoke(["install", "demo-plugin", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    notes = stdout_json(result)["data"]["notes"]
    assert notes == ["autoConnect skipped: only stdio servers are started (streamable-http)"]
