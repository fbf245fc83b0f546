"""`GET /plugins/{pluginKey}`: the public page of a listed plugin (CONTRACT 17).

Listed means what the public API means (approved and enabled, CONTRACT 6); anything else,
an unknown key or one that no plugin could have, is an HTML 404 page. Every text on the
page comes from the publisher or the publisher's server, and is printed escaped; addresses
the publisher gave (homepage, repository) are shown as text, never as links.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from marketplace.catalog.cache import Generation
from marketplace.catalog.schemas import rating_average
from marketplace.catalog.service import listed_plugin_row
from marketplace.errors import PluginNotFound
from marketplace.models import InspectionStatus, Plugin
from marketplace.public_pages.http import (
    Rendered,
    cached_page,
    error_body,
    error_page,
    failure_page,
    public_address,
    render_page,
)
from marketplace.public_pages.queries import PageVersions, page_versions, report_items
from marketplace_rules.limits import PLUGIN_KEY_MAX_LENGTH
from marketplace_rules.vocabulary import PLUGIN_KEY_PATTERN, UUID_PATTERN

router = APIRouter(include_in_schema=False)

PATH = "/plugins/{plugin_key}"
NOT_FOUND = "There is no listed plugin with that key."
VERSIONS_SHOWN = 30
TOOLS_SHOWN = 100
TOOL_TEXT_MAX = 2000
SUMMARY_MAX = 200
# An inspection that has not ended yet may end without moving the catalogue generation
# (a run that finds nothing new writes nothing the triggers see): such a page is not kept.
UNSETTLED = frozenset({InspectionStatus.QUEUED.value, InspectionStatus.RUNNING.value})


def plugin_path(plugin_key: str) -> str:
    return PATH.format(plugin_key=plugin_key)


def is_plausible_key(value: str) -> bool:
    """Shaped like a pluginKey (CONTRACT 3): anything else names no plugin, and is answered
    without a query."""
    return (
        0 < len(value) <= PLUGIN_KEY_MAX_LENGTH
        and PLUGIN_KEY_PATTERN.fullmatch(value) is not None
        and UUID_PATTERN.fullmatch(value) is None
    )


def clipped(text: str | None, limit: int) -> str:
    """One line of at most `limit` characters (meta descriptions, summaries)."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class Tool:
    name: str
    description: str


def _text(value: Any, limit: int) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tools(shown: PageVersions) -> list[Tool]:
    inspection = shown.inspection
    if inspection is None or inspection.status != InspectionStatus.DONE.value:
        return []
    return [
        Tool(_text(item.get("name"), 200), _text(item.get("description"), TOOL_TEXT_MAX))
        for item in report_items(inspection.report, "tools")
    ]


def _inspection_state(shown: PageVersions) -> str:
    if shown.current is None:
        return "no_version"
    if shown.inspection is None:
        return InspectionStatus.NOT_APPLICABLE.value
    return shown.inspection.status


def _price(plugin: Plugin) -> str:
    if plugin.is_free:
        return "Free"
    price = Decimal(plugin.price).quantize(Decimal("0.01"))
    per = f" for {plugin.validity_days} days" if plugin.validity_days else ""
    return f"¥{price}{per}"


def page_context(
    request: Request, plugin: Plugin, publisher: str, by_org: bool, shown: PageVersions
) -> dict[str, Any]:
    tools = _tools(shown)
    average = rating_average(plugin.rating_sum, plugin.rating_count)
    path = plugin_path(plugin.plugin_key)
    return {
        "title": plugin.name,
        "summary": clipped(plugin.description, SUMMARY_MAX),
        "canonical": public_address(request, path),
        "noindex": False,
        "plugin": plugin,
        "publisher": publisher,
        "by_org": by_org,
        "price": _price(plugin),
        "rating": f"{average:.1f}" if average is not None else None,
        "versions": shown.versions[:VERSIONS_SHOWN],
        "more_versions": max(0, len(shown.versions) - VERSIONS_SHOWN),
        "current": shown.current,
        "inspection_state": _inspection_state(shown),
        "tools": tools[:TOOLS_SHOWN],
        "more_tools": max(0, len(tools) - TOOLS_SHOWN),
        "install_command": f"marketplace install {plugin.plugin_key}",
    }


async def build_plugin_page(request: Request, session: AsyncSession, plugin_key: str) -> Rendered:
    try:
        row = await listed_plugin_row(session, plugin_key)
    except PluginNotFound:
        return Rendered(error_body(404, NOT_FOUND), keep=False, status=404)
    plugin = row.plugin
    shown = await page_versions(session, plugin.id)
    org = row.org
    publisher = org.name if org is not None else row.developer_name
    context = page_context(request, plugin, publisher, org is not None, shown)
    unsettled = shown.inspection is not None and shown.inspection.status in UNSETTLED
    return Rendered(render_page("plugin.html", context), keep=not unsettled)


@router.get("/plugins/{plugin_key:path}")
async def plugin_page(plugin_key: str, request: Request) -> Response:
    """A listed plugin's public page; an HTML 404 page for any other key."""
    if not is_plausible_key(plugin_key):
        return error_page(request, 404, NOT_FOUND)

    async def build(session: AsyncSession, _generation: Generation) -> Rendered:
        return await build_plugin_page(request, session, plugin_key)

    try:
        return await cached_page(request, ("public_pages", "plugin", plugin_key), build)
    except Exception as exc:  # any failure is a page (http.failure_page), never a trace
        return failure_page(request, exc)
