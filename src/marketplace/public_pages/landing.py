"""`GET /`: a landing page for browsers, the service index for every other client.

A request whose Accept names text/html gets an HTML page: a search box over the listed
plugins (a plain GET form to `/` with q, category and type), the results or the featured
and popular plugins, and the ways on (/portal, /console, /docs). Results come from the
catalogue's own browse (catalog.search_engines.browse_listed, popular order), so they are
the ones `GET /api/v1/plugins/browse` answers for the same q and filters. Any other client
keeps the JSON index it always had (kit.front.service_index).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from marketplace.catalog import service
from marketplace.catalog.cache import Generation
from marketplace.catalog.endpoints import SEARCH_TEXT_PATTERN
from marketplace.catalog.schemas import BrowseSort, rating_average
from marketplace.catalog.search_engines import browse_listed
from marketplace.kit.front import CONSOLE, DOCS, ServiceIndex, service_index
from marketplace.kit.pagination import Page
from marketplace.kit.schemas import Envelope
from marketplace.models import PluginType
from marketplace.public_pages.http import (
    VARY_ACCEPT,
    Rendered,
    cached_page,
    failure_page,
    html_response,
    public_address,
    render_page,
)
from marketplace.public_pages.plugin_page import clipped, plugin_path

router = APIRouter(redirect_slashes=False)

PORTAL = "/portal"
PAGE_SIZE = 20
FEATURED = 6
POPULAR = 10
Q_MAX = 200  # as the API's q
CATEGORY_MAX = 64
PAGE_MAX = 1_000_000
SUMMARY_MAX = 160
_SEARCH_TEXT = re.compile(SEARCH_TEXT_PATTERN)
TYPES = tuple(t.value for t in PluginType)
TAGLINE = "Plugins and scenarios for your assistant: reviewed, signed and inspected."


class Refused(ValueError):
    """A search the page cannot run, with the words the page shows."""


@dataclass(frozen=True)
class Search:
    q: str
    category: str
    type: str
    page: int

    @property
    def active(self) -> bool:
        return bool(self.q or self.category or self.type)

    def query(self) -> service.BrowseQuery:
        return service.BrowseQuery(
            q=self.q or None,
            category=self.category or None,
            type=PluginType(self.type) if self.type else None,
            is_free=None,
            sort=BrowseSort.POPULAR,
        )

    def url(self, page: int) -> str:
        fields = {"q": self.q, "category": self.category, "type": self.type}
        params = {k: v for k, v in fields.items() if v}
        if page > 1:
            params["page"] = str(page)
        return "/?" + urlencode(params) if params else "/"


def read_search(params: Any) -> Search:
    """The form's fields, checked as the API checks them; an empty field is no filter."""
    q = (params.get("q") or "").strip()
    if len(q) > Q_MAX or _SEARCH_TEXT.fullmatch(q) is None:
        raise Refused(f"The search text must be at most {Q_MAX} visible characters.")
    category = (params.get("category") or "").strip()
    if len(category) > CATEGORY_MAX:
        raise Refused("There is no such category.")
    kind = (params.get("type") or "").strip()
    if kind and kind not in TYPES:
        raise Refused("There is no such type of plugin.")
    raw_page = (params.get("page") or "1").strip()
    # ASCII digits only, and few of them: "²" is a digit to str.isdigit but not to int().
    plain = raw_page.isascii() and raw_page.isdigit() and len(raw_page) <= len(str(PAGE_MAX))
    if not plain or not 1 <= int(raw_page) <= PAGE_MAX:
        raise Refused("The page number is not valid.")
    return Search(q=q, category=category, type=kind, page=int(raw_page))


def _item(row: service.PluginRow) -> dict[str, Any]:
    plugin = row.plugin
    average = rating_average(plugin.rating_sum, plugin.rating_count)
    return {
        "plugin": plugin,
        "href": plugin_path(plugin.plugin_key),
        "publisher": row.org.name if row.org is not None else row.developer_name,
        "summary": clipped(plugin.description, SUMMARY_MAX),
        "rating": f"{average:.1f}" if average is not None else None,
    }


def _context(request: Request, search: Search) -> dict[str, Any]:
    return {
        "title": "Marketplace",
        "summary": TAGLINE,
        "canonical": public_address(request, "/"),
        "noindex": search.active,  # a results page: the landing page is the canonical one
        "search": search,
        "types": TYPES,
        "categories": [],
        "links": {"portal": PORTAL, "console": CONSOLE, "docs": DOCS},
        "error": None,
        "results": None,
        "featured": [],
        "popular": [],
    }


async def build_landing(
    request: Request, session: AsyncSession, generation: Generation, search: Search
) -> Rendered:
    context = _context(request, search)
    context["categories"] = await service.categories(session)
    if search.active:
        page = Page(search.page, PAGE_SIZE)
        browsed = await browse_listed(request.app, session, generation, search.query(), page)
        last = max(1, -(-browsed.total // PAGE_SIZE))
        context["results"] = {
            "total": browsed.total,
            "items": [_item(row) for row in browsed.rows],
            "previous": search.url(search.page - 1) if search.page > 1 else None,
            "next": search.url(search.page + 1) if search.page < last else None,
            "page": search.page,
            "pages": last,
        }
    else:
        featured = await service.top_plugins(session, FEATURED, featured=True)
        popular = await service.top_plugins(session, POPULAR, featured=False)
        context["featured"] = [_item(row) for row in featured]
        context["popular"] = [_item(row) for row in popular]
    return Rendered(render_page("landing.html", context))


def _refused_page(request: Request, reason: str) -> Response:
    context = _context(request, Search(q="", category="", type="", page=1))
    context["error"] = reason
    return html_response(
        request, render_page("landing.html", context), status=400, extra=VARY_ACCEPT
    )


@router.get(
    "/",
    response_model=Envelope[ServiceIndex],
    tags=["service"],
    responses={
        200: {
            "description": "The service index; a browser (Accept: text/html) gets the "
            "landing page instead",
            "content": {"text/html": {"schema": {"type": "string"}}},
        }
    },
)
async def index(request: Request, response: Response) -> Any:
    """Where to go from here. A browser (one that accepts text/html) gets the landing page:
    a search over the listed plugins (q, category, type, page: as the public browse), the
    featured and popular ones, and links to the publisher portal, the reviewer console and
    the API documentation. Any other client gets the service's name and the addresses of
    the reviewer console, the API documentation and the OpenAPI document."""
    if "text/html" not in request.headers.get("accept", ""):
        response.headers.update(VARY_ACCEPT)
        return service_index(request)
    try:
        search = read_search(request.query_params)
    except Refused as refused:
        return _refused_page(request, str(refused))

    async def build(session: AsyncSession, generation: Generation) -> Rendered:
        return await build_landing(request, session, generation, search)

    key = ("public_pages", "landing", search.q, search.category, search.type, search.page)
    try:
        return await cached_page(request, key, build, VARY_ACCEPT)
    except Exception as exc:  # any failure is a page (http.failure_page), never a trace
        return failure_page(request, exc, VARY_ACCEPT)
