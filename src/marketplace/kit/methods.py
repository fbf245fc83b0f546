"""Methods per path, stated truthfully: OPTIONS, HEAD and the `Allow` header.

Routing alone answers OPTIONS with 405, and its `Allow` names only the first route whose
path matched, so `/developer/plugins/{id}` (GET, PUT, DELETE on three routes) advertised
GET alone. Here, before routing, every route whose path matches is asked:
- OPTIONS answers 204 with `Allow` listing the union of their methods, plus HEAD where GET
  is there and OPTIONS itself; 404 NOT_FOUND in the envelope where no route matches.
- HEAD on a path that has GET but no HEAD route is served as that GET without its body.
- Any other method the path lacks answers 405 METHOD_NOT_ALLOWED with that same `Allow`.
"""

from __future__ import annotations

from typing import Any

from fastapi.routing import iter_route_contexts
from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def path_methods(routes: Any, scope: Scope) -> set[str]:
    """The methods of every route whose path matches the request's (any method)."""
    methods: set[str] = set()
    for route in iter_route_contexts(routes):
        route_methods = route.methods
        if not route_methods:
            continue  # mounts and websocket routes: not ours to describe
        match, _ = route.matches(scope)
        if match != Match.NONE:
            methods |= set(route_methods)
    return methods


def allow_header(methods: set[str]) -> str:
    allowed = set(methods) | {"OPTIONS"}
    if "GET" in allowed:
        allowed.add("HEAD")
    return ", ".join(sorted(allowed, key=_rank))


def _rank(method: str) -> tuple[int, str]:
    return (_ORDER.index(method), "") if method in _ORDER else (len(_ORDER), method)


class AllowedMethodsMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method")
        if scope["type"] != "http" or method not in ("OPTIONS", "HEAD"):
            # Only a 405 needs the routes walked (routing's `Allow` names one route's methods).
            await self.app(scope, receive, _fix_allow_on_405(scope, send))
            return
        methods = path_methods(scope["app"].routes, scope)
        if not methods or method in methods:
            await self.app(scope, receive, send)  # unknown paths: routing's own 404
        elif method == "OPTIONS":
            await Response(status_code=204, headers={"Allow": allow_header(methods)})(
                scope, receive, send
            )
        elif "GET" in methods:
            await self.app({**scope, "method": "GET"}, receive, _without_body(send))
        else:
            await self.app(scope, receive, _fix_allow_on_405(scope, send))


def _fix_allow_on_405(scope: Scope, send: Send) -> Send:
    async def send_with_allow(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 405:
            headers = MutableHeaders(scope=message)
            headers["Allow"] = allow_header(path_methods(scope["app"].routes, scope))
        await send(message)

    return send_with_allow


def _without_body(send: Send) -> Send:
    async def send_head(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return send_head
