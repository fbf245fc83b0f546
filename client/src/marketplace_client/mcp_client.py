"""Connect to a stdio MCP server once through the official MCP Python SDK: start it,
initialize, list its tools (every page), stop it.

The protocol (framing, handshake, version negotiation, shutdown escalation) is the SDK's to
follow; this module only bounds the whole exchange by one timeout and turns every way it
can fail (spawn error, early exit, a line that is not an MCP message, an error answer, the
timeout) into one McpError with the tail of the server's stderr.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marketplace_client.errors import CliError


class McpError(CliError):
    def __init__(self, message: str) -> None:
        super().__init__("MCP_CONNECT_FAILED", message)


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str | None


@dataclass(frozen=True)
class McpServerInfo:
    name: str
    version: str | None
    protocol_version: str | None
    instructions: str | None
    tools: tuple[McpTool, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "serverName": self.name,
            "serverVersion": self.version,
            "protocolVersion": self.protocol_version,
            "instructions": self.instructions,
            "tools": [{"name": t.name, "description": t.description} for t in self.tools],
        }


def probe_stdio(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    timeout: float = 10.0,
) -> McpServerInfo:
    """Start the server, complete the handshake, list its tools, stop it, all within
    `timeout` seconds (the SDK's own shutdown escalation comes on top, and is bounded)."""
    if not cwd.is_dir():
        raise McpError(f"the server's folder {cwd} does not exist")
    # Imported here: the SDK pulls in starlette and more, which the CLI must not load
    # to start (tests/cli/test_startup.py); only an autoConnect install needs it.
    from marketplace_client.mcp_sdk import probe

    return probe(command, args, env, cwd, timeout)
