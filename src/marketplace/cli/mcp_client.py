"""Connect to a stdio MCP server once: initialize, initialized, tools/list, stop.

Messages are JSON-RPC 2.0, one per line, on the server's stdin and stdout. Everything
runs under one deadline; a spawn error, a timeout, an early exit or a line that is not
JSON ends in McpError with the tail of the server's stderr when there is one.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from marketplace.cli.api import CLI_VERSION
from marketplace.cli.errors import CliError

PROTOCOL_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "marketplace-cli", "version": CLI_VERSION}
STOP_WAIT_SECONDS = 2.0
EXIT_GRACE_SECONDS = 1.0
STDERR_TAIL_LINES = 5
MAX_TOOL_PAGES = 20
METHOD_NOT_FOUND = -32601


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


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    if stream is None:  # pragma: no cover - Popen was given PIPE for every stream
        raise McpError("the server's pipes are missing")
    return stream


def _pump(stream: IO[bytes], sink: queue.Queue[bytes | None]) -> None:
    try:
        for line in iter(stream.readline, b""):
            sink.put(line)
    except (OSError, ValueError):
        pass  # the pipe was closed under us while stopping
    finally:
        sink.put(None)


def _collect(stream: IO[bytes], tail: deque[str]) -> None:
    try:
        for line in iter(stream.readline, b""):
            tail.append(line.decode("utf-8", "replace").rstrip())
    except (OSError, ValueError):
        pass


class StdioSession:
    """A running stdio server and the JSON-RPC exchange with it."""

    def __init__(self, process: subprocess.Popen[bytes], deadline: float) -> None:
        self.process = process
        self.deadline = deadline
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._next_id = 0
        stdout, stderr = _pipe(process.stdout), _pipe(process.stderr)
        self._stderr_thread = threading.Thread(
            target=_collect, args=(stderr, self._stderr), daemon=True
        )
        self._threads = [
            threading.Thread(target=_pump, args=(stdout, self._lines), daemon=True),
            self._stderr_thread,
        ]
        for thread in self._threads:
            thread.start()

    @classmethod
    def start(
        cls,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        timeout: float,
    ) -> StdioSession:
        try:
            # The command comes from the manifest of a plugin the user chose to install.
            process = subprocess.Popen(  # noqa: S603
                [command, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env={**os.environ, **env},
            )
        except OSError as exc:
            raise McpError(f"cannot start {command!r}: {exc.strerror or exc}") from exc
        return cls(process, time.monotonic() + timeout)

    def __enter__(self) -> StdioSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _failure(self, message: str) -> McpError:
        if self.process.poll() is not None:
            # The server is gone: let its last words reach the tail first.
            self._stderr_thread.join(timeout=STOP_WAIT_SECONDS)
        tail = " | ".join(line for line in self._stderr if line)
        return McpError(f"{message}; stderr: {tail}" if tail else message)

    def _ended(self, what: str) -> McpError:
        """The server hung up: say whether it exited (and how), as it is most likely to."""
        try:
            code: int | None = self.process.wait(timeout=EXIT_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        state = what if code is None else f"exited (code {code})"
        return self._failure(f"the server {state} before answering")

    def send(self, message: dict[str, Any]) -> None:
        stdin = _pipe(self.process.stdin)
        try:
            stdin.write((json.dumps(message) + "\n").encode("utf-8"))
            stdin.flush()
        except OSError as exc:
            raise self._ended("closed its input") from exc

    def receive(self) -> dict[str, Any]:
        remaining = self.deadline - time.monotonic()
        try:
            line = self._lines.get(timeout=max(remaining, 0.0))
        except queue.Empty:
            raise self._failure("no answer from the server before the timeout") from None
        if line is None:
            raise self._ended("closed its output")
        try:
            message = json.loads(line)
        except ValueError:
            text = line.decode("utf-8", "replace").strip()[:200]
            raise self._failure(f"the server wrote a line that is not JSON: {text!r}") from None
        if not isinstance(message, dict):
            raise self._failure("the server wrote a JSON value that is not a message")
        return message

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and wait for its response, answering or skipping anything else."""
        self._next_id += 1
        request_id = self._next_id
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == request_id and "method" not in message:
                return self._result(method, message)
            if "method" in message and "id" in message:
                self._refuse(message["id"])

    def _result(self, method: str, message: dict[str, Any]) -> dict[str, Any]:
        error = message.get("error")
        if isinstance(error, dict):
            raise self._failure(f"{method} failed: {error.get('message', error)}")
        result = message.get("result")
        if not isinstance(result, dict):
            raise self._failure(f"{method}: the answer has no result object")
        return result

    def _refuse(self, request_id: Any) -> None:
        """This client offers no capabilities, so requests from the server are refused."""
        error = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def notify(self, method: str) -> None:
        self.send({"jsonrpc": "2.0", "method": method})

    def stop(self) -> None:
        """Close stdin, wait, then terminate and kill if needed (the MCP stdio shutdown)."""
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=STOP_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for thread in self._threads:
            thread.join(timeout=STOP_WAIT_SECONDS)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def _tools(session: StdioSession) -> tuple[McpTool, ...]:
    tools: list[McpTool] = []
    params: dict[str, Any] = {}
    for _ in range(MAX_TOOL_PAGES):
        result = session.request("tools/list", params)
        for tool in result.get("tools") or []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                description = tool.get("description")
                tools.append(
                    McpTool(tool["name"], description if isinstance(description, str) else None)
                )
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            break
        params = {"cursor": cursor}
    return tuple(tools)


def _text(container: Mapping[str, Any], key: str) -> str | None:
    value = container.get(key)
    return value if isinstance(value, str) else None


def probe_stdio(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    timeout: float = 10.0,
) -> McpServerInfo:
    """Start the server, complete the handshake, list its tools, stop it."""
    with StdioSession.start(command, args, env, cwd, timeout) as session:
        result = session.request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )
        session.notify("notifications/initialized")
        server = result.get("serverInfo")
        server = server if isinstance(server, dict) else {}
        capabilities = result.get("capabilities")
        has_tools = isinstance(capabilities, dict) and "tools" in capabilities
        tools = _tools(session) if has_tools else ()
    return McpServerInfo(
        name=_text(server, "name") or "(unnamed)",
        version=_text(server, "version"),
        protocol_version=_text(result, "protocolVersion"),
        instructions=_text(result, "instructions"),
        tools=tools,
    )
