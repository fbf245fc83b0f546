"""Tokens, the return path after login, and the headers every console response carries."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PREFIX = "/console"
HOME = PREFIX

# No inline script or style anywhere, so none is allowed (CSP level 3 wording).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def new_token() -> str:
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def same_token(given: str | None, expected: str) -> bool:
    """Constant-time comparison; a missing value never matches."""
    if not given:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def is_console_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def safe_next(value: str | None) -> str:
    """Where to go after logging in: a console page of this site, or the queue.

    Anything with a scheme or host, a backslash, control characters or dot segments
    (browsers resolve `%2e%2e` too) could leave the console, so it is ignored.
    """
    if not value or len(value) > 2000 or not value.isprintable() or "\\" in value:
        return HOME
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or not is_console_path(parts.path):
        return HOME
    for segment in parts.path.split("/"):
        if segment in (".", "..") or "%2e" in segment.lower():
            return HOME
    if parts.path.startswith((PREFIX + "/login", PREFIX + "/logout")):
        return HOME
    return value


class ConsoleHeadersMiddleware:
    """Security headers on every response under /console, whichever layer produced it
    (a page, the static stylesheet, a 404, a rate-limit refusal)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_console_path(scope["path"]):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)
