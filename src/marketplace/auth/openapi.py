"""The OpenAPI document states which operations work without a token, and which error
codes each operation can answer.

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
from marketplace.errors import RateLimitExceeded, TooLarge, ValidationFailed
from marketplace.kit.error_codes import ErrorCode, code_of, declared

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


# Errors any operation with these inputs can answer, whatever it declares.
_PARAMETERS_INVALID = code_of(ValidationFailed)
_BODY_TOO_LARGE = code_of(TooLarge)
_RATE_LIMITED = code_of(RateLimitExceeded)
ERROR_ENVELOPE = {"$ref": "#/components/schemas/ErrorEnvelope"}


def _inputs(dependant: Dependant) -> tuple[bool, bool]:
    """(takes path, query, header or cookie parameters; takes a body), dependencies included."""
    params = bool(
        dependant.path_params
        or dependant.query_params
        or dependant.header_params
        or dependant.cookie_params
    )
    body = bool(dependant.body_params)
    for sub in dependant.dependencies:
        sub_params, sub_body = _inputs(sub)
        params, body = params or sub_params, body or sub_body
    return params, body


def operation_errors(route: RouteContext) -> set[ErrorCode]:
    """What an operation can answer besides success: the codes declared (`@raises`) by its
    endpoint and by every dependency it reaches (the token, role and lookup dependencies
    declare 401, 403 and their 404s), 400 VALIDATION_FAILED when it takes any input, 413
    when it reads a JSON body (capped by the route class), and 429 (every route is rate
    limited)."""
    dependant = getattr(route, "dependant", None)
    endpoint = getattr(route, "endpoint", None)
    codes: set[ErrorCode] = {_RATE_LIMITED}
    if endpoint is not None:
        codes |= declared(endpoint)
    if isinstance(dependant, Dependant):
        for call in _calls(dependant):
            codes |= declared(call)
    original = getattr(route, "original_route", route)
    if isinstance(dependant, Dependant):
        params, body = _inputs(dependant)
        if params:
            codes.add(_PARAMETERS_INVALID)
        if body:  # the route class says which code (the scenario groups have their own)
            codes.add(code_of(getattr(original, "body_validation_error", ValidationFailed)))
    # The route class (kit.routing.ApiRoute) caps JSON bodies; streamed uploads cap their own
    # and declare their 413 codes.
    if getattr(original, "body_field", None) is not None and not getattr(
        original, "streams_body", True
    ):
        codes.add(_BODY_TOO_LARGE)
    return codes


def error_responses(codes: set[ErrorCode]) -> dict[str, dict[str, Any]]:
    """One response per status, naming its codes (description and `x-error-codes`)."""
    by_status: dict[int, set[str]] = {}
    for status, code in codes:
        by_status.setdefault(status, set()).add(code)
    return {
        str(status): {
            "description": ", ".join(sorted(names)),
            "x-error-codes": sorted(names),
            "content": {"application/json": {"schema": ERROR_ENVELOPE}},
        }
        for status, names in sorted(by_status.items())
    }


def install_error_codes_in_openapi(app: FastAPI) -> None:
    """Wrap `app.openapi` so that each operation lists the statuses and codes it can answer
    (the generic 4XX stays, for what no operation declares: 404 of an unknown route, 405)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()
        for route in iter_route_contexts(app.routes):
            if route.path_format is None or not getattr(route, "include_in_schema", False):
                continue
            item = document["paths"].get(route.path_format, {})
            responses = error_responses(operation_errors(route))
            for method in route.methods or ():
                operation = item.get(method.lower())
                if operation is not None:
                    operation["responses"].update(responses)
        return document

    app.openapi = openapi  # type: ignore[method-assign]
