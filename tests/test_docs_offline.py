"""/docs and /redoc load without internet access: every asset they reference is served by
the service itself, with the right content type."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import httpx
import pytest

EXPECTED_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".png": "image/png",
}


class _References(HTMLParser):
    """Every src= and href= of a page, and the URLs its inline scripts name."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        for name, value in attrs:
            if name in ("src", "href", "spec-url") and value:
                self.found.append(value)

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.found += re.findall(r"""url:\s*['"]([^'"]+)['"]""", data)
            self.found += re.findall(r"https?://[^\s'\"`)]+", data)


def _references(page: str) -> list[str]:
    parser = _References()
    parser.feed(page)
    return parser.found


@pytest.mark.parametrize(
    ("page", "assets"),
    [
        (
            "/docs",
            {
                "/static-offline-docs/swagger-ui.css",
                "/static-offline-docs/swagger-ui-bundle.js",
                "/static-offline-docs/favicon.png",
                "/openapi.json",
            },
        ),
        (
            "/redoc",
            {
                "/redoc/redoc.standalone.js",
                "/static-offline-docs/favicon.png",
                "/openapi.json",
            },
        ),
    ],
)
async def test_docs_pages_reference_only_assets_the_service_serves(
    client: httpx.AsyncClient, page: str, assets: set[str]
) -> None:
    response = await client.get(page)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    found = set(_references(response.text))
    # Same origin only: no scheme, no host, no CDN (the default pages use jsdelivr).
    assert found == assets
    assert "cdn." not in response.text and "fonts.googleapis" not in response.text
    for asset in assets:
        served = await client.get(asset)
        assert served.status_code == 200, asset
        suffix = asset[asset.rfind(".") :]
        expected = EXPECTED_TYPES.get(suffix, "application/json")
        assert served.headers["content-type"].startswith(expected), asset
        assert len(served.content) > 1000, asset


async def test_an_unknown_docs_asset_is_the_enveloped_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/static-offline-docs/missing.js")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


_REMOTE = re.compile(r"https?://[^/\s'\"`]+")
# What a script's text fetches by itself: an image or script source, a CSS url() or @import.
_REMOTE_LOADS = re.compile(
    r"""(?:src\s*[:=]\s*|url\(\s*|@import\s+)['"]?(https?://[^'"\s)]+)""", re.IGNORECASE
)


async def test_redoc_asks_no_other_host_for_anything(client: httpx.AsyncClient) -> None:
    """The page names no other host, and neither does its script for what it loads (the
    stock ReDoc script loads its sidebar logo from cdn.redoc.ly)."""
    response = await client.get("/redoc")
    assert response.status_code == 200
    assert _REMOTE.findall(response.text) == []
    scripts = [ref for ref in _references(response.text) if ref.endswith(".js")]
    assert scripts == ["/redoc/redoc.standalone.js"]
    script = await client.get(scripts[0])
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert _REMOTE_LOADS.findall(script.text) == []
    assert "cdn.redoc.ly" not in script.text and "fonts.googleapis" not in script.text
