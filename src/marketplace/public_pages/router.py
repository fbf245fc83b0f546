"""The public pages' routes: the landing page at `/`, a page per listed plugin, and the
shared stylesheet at a path of their own."""

from __future__ import annotations

import hashlib

from fastapi import APIRouter, Request
from starlette.responses import Response

from marketplace.public_pages import landing, plugin_page
from marketplace.public_pages.http import page_headers
from marketplace.web.routes import STYLESHEET

STYLESHEET_PATH = "/static/site.css"
# The stylesheet changes with a release only: revalidated after five minutes by its ETag.
_STYLESHEET_ETAG = '"' + hashlib.blake2b(STYLESHEET, digest_size=16).hexdigest() + '"'

router = APIRouter(redirect_slashes=False)


@router.get(STYLESHEET_PATH, include_in_schema=False)
async def stylesheet(request: Request) -> Response:
    headers = page_headers("public, max-age=300", {"ETag": _STYLESHEET_ETAG})
    if request.headers.get("if-none-match") == _STYLESHEET_ETAG:
        return Response(status_code=304, headers=headers)
    return Response(STYLESHEET, media_type="text/css; charset=utf-8", headers=headers)


router.include_router(landing.router)
router.include_router(plugin_page.router)
