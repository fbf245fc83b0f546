"""Public group (CONTRACT 6): browse, search, featured, popular, categories, detail, versions,
reviews. No token needed; a valid token adds the caller's purchase state to every plugin."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query, Request
from pydantic import AfterValidator, Field
from starlette.responses import Response

from marketplace.auth.deps import OptionalUser
from marketplace.catalog import service
from marketplace.catalog.cache import Generation, catalog_cache
from marketplace.catalog.http import NOT_MODIFIED, Built, CachedPublicRoute, serve_public
from marketplace.catalog.schemas import (
    BrowsePage,
    BrowseSort,
    CategoryCountOut,
    CategoryCounts,
    PluginItems,
    PublicPluginOut,
    ReviewOut,
    ReviewPage,
    VersionItems,
    public_plugin,
    public_version,
    rating_average,
)
from marketplace.catalog.search_engines import browse_listed
from marketplace.db import DbSession
from marketplace.errors import PluginNotFound
from marketplace.kit.error_codes import raises
from marketplace.kit.pagination import PageSizeParams
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.models import PluginType

router = api_router(
    prefix="/api/v1/plugins", tags=["marketplace: public"], route_class=CachedPublicRoute
)

MAX_TOP = 50


def _hidden_ranges() -> str:
    """A regex class body of the control and format characters (Cc, Cf) of the Basic
    Multilingual Plane: what ECMA-262 (the document's dialect) and Python both can name."""
    ranges: list[str] = []
    start = previous = -2
    for code in range(0x10000):
        if unicodedata.category(chr(code)) not in ("Cc", "Cf"):
            continue
        if code != previous + 1:
            if start >= 0:
                ranges.append(_range(start, previous))
            start = code
        previous = code
    ranges.append(_range(start, previous))
    return "".join(ranges)


def _range(first: int, last: int) -> str:
    return f"\\u{first:04x}" + (f"-\\u{last:04x}" if last != first else "")


# No control or format characters: newlines separate fields in the search index, and
# invisible characters only make a query match nothing. The document's pattern is the rule.
SEARCH_TEXT_PATTERN = f"^[^{_hidden_ranges()}]*$"
_SEARCH_TEXT = re.compile(SEARCH_TEXT_PATTERN)


def _search_text(value: str) -> str:
    if _SEARCH_TEXT.fullmatch(value) is None:
        raise ValueError("contains control or invisible characters")
    return value


SearchText = Annotated[
    str, AfterValidator(_search_text), Field(json_schema_extra={"pattern": SEARCH_TEXT_PATTERN})
]


async def browse_query(
    q: Annotated[SearchText | None, Query(max_length=200, description="Substring to find")] = None,
    category: Annotated[str | None, Query(max_length=64)] = None,
    type: Annotated[PluginType | None, Query()] = None,
    is_free: Annotated[bool | None, Query(alias="isFree")] = None,
    sort: Annotated[BrowseSort, Query()] = BrowseSort.POPULAR,
) -> service.BrowseQuery:
    text = q.strip() if q else None
    return service.BrowseQuery(
        q=text or None, category=category, type=type, is_free=is_free, sort=sort
    )


BrowseParams = Annotated[service.BrowseQuery, Depends(browse_query)]


@dataclass(frozen=True)
class Top:
    limit: int


async def top_limit(limit: Annotated[int, Query(ge=1)] = 10) -> Top:
    return Top(min(limit, MAX_TOP))


TopParams = Annotated[Top, Depends(top_limit)]


@router.get("/browse", response_model=Envelope[BrowsePage], responses=NOT_MODIFIED)
async def browse(
    request: Request,
    session: DbSession,
    user: OptionalUser,
    query: BrowseParams,
    page: PageSizeParams,
) -> Response:
    """Listed plugins: search (q), filters (category, type, isFree), sort, page.

    q finds pluginKey, names, descriptions and tags by case-insensitive substring, Chinese
    included. Sorts: popular (default, by downloadCount), newest, rating, name, updated.
    """

    async def build(generation: Generation) -> Built:
        browsed = await browse_listed(request.app, session, generation, query, page)
        items = [public_plugin(*row) for row in browsed.rows]
        return Built(
            BrowsePage.model_construct(
                items=items, total=browsed.total, page=page.page, page_size=page.size
            ),
            "items",
        )

    return await serve_public(request, session, user, build)


@router.get("/featured", response_model=Envelope[PluginItems], responses=NOT_MODIFIED)
async def featured(
    request: Request, session: DbSession, user: OptionalUser, top: TopParams
) -> Response:
    """Featured listed plugins, most downloaded first (limit: default 10, at most 50)."""

    async def build(_generation: Generation) -> Built:
        rows = await service.top_plugins(session, top.limit, featured=True)
        return Built(PluginItems.model_construct(items=[public_plugin(*r) for r in rows]), "items")

    return await serve_public(request, session, user, build)


@router.get("/popular", response_model=Envelope[PluginItems], responses=NOT_MODIFIED)
async def popular(
    request: Request, session: DbSession, user: OptionalUser, top: TopParams
) -> Response:
    """Listed plugins by downloadCount, highest first (limit: default 10, at most 50)."""

    async def build(_generation: Generation) -> Built:
        rows = await service.top_plugins(session, top.limit, featured=False)
        return Built(PluginItems.model_construct(items=[public_plugin(*r) for r in rows]), "items")

    return await serve_public(request, session, user, build)


@router.get("/categories", response_model=Envelope[CategoryCounts], responses=NOT_MODIFIED)
async def categories(request: Request, session: DbSession, user: OptionalUser) -> Response:
    """Every category with the number of listed plugins in it."""

    async def build(generation: Generation) -> Built:
        cache = catalog_cache(request.app)
        counts = cache.count(generation, ("categories",))
        if counts is None:
            counts = await service.listed_counts_by_category(session)
            cache.store_count(generation, ("categories",), counts)
        items = [
            CategoryCountOut(key=c.key, name=c.name, name_zh=c.name_zh, count=counts.get(c.key, 0))
            for c in await service.categories(session)
        ]
        return Built(CategoryCounts(items=items))

    return await serve_public(request, session, user, build)


@router.get("/detail/{plugin_id}", response_model=Envelope[PublicPluginOut], responses=NOT_MODIFIED)
@raises(PluginNotFound)
async def detail(
    plugin_id: str, request: Request, session: DbSession, user: OptionalUser
) -> Response:
    """A listed plugin by id or pluginKey; with the caller's purchase state when logged in."""

    async def build(_generation: Generation) -> Built:
        row = await service.listed_plugin_row(session, plugin_id)
        return Built(public_plugin(*row), "plugin")

    return await serve_public(request, session, user, build)


@router.get("/versions/{plugin_id}", response_model=Envelope[VersionItems], responses=NOT_MODIFIED)
@raises(PluginNotFound)
async def versions(
    plugin_id: str, request: Request, session: DbSession, user: OptionalUser
) -> Response:
    """Approved versions of a listed plugin, newest (highest semver) first."""

    async def build(_generation: Generation) -> Built:
        plugin, rows = await service.listed_plugin_versions(session, plugin_id)
        paid = not plugin.is_free
        return Built(
            VersionItems.model_construct(items=[public_version(v, paid=paid) for v in rows])
        )

    return await serve_public(request, session, user, build)


@router.get("/reviews/{plugin_id}", response_model=Envelope[ReviewPage], responses=NOT_MODIFIED)
@raises(PluginNotFound)
async def reviews(
    plugin_id: str,
    request: Request,
    session: DbSession,
    user: OptionalUser,
    page: PageSizeParams,
) -> Response:
    """Ratings of a listed plugin, newest first, with its average and count."""

    async def build(_generation: Generation) -> Built:
        plugin = await service.listed_plugin(session, plugin_id)
        rows, total = await service.reviews_page(session, plugin.id, page)
        items = [
            ReviewOut(
                id=rating.id,
                user_name=name,
                score=rating.score,
                comment=rating.comment,
                created_at=rating.created_at,
            )
            for rating, name in rows
        ]
        return Built(
            ReviewPage(
                items=items,
                total=total,
                page=page.page,
                page_size=page.size,
                average=rating_average(plugin.rating_sum, plugin.rating_count),
                count=plugin.rating_count,
            )
        )

    return await serve_public(request, session, user, build)
