"""Request hygiene before routing: no NUL characters in URLs (no database can store or
compare them). Bodies are capped by the route class (marketplace.kit.routing)."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from marketplace.errors import ValidationFailed
from marketplace.kit.errors_http import error_response


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
