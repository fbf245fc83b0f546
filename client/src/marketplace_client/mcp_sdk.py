"""The MCP Python SDK side of `mcp_client.probe_stdio` (loaded only when a server is
probed): one exchange under one deadline, and every way it fails as one McpError."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp import types as mcp_types

from marketplace_client.api import CLI_VERSION
from marketplace_client.mcp_client import McpError, McpServerInfo, McpTool

CLIENT_INFO = mcp_types.Implementation(name="marketplace-cli", version=CLI_VERSION)
STDERR_TAIL_LINES = 5
MAX_TOOL_PAGES = 20

# The SDK logs unparsable server lines with a traceback; they are reported in McpError.
logging.getLogger("mcp").addHandler(logging.NullHandler())
logging.getLogger("mcp").propagate = False


@dataclass
class _Exchange:
    """What the SDK passed on besides answers: unparsable lines arrive as exceptions."""

    bad_lines: list[str] = field(default_factory=list)

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.bad_lines.append(type(message).__name__)


async def _tools(session: ClientSession) -> tuple[McpTool, ...]:
    tools: list[McpTool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools += [McpTool(tool.name, tool.description or None) for tool in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools)


async def _probe(
    params: StdioServerParameters, errlog: TextIO, seen: _Exchange, seconds: float
) -> McpServerInfo:
    # One deadline for start, handshake and every tools page (anyio.run takes no timeout).
    with anyio.fail_after(seconds):
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(
                read, write, client_info=CLIENT_INFO, message_handler=seen.on_message
            ) as session,
        ):
            result = await session.initialize()
            tools = await _tools(session) if result.capabilities.tools is not None else ()
    return McpServerInfo(
        name=result.server_info.name or "(unnamed)",
        version=result.server_info.version or None,
        protocol_version=result.protocol_version,
        instructions=result.instructions,
        tools=tools,
    )


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups of the SDK's task groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _reason(error: BaseException, command: str, timeout: float, seen: _Exchange) -> str:
    leaves = _leaves(error)
    for leaf in leaves:
        if isinstance(leaf, FileNotFoundError | PermissionError):
            return f"cannot start {command!r}: {leaf.strerror or leaf}"
    if seen.bad_lines:
        return "the server wrote a line that is not an MCP message"
    for leaf in leaves:
        if isinstance(leaf, TimeoutError):
            return f"no answer from the server within {timeout:g}s"
        if isinstance(leaf, MCPError):
            if leaf.error.message == "Connection closed":
                return "the server exited before answering"
            return f"the server answered with an error: {leaf.error.message}"
    return f"{type(leaves[0]).__name__}: {leaves[0]}"


def _tail(errlog: TextIO) -> str:
    errlog.seek(0)
    lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    return " | ".join(lines[-STDERR_TAIL_LINES:])


def probe(
    command: str, args: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float
) -> McpServerInfo:
    params = StdioServerParameters(command=command, args=list(args), env=dict(env), cwd=cwd)
    seen = _Exchange()
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            return anyio.run(_probe, params, errlog, seen, timeout)
        except Exception as exc:  # the SDK's failures come wrapped in exception groups
            reason = _reason(exc, command, timeout, seen)
            tail = _tail(errlog)
            raise McpError(f"{reason}; stderr: {tail}" if tail else reason) from None
