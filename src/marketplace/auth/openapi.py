"""The OpenAPI document states which operations work without a token.

FastAPI lists the bearer scheme as required on every operation that uses it, even through
`optional_user` (`auto_error=False`). An operation whose dependencies reach `optional_user`
but never `current_user` works anonymously (a token only adds the caller's own state), so
its security is rewritten to `[{}, {"HTTPBearer": []}]`: anonymous, or a bearer token.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import RouteContext, iter_route_contexts

from marketplace.auth.deps import current_user, optional_user

BEARER_SCHEME = "HTTPBearer"
OPTIONAL_BEARER: list[dict[str, list[str]]] = [{}, {BEARER_SCHEME: []}]


def _calls(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _calls(sub)


def auth_is_optional(route: RouteContext) -> bool:
    """True when the route reads a token if one is sent but never requires it."""
    dependant = getattr(route, "dependant", None)
    if not isinstance(dependant, Dependant):
        return False
    calls = set(_calls(dependant))
    return optional_user in calls and current_user not in calls


def install_optional_auth_in_openapi(app: FastAPI) -> None:
    """Wrap `app.openapi` so that anonymous-friendly operations show optional security."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()
        # Included routers are flattened the way FastAPI itself walks them for the document.
        for route in iter_route_contexts(app.routes):
            if not auth_is_optional(route) or route.path_format is None:
                continue
            item = document["paths"].get(route.path_format, {})
            for method in route.methods or ():
                operation = item.get(method.lower())
                if operation is not None:
                    operation["security"] = OPTIONAL_BEARER
        return document

    app.openapi = openapi  # type: ignore[method-assign]
