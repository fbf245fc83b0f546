from __future__ import annotations

import io
import json
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from marketplace.cli.mcp_client import McpError, StdioSession, probe_stdio

from .fake_api import FakeApi
from .helpers import Invoke, base_manifest, stdout_json
from .test_install import REPORT, package, registry, serve_manifest, serve_tarball

SERVER = Path(__file__).parent / "fixtures" / "mcp_server.py"


def probe(mode: str, cwd: Path, timeout: float = 10.0) -> Any:
    return probe_stdio(sys.executable, [str(SERVER), mode], {}, cwd, timeout=timeout)


def test_handshake_reports_server_and_tools_across_pages(tmp_path: Path) -> None:
    info = probe("ok", tmp_path)
    assert (info.name, info.version, info.protocol_version) == (
        "fixture-server",
        "1.2.3",
        "2025-06-18",
    )
    assert [tool.name for tool in info.tools] == ["echo", "whoami"]
    seen = json.loads(info.instructions or "{}")
    assert seen["capabilities"] == {}
    assert seen["clientInfo"]["name"] == "marketplace-cli"
    assert seen["cwd"] == str(tmp_path)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("bad-json", "not JSON: 'this is not json'"),
        ("exit", "exited (code 3) before answering; stderr: fixture: refusing to start"),
    ],
)
def test_broken_servers_are_reported(tmp_path: Path, mode: str, message: str) -> None:
    with pytest.raises(McpError) as caught:
        probe(mode, tmp_path)
    assert message in caught.value.message


def test_silent_server_times_out_and_is_stopped(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(McpError, match="before the timeout"):
        probe("silent", tmp_path, timeout=0.5)
    assert time.monotonic() - started < 5


def test_server_ignoring_end_of_input_is_terminated(tmp_path: Path) -> None:
    session = StdioSession.start(sys.executable, [str(SERVER), "stubborn"], {}, tmp_path, 0.2)
    with pytest.raises(McpError, match="before the timeout"):
        session.receive()
    session.stop()
    assert session.process.returncode is not None


def test_missing_command_is_a_spawn_error(tmp_path: Path) -> None:
    with pytest.raises(McpError, match="cannot start '/nonexistent/mcp-server'"):
        probe_stdio("/nonexistent/mcp-server", [], {}, tmp_path)


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
    assert connection["protocolVersion"] == "2025-06-18"
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
        ("bad-json", sys.executable, "not JSON"),
        ("exit", sys.executable, "exited (code 3)"),
        ("silent", sys.executable, "before the timeout"),
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
        mcp_timeout=1.0,
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
