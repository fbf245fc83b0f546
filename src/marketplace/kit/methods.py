"""Methods per path, stated truthfully: OPTIONS, HEAD and the `Allow` header.

Routing alone answers OPTIONS with 405, and its `Allow` names only the first route whose
path matched, so `/developer/plugins/{id}` (GET, PUT, DELETE on three routes) advertised
GET alone. Here, before routing, every route whose path matches is asked:
- OPTIONS answers 204 with `Allow` listing the union of their methods, plus HEAD where GET
  is there and OPTIONS itself; 404 NOT_FOUND in the envelope where no route matches.
- HEAD on a path that has GET but no HEAD route is served as that GET without its body.
- Any other method the path lacks answers 405 METHOD_NOT_ALLOWED with that same `Allow`.

A concrete path owns its methods, as OpenAPI reads paths ("concrete paths are matched before
their templated counterparts"): `PUT /admin/plugins/categories` is 405 with `Allow: GET,
HEAD, POST, OPTIONS`, not a PUT to a plugin whose key is "categories" through
`/admin/plugins/{plugin_id}`. So `Allow` and the document agree on every path.
"""

from __future__ import annotations

from typing import Any

from fastapi.routing import iter_route_contexts
from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from marketplace.kit.errors_http import error_response

_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def path_methods(routes: Any, scope: Scope) -> set[str]:
    """The methods of the request's path: those of the routes whose concrete path is the
    request's, else of every templated route whose path matches (any method)."""
    concrete: set[str] = set()
    templated: set[str] = set()
    for route in iter_route_contexts(routes):
        route_methods = route.methods
        if not route_methods:
            continue  # mounts and websocket routes: not ours to describe
        match, _ = route.matches(scope)
        if match != Match.NONE:
            (templated if route.param_convertors else concrete).update(route_methods)
    return concrete or templated


def concrete_paths(routes: Any) -> dict[str, frozenset[str]]:
    """Each documented concrete (parameter-free) path and the methods its routes serve. The
    console's pages are not in the document and keep routing's own answers."""
    paths: dict[str, set[str]] = {}
    for route in iter_route_contexts(routes):
        documented = getattr(route, "include_in_schema", False)
        if route.methods and route.path and documented and not route.param_convertors:
            paths.setdefault(route.path, set()).update(route.methods)
    return {path: frozenset(methods) for path, methods in paths.items()}


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
        self._concrete: dict[str, frozenset[str]] = {}
        self._concrete_of: tuple[int, int] | None = None  # (id, length) of the routes read

    def _concrete_methods(self, routes: Any, path: str) -> frozenset[str] | None:
        # Routes are fixed once the app serves (tests may add some): one dict lookup a request.
        shape = (id(routes), len(routes))
        if shape != self._concrete_of:
            self._concrete, self._concrete_of = concrete_paths(routes), shape
        return self._concrete.get(path)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method")
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        owned = self._concrete_methods(scope["app"].routes, _route_path(scope))
        if owned is not None and method not in owned and method not in ("OPTIONS", "HEAD"):
            # A templated route would take it (`{plugin_id}` = "categories"): not this path's.
            await _method_not_allowed(set(owned))(scope, receive, send)
            return
        if method not in ("OPTIONS", "HEAD"):
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


def _route_path(scope: Scope) -> str:
    # Routes are matched on the path below the app's root (a proxy's prefix).
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _method_not_allowed(methods: set[str]) -> Response:
    # The words routing's own 405 has (kit.errors_http renders Starlette's "Method Not Allowed").
    return error_response(
        405, "METHOD_NOT_ALLOWED", "Method Not Allowed", headers={"Allow": allow_header(methods)}
    )


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
