"""Per-IP read limits and per-user write limits, applied before routing."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from marketplace.auth.ratelimit import RateLimiter
from marketplace.auth.tokens import decode_access_token
from marketplace.errors import RateLimitExceeded
from marketplace.kit.errors_http import error_response

_UNLIMITED = ("/healthz", "/readyz", "/metrics")


class RateLimitMiddleware:
    def __init__(self, app: ASGIApp, limiter: RateLimiter, secret: str) -> None:
        self.app = app
        self.limiter = limiter
        self.secret = secret

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.limiter.enabled or scope["path"] in _UNLIMITED:
            await self.app(scope, receive, send)
            return
        try:
            if scope["method"] in ("GET", "HEAD", "OPTIONS"):
                await self.limiter.hit(self.limiter.read, "read", _client_ip(scope))
            else:
                await self.limiter.hit(self.limiter.write, "write", self._caller(scope))
        except RateLimitExceeded as exc:
            response = error_response(
                exc.status_code, exc.code, exc.message, exc.details, exc.headers
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _caller(self, scope: Scope) -> str:
        for key, value in scope.get("headers", []):
            if key == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer":
                    claims = decode_access_token(token.strip(), self.secret)
                    if claims is not None:
                        return "user:" + claims.user_id
        return "ip:" + _client_ip(scope)


def _client_ip(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"
