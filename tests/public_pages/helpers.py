"""Reading the public pages in tests: as a browser asks for them, and what they show."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import Plugin, PluginInspection, PluginVersion
from tests.factories import Factory
from tests.helpers import recording_statements

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)


async def browse(client: httpx.AsyncClient, path: str, **params: Any) -> httpx.Response:
    return await client.get(path, params=params or None, headers=BROWSER)


async def page_of(client: httpx.AsyncClient, path: str, **params: Any) -> str:
    response = await browse(client, path, **params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    return response.text


def text_of(page: str) -> str:
    """The page's visible text, tags removed and entities decoded."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def section(page: str, element_id: str) -> str:
    """One <section ... id=...> of the page (sections do not nest)."""
    start = page.index(f'id="{element_id}"')
    return page[start : page.index("</section>", start)]


def meta(page: str, prop: str) -> str:
    """The decoded content of <meta property=prop> (Open Graph) or <meta name=prop>."""
    found = re.search(rf'<meta (?:property|name)="{re.escape(prop)}" content="([^"]*)">', page)
    assert found is not None, f"no meta {prop}"
    return html.unescape(found[1])


def canonical(page: str) -> str:
    found = re.search(r'<link rel="canonical" href="([^"]*)">', page)
    assert found is not None
    return html.unescape(found[1])


def linked_keys(fragment: str) -> list[str]:
    """The plugin pages a part of a page links to, in order, once each."""
    keys = re.findall(r'<a class="pub-card-title" href="/plugins/([^"]+)">', fragment)
    return list(dict.fromkeys(keys))


def assert_security_headers(response: httpx.Response) -> None:
    assert response.headers["content-security-policy"] == CSP
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"


class Statements:
    """Every SQL statement an app's engine sends while recording (the generation reader's
    own connection is not the engine's: a cache hit records nothing)."""

    def __init__(self, app: FastAPI) -> None:
        self.recording = recording_statements(app, self._record)
        self.seen: list[str] = []

    def _record(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        self.seen.append(statement)

    def __enter__(self) -> Statements:
        self.recording.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.recording.__exit__(*exc)

    def reading(self, table: str) -> list[str]:
        pattern = re.compile(rf"\b{table}\b")
        return [s for s in self.seen if pattern.search(s)]


def tool(name: str, description: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object"},
        "annotations": None,
        "fingerprint": "0" * 64,
    }


def report(tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "server": {"name": "test-server", "version": "1.0.0", "instructions": None},
        "tools": tools,
        "prompts": [],
        "resources": [],
        "observed": {"network": [], "filesWritten": [], "processes": [], "sensitiveReads": []},
        "undeclared": [],
    }


def mcp_manifest(plugin: Plugin, version: str) -> dict[str, Any]:
    return {
        "id": plugin.plugin_key,
        "version": version,
        "category": plugin.category,
        "main": "server.js",
        "mcp": {"command": "node", "args": ["server.js"]},
    }


async def inspected_version(
    factory: Factory,
    plugin: Plugin,
    version: str,
    status: str,
    tools: list[dict[str, Any]] | None = None,
) -> PluginVersion:
    """An approved, current version of a stdio MCP server with its inspection row, as a
    worker leaves it (`done` and `failed` have finished; the others have no report)."""
    row = await factory.version(plugin, version, manifest=mcp_manifest(plugin, version))
    ended = status in ("done", "failed")
    now = datetime.now(UTC)
    sessions: async_sessionmaker[AsyncSession] = factory.sessions
    async with sessions() as session:
        session.add(
            PluginInspection(
                version_id=row.id,
                status=status,
                attempts=1,
                queued_at=now,
                started_at=None if status == "queued" else now,
                finished_at=now if ended else None,
                error="the server crashed" if status == "failed" else None,
                report=report(tools or []) if status == "done" else None,
            )
        )
        await session.commit()
    return row
