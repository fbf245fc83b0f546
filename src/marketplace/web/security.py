"""Tokens, the return path after login, and the headers every site response carries."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from marketplace.web.sites import SITES, Site

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


def safe_next(site: Site, value: str | None) -> str:
    """Where to go after logging in: a page of the same site, or its home.

    Anything with a scheme or host, a backslash, control characters or dot segments
    (browsers resolve `%2e%2e` too) could leave the site, so it is ignored.
    """
    home = site.prefix
    if not value or len(value) > 2000 or not value.isprintable() or "\\" in value:
        return home
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or not site.owns(parts.path):
        return home
    for segment in parts.path.split("/"):
        if segment in (".", "..") or "%2e" in segment.lower():
            return home
    if parts.path.startswith((site.login_path, site.logout_path)):
        return home
    return value


def is_site_path(path: str) -> bool:
    return any(site.owns(path) for site in SITES)


class SiteHeadersMiddleware:
    """Security headers on every response under a site's prefix, whichever layer produced
    it (a page, the static stylesheet, a 404, a rate-limit refusal)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_site_path(scope["path"]):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)
