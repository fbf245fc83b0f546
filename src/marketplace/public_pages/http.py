"""Serving the public pages: rendered once per catalogue generation, then shared bytes.

A page is cached like the public API's reads (catalog.cache): the entry is valid for the
catalogue generation it was rendered at, read once per request before anything else, so a
change the database records (a takedown, a new version, a rating, a rename) shows on the
next request, in every process. A hit costs that one read and no database session.

Headers: the sites' security headers (no inline script or style, no framing) and
`Cache-Control: public, no-cache` with an ETag, as the API's public reads: a browser or CDN
may keep a page and revalidate it (a 304 costs one generation read), but never shows a
taken-down plugin from its own copy. Error pages are `no-store`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from fastapi import Request
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.responses import Response

from marketplace.catalog.cache import CachedBody, Generation, catalog_cache
from marketplace.catalog.http import etag_matches, etag_of
from marketplace.config import Settings
from marketplace.errors import ServiceUnavailable
from marketplace.web.security import SECURITY_HEADERS
from marketplace.web.templating import render

log = structlog.get_logger("marketplace.public_pages")

SITE_KEY = "public"  # templates are found as public/<name> (web.templating.SITE_TEMPLATES)
HTML = "text/html; charset=utf-8"
CACHEABLE = "public, no-cache"
NOT_STORED = "no-store"
# The one page URL answering both HTML and JSON (GET /) says so to caches.
VARY_ACCEPT = {"Vary": "Accept"}


def page_headers(cache_control: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The sites' security headers, with this answer's Cache-Control."""
    return {**SECURITY_HEADERS, "Cache-Control": cache_control, **(extra or {})}


def settings_of(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def public_address(request: Request, path: str) -> str:
    """An absolute address of this site (og:url, canonical links): the configured public
    URL, never the request's Host header, which a client chooses."""
    return settings_of(request).public_url.rstrip("/") + path


def render_page(template: str, context: dict[str, Any]) -> bytes:
    return render(SITE_KEY, template, context).encode()


def html_response(
    request: Request,
    body: bytes,
    *,
    status: int = 200,
    etag: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> Response:
    """A page: cacheable with its ETag when it has one (304 when If-None-Match names it),
    not stored otherwise."""
    if etag is None:
        return Response(
            body, status_code=status, media_type=HTML, headers=page_headers(NOT_STORED, extra)
        )
    headers = page_headers(CACHEABLE, {"ETag": etag, **(extra or {})})
    if status == 200 and etag_matches(request, etag):
        return Response(status_code=304, headers=headers)
    return Response(body, status_code=status, media_type=HTML, headers=headers)


@dataclass(frozen=True)
class Rendered:
    """What a cache miss produces: the page's bytes, whether they may be kept for the rest
    of the generation, and its status (an error page is never kept)."""

    body: bytes
    keep: bool = True
    status: int = 200


Build = Callable[[AsyncSession, Generation], Awaitable[Rendered]]


async def cached_page(
    request: Request,
    key: Hashable,
    build: Build,
    extra: Mapping[str, str] | None = None,
) -> Response:
    """The page for `key` at the current generation: the cached bytes, or built in a read
    session (opened only on a miss) and kept."""
    cache = catalog_cache(request.app)
    sessions: async_sessionmaker[AsyncSession] = request.app.state.sessionmaker
    async with sessions() as session:
        # The generation first, then the rows it guards (catalog.cache.read_generation):
        # a page is never built from rows older than the number it is kept under. No
        # statement runs in this session on a hit.
        generation = await cache.generation(session)
        entry = cache.response(generation, key)
        if entry is None:
            rendered = await build(session, generation)
            if rendered.status != 200:
                return html_response(request, rendered.body, status=rendered.status, extra=extra)
            entry = CachedBody(
                body=rendered.body,
                etag=etag_of(rendered.body),
                plugin_ids=(),
                shape="none",
            )
            if rendered.keep:
                cache.store_response(generation, key, entry)
    return html_response(request, entry.body, etag=entry.etag, extra=extra)


ERROR_TITLES = {
    400: "Request refused",
    404: "Not found",
    500: "Something went wrong",
    503: "Not available right now",
}


def error_body(status: int, message: str) -> bytes:
    return render_page(
        "error.html",
        {
            "title": ERROR_TITLES.get(status, "Request refused"),
            "message": message,
            "summary": message,
            "canonical": None,  # no Open Graph card for a page that does not exist
            "noindex": True,
        },
    )


def error_page(
    request: Request, status: int, message: str, extra: Mapping[str, str] | None = None
) -> Response:
    return html_response(request, error_body(status, message), status=status, extra=extra)


def failure_page(
    request: Request, exc: Exception, extra: Mapping[str, str] | None = None
) -> Response:
    """A page for whatever went wrong while building one: never a trace, never JSON. A
    database that cannot answer (or is not migrated yet) is 503 with Retry-After, as the
    API says it."""
    if isinstance(exc, ServiceUnavailable | SQLAlchemyError):
        log.warning("public page unavailable", path=request.url.path, error=type(exc).__name__)
        retry = {**(extra or {}), "Retry-After": "5"}
        return error_page(request, 503, "The catalogue cannot be read right now.", retry)
    log.error("public page failed", path=request.url.path, exc_info=exc)
    return error_page(request, 500, "The page could not be shown.", extra)
