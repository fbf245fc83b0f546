"""What a client finds at the service's own addresses: the service index that `GET /` answers
to API clients (where to go from here) and ReDoc without internet access. The route of `GET /`
itself lives with the public pages (marketplace.public_pages.landing): a browser gets the
landing page there, which needs the catalogue, and kit imports no domain package.

fastapi-offline serves ReDoc's script from the package, but the script itself still loads
the sidebar's "API docs by Redocly" logo from cdn.redoc.ly; the copy served here carries a
transparent inline image instead, so the page asks no other host for anything.
"""

from __future__ import annotations

import functools
from pathlib import Path

import anyio.to_thread
import fastapi_offline
from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html
from starlette.responses import HTMLResponse, Response

from marketplace.kit.schemas import Envelope, OutputModel

CONSOLE = "/console"
DOCS = "/docs"
OPENAPI = "/openapi.json"
REDOC = "/redoc"
REDOC_SCRIPT = "/redoc/redoc.standalone.js"
FAVICON = "/static-offline-docs/favicon.png"

_PACKAGED_REDOC = Path(fastapi_offline.__file__).parent / "static" / "redoc.standalone.js"
_CDN_LOGO = b'"https://cdn.redoc.ly/redoc/logo-mini.svg"'
# A 1x1 transparent GIF: the sidebar keeps its link text and loses only the remote picture.
_NO_LOGO = b'"data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"'

router = APIRouter(redirect_slashes=False)


class ServiceIndex(OutputModel):
    name: str
    console: str
    docs: str
    openapi: str


def service_index(request: Request) -> Envelope[ServiceIndex]:
    """The service's name and the addresses of the console, the API documentation and the
    OpenAPI document: what `GET /` answers a client that does not ask for HTML."""
    root = request.scope.get("root_path", "")
    return Envelope(
        data=ServiceIndex(
            name=request.app.title,
            console=f"{root}{CONSOLE}",
            docs=f"{root}{DOCS}",
            openapi=f"{root}{OPENAPI}",
        )
    )


@router.get(REDOC, include_in_schema=False)
async def redoc(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    return get_redoc_html(
        openapi_url=f"{root}{OPENAPI}",
        title=f"{request.app.title} - ReDoc",
        redoc_js_url=f"{root}{REDOC_SCRIPT}",
        redoc_favicon_url=f"{root}{FAVICON}",
        with_google_fonts=False,
    )


@functools.cache
def offline_redoc_script() -> bytes:
    """The packaged ReDoc script with its one remote image replaced; a release of the
    package that loads something else from a CDN fails the docs test, not a reader."""
    return _PACKAGED_REDOC.read_bytes().replace(_CDN_LOGO, _NO_LOGO)


@router.get(REDOC_SCRIPT, include_in_schema=False)
async def redoc_script() -> Response:
    return Response(
        await anyio.to_thread.run_sync(offline_redoc_script),
        media_type="text/javascript; charset=utf-8",
        headers={"Cache-Control": "public, max-age=86400"},
    )
