"""No route shadows another: the order routers are included in (app.py puts the public
reads first, as most of the traffic) decides only how soon a route is found, never which.

For every operation, a path made from its template (each parameter a value no literal
segment has) is dispatched by Starlette's matching, in order, to that same operation.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match

SAMPLE = "sample-9f3c"


def _operations(routes: list[BaseRoute]) -> list[APIRoute]:
    found: list[APIRoute] = []
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            found += _operations(inner.routes)
        elif isinstance(route, APIRoute):
            found.append(route)
    return found


def _concrete(template: str) -> str:
    path = re.sub(r"\{[^}:]+:path\}", f"{SAMPLE}/{SAMPLE}", template)
    return re.sub(r"\{[^}]+\}", SAMPLE, path)


def _scope(method: str, path: str) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "query_string": b"",
        "headers": [],
    }


def _first_full_match(routes: list[BaseRoute], method: str, path: str) -> Any:
    for route in routes:
        if hasattr(route, "_match"):  # an included router: which of its routes matched
            match, _child, chosen, _context = route._match(_scope(method, path))
        else:
            match, _child = route.matches(_scope(method, path))
            chosen = route
        if match == Match.FULL:
            while hasattr(chosen, "_match"):  # a router included in an included router
                chosen = chosen._match(_scope(method, path))[2]
            return chosen
    return None


def test_every_operation_is_reached_by_its_own_paths(app: FastAPI) -> None:
    operations = _operations(app.router.routes)
    assert len(operations) > 50
    for operation in operations:
        for method in operation.methods:
            path = _concrete(operation.path)
            chosen = _first_full_match(app.router.routes, method, path)
            assert chosen is not None, (method, path)
            assert getattr(chosen, "path", None) == operation.path, (method, path, chosen)
            assert getattr(chosen, "endpoint", None) is operation.endpoint, (method, path)


def test_the_public_reads_are_tried_first(app: FastAPI) -> None:
    # Routes are tried in order: browse is found among the first included routers.
    position = next(
        index
        for index, route in enumerate(app.router.routes)
        if _first_full_match([route], "GET", "/api/v1/plugins/browse") is not None
    )
    first_router = next(i for i, route in enumerate(app.router.routes) if hasattr(route, "_match"))
    assert position - first_router <= 2
