"""The MCP client side of an inspection: initialize, then list every tool, prompt and
resource the server announces, under one deadline, with the official SDK's stdio client.

Listings are kept exactly as the server sent them: each page is requested with a raw result
type (`_Raw`), so no model fills in defaults, and fingerprints (CONTRACT 13) are taken from
those wire values. What is kept for storage is bounded (item counts, string lengths, schema
sizes, no NUL characters); fingerprints always cover the full wire values.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio
import mcp_types as types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from pydantic import BaseModel, ConfigDict, ValidationError

from marketplace_rules.canonical import canonical_json

CLIENT_INFO = types.Implementation(name="marketplace-inspector", version="1")
MAX_ITEMS = 256
MAX_PAGES = 64
MAX_NAME_CHARS = 1000
MAX_DESCRIPTION_CHARS = 8000
MAX_URI_CHARS = 4000
MAX_MIME_CHARS = 200
MAX_INSTRUCTIONS_CHARS = 64 * 1024
MAX_SCHEMA_BYTES = 64 * 1024
MAX_ANNOTATIONS_BYTES = 8 * 1024
TRUNCATED = "…"


class _Raw(BaseModel):
    """A result taken as sent: every key lands, untouched, in `model_extra`."""

    model_config = ConfigDict(extra="allow")


# The SDK logs each unparsable server line with a traceback; the report says it once.
logging.getLogger("mcp").addHandler(logging.NullHandler())
logging.getLogger("mcp").propagate = False


class ProbeError(Exception):
    """Why the exchange did not complete, as one line for the report."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Listing:
    """What the server offers the model, bounded for storage."""

    server: dict[str, Any] | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Exchange:
    """Where the exchange is, for the reason when it fails."""

    step: str = "initialize"
    answered: bool = False
    bad_lines: int = 0

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.bad_lines += 1


# -- storage bounds --------------------------------------------------------------------------


def fingerprint(value: dict[str, Any]) -> str:
    """Lowercase hex SHA-256 of the canonical JSON (CONTRACT 11) of wire values."""
    try:
        data = canonical_json(value)
    except UnicodeEncodeError:  # a lone surrogate sent as a \\ud800 escape
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        data = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _clean_text(text: str) -> str:
    # Neither NUL nor a lone surrogate can be stored in PostgreSQL text or JSON.
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return _clean_text(value)
    if isinstance(value, dict):
        return {_clean_text(str(key)): _clean(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _text(value: Any, limit: int) -> str | None:
    if value is None:
        return None
    text = _clean_text(value if isinstance(value, str) else json.dumps(value))
    return text if len(text) <= limit else text[:limit] + TRUNCATED


def _json(value: Any, limit: int) -> Any:
    """The value cleaned for storage, or a small marker when it is too large."""
    if value is None:
        return None
    try:
        cleaned = _clean(value)
        size = len(json.dumps(cleaned, ensure_ascii=False).encode("utf-8"))
    except (RecursionError, ValueError, TypeError):
        return {"x-marketplace-omitted": "unserializable"}
    if size > limit:
        return {"x-marketplace-omitted": "too large", "bytes": size}
    return cleaned


def tool_record(raw: dict[str, Any]) -> dict[str, Any]:
    wire = {key: raw.get(key) for key in ("name", "description", "inputSchema", "annotations")}
    return {
        "name": _text(wire["name"], MAX_NAME_CHARS) or "",
        "description": _text(wire["description"], MAX_DESCRIPTION_CHARS),
        "inputSchema": _json(wire["inputSchema"], MAX_SCHEMA_BYTES),
        "annotations": _json(wire["annotations"], MAX_ANNOTATIONS_BYTES),
        "fingerprint": fingerprint(wire),
    }


def prompt_record(raw: dict[str, Any]) -> dict[str, Any]:
    wire = {key: raw.get(key) for key in ("name", "description", "arguments")}
    return {
        "name": _text(wire["name"], MAX_NAME_CHARS) or "",
        "description": _text(wire["description"], MAX_DESCRIPTION_CHARS),
        "arguments": _json(wire["arguments"], MAX_SCHEMA_BYTES),
        "fingerprint": fingerprint(wire),
    }


def resource_record(raw: dict[str, Any]) -> dict[str, Any]:
    return {
        "uri": _text(raw.get("uri"), MAX_URI_CHARS) or "",
        "name": _text(raw.get("name"), MAX_NAME_CHARS),
        "description": _text(raw.get("description"), MAX_DESCRIPTION_CHARS),
        "mimeType": _text(raw.get("mimeType"), MAX_MIME_CHARS),
    }


# -- the exchange ----------------------------------------------------------------------------


async def _pages(
    session: ClientSession,
    request: Callable[[types.PaginatedRequestParams | None], Any],
    key: str,
    exchange: _Exchange,
) -> list[dict[str, Any]]:
    """Every item of a paginated listing, as sent, up to MAX_ITEMS."""
    items: list[dict[str, Any]] = []
    cursors: set[str] = set()
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        raw = (await session.send_request(request(params), _Raw)).model_extra or {}
        page = raw.get(key)
        if not isinstance(page, list):
            raise ProbeError(f"the server's {exchange.step} answer has no {key} list")
        items += [item for item in page if isinstance(item, dict)][: MAX_ITEMS - len(items)]
        next_cursor = raw.get("nextCursor")
        # A cursor seen before would page forever.
        if not isinstance(next_cursor, str) or next_cursor in cursors or len(items) >= MAX_ITEMS:
            break
        cursors.add(next_cursor)
        cursor = next_cursor
    return items


async def _converse(session: ClientSession, exchange: _Exchange) -> Listing:
    result = await session.initialize()
    exchange.answered = True
    listing = Listing(
        server={
            "name": _text(result.server_info.name, MAX_NAME_CHARS),
            "version": _text(result.server_info.version, MAX_NAME_CHARS),
            "instructions": _text(result.instructions, MAX_INSTRUCTIONS_CHARS),
        }
    )
    capabilities = result.capabilities
    if capabilities.tools is not None:
        exchange.step = "tools/list"
        raw = await _pages(session, lambda p: types.ListToolsRequest(params=p), "tools", exchange)
        listing.tools = [tool_record(item) for item in raw]
    if capabilities.prompts is not None:
        exchange.step = "prompts/list"
        raw = await _pages(
            session, lambda p: types.ListPromptsRequest(params=p), "prompts", exchange
        )
        listing.prompts = [prompt_record(item) for item in raw]
    if capabilities.resources is not None:
        exchange.step = "resources/list"
        raw = await _pages(
            session, lambda p: types.ListResourcesRequest(params=p), "resources", exchange
        )
        listing.resources = [resource_record(item) for item in raw]
    exchange.step = "done"
    return listing


async def probe(
    params: StdioServerParameters, errlog: TextIO, seconds: float, settle_seconds: float
) -> Listing:
    """Start the server (`params`), list what it offers, and keep it running a little longer
    (`settle_seconds`, within the deadline) so that what it does right after is observed.

    Raises ProbeError with a one-line reason."""
    exchange = _Exchange()
    deadline = anyio.current_time() + seconds
    try:
        with anyio.fail_after(seconds):
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(
                    read, write, client_info=CLIENT_INFO, message_handler=exchange.on_message
                ) as session,
            ):
                listing = await _converse(session, exchange)
                # Leave room for the shutdown inside the deadline.
                await anyio.sleep(
                    max(0.0, min(settle_seconds, deadline - anyio.current_time() - 1))
                )
    except Exception as exc:  # the SDK's failures come wrapped in exception groups
        raise ProbeError(reason(exc, seconds, exchange)) from None
    return listing


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def reason(error: BaseException, seconds: float, exchange: _Exchange) -> str:
    leaves = _leaves(error)
    step = exchange.step
    not_mcp = (
        f"; it wrote {exchange.bad_lines} line(s) that are not JSON-RPC (not an MCP server?)"
        if exchange.bad_lines and not exchange.answered
        else ""
    )
    for leaf in leaves:
        if isinstance(leaf, ProbeError):
            return leaf.reason
    for leaf in leaves:
        if isinstance(leaf, TimeoutError):
            return f"timed out: no answer to {step} within {seconds:g}s{not_mcp}"
    for leaf in leaves:
        if isinstance(leaf, MCPError):
            if leaf.code == types.CONNECTION_CLOSED and leaf.message == "Connection closed":
                return f"the server exited before answering {step}{not_mcp}"
            return f"the server answered {step} with an error: {leaf.message}"
    for leaf in leaves:
        if isinstance(leaf, ValidationError):
            first = leaf.errors()[0] if leaf.errors() else {"loc": (), "msg": str(leaf)}
            where = ".".join(str(part) for part in first["loc"])
            return f"the server's answer to {step} is not valid MCP: {where}: {first['msg']}"
    for leaf in leaves:
        if isinstance(leaf, OSError):
            return f"the inspection could not start: {leaf}"
    return f"{step} failed: {type(leaves[0]).__name__}: {leaves[0]}"
