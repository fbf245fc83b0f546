"""Routes every site has: its stylesheet, and a 404 page for any other path under it."""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, Request, Response

from marketplace.web.http import PageRefused, redirect, site_router
from marketplace.web.sites import Site

STYLESHEET = files("marketplace.web").joinpath("static/site.css").read_bytes()
_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def stylesheet_route(site: Site) -> APIRouter:
    router = site_router(site)

    async def stylesheet() -> Response:
        return Response(STYLESHEET, media_type="text/css")

    router.add_api_route(f"{site.prefix}/static/site.css", stylesheet, methods=["GET"])
    return router


def last_routes(site: Site) -> APIRouter:
    """Mounted last: any other path under the prefix is a page that does not exist."""
    router = site_router(site)

    async def not_found(_request: Request, rest: str) -> Response:
        if not rest:
            return redirect(site.prefix)
        raise PageRefused(404, f"There is no such page in the {site.name}.")

    router.add_api_route(f"{site.prefix}/{{rest:path}}", not_found, methods=_METHODS)
    return router
