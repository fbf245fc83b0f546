"""Request hygiene before routing: no NUL characters in URLs (no database can store or
compare them). Bodies are capped by the route class (marketplace.kit.routing)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from marketplace.errors import ValidationFailed
from marketplace.kit.errors_http import error_response
from marketplace.kit.routing import amend_openapi


class RequestGuardMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _has_nul(scope):
            error = ValidationFailed("NUL characters are not allowed in URLs")
            response = error_response(error.status_code, error.code, error.message, error.details)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _has_nul(scope: Scope) -> bool:
    query: bytes = scope.get("query_string", b"")
    return "\x00" in scope["path"] or b"\x00" in query or b"%00" in query


# What every string in a URL matches (the guard above): documented on each path and query
# parameter whose own pattern does not already say more.
NO_NUL_PATTERN = "^[^\\u0000]*$"


def install_no_nul_parameters_in_openapi(app: FastAPI) -> None:
    """URL parameters document the guard's rule."""
    amend_openapi(app, _no_nul_parameters)


def _no_nul_parameters(document: dict[str, Any]) -> None:
    for item in document.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") in ("path", "query"):
                    _no_nul(parameter.get("schema", {}))


def _no_nul(schema: dict[str, Any]) -> None:
    for choice in schema.get("anyOf", [schema]):
        if choice.get("type") == "string" and "pattern" not in choice and "enum" not in choice:
            choice["pattern"] = NO_NUL_PATTERN
