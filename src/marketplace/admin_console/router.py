"""All console routes under /console, its stylesheet, and a 404 page for the rest."""

from __future__ import annotations

from importlib.resources import files

from fastapi import Request, Response

from marketplace.admin_console import (
    audit,
    categories,
    developers,
    log,
    login,
    plugins,
    queue,
    versions,
)
from marketplace.admin_console.http import PageRefused, console_router, redirect

STYLESHEET = files("marketplace.admin_console").joinpath("static/console.css").read_bytes()

router = console_router()


@router.get("/console/static/console.css")
async def stylesheet() -> Response:
    return Response(STYLESHEET, media_type="text/css")


for part in (login, queue, versions, plugins, developers, categories, audit, log):
    router.include_router(part.router)

_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


@router.api_route("/console/{rest:path}", methods=_METHODS)
async def not_found(_request: Request, rest: str) -> Response:
    """Last: any other path under /console is a page that does not exist."""
    if not rest:
        return redirect("/console")
    raise PageRefused(404, "There is no such page in the console.")
