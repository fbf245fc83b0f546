"""Strict security headers on every console response, whatever produced it."""

from __future__ import annotations

import httpx
import pytest

from marketplace.web.security import CONTENT_SECURITY_POLICY
from tests.admin_console.helpers import logged_in
from tests.factories import Factory

EXPECTED = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def _assert_strict(response: httpx.Response) -> None:
    for name, value in EXPECTED.items():
        assert response.headers.get(name) == value, (name, response.headers)


def test_the_policy_allows_no_inline_script() -> None:
    assert "unsafe-inline" not in CONTENT_SECURITY_POLICY
    assert "unsafe-eval" not in CONTENT_SECURITY_POLICY


@pytest.mark.parametrize(
    "path", ["/console/login", "/console", "/console/static/site.css", "/console/missing"]
)
async def test_headers_without_a_session(client: httpx.AsyncClient, path: str) -> None:
    _assert_strict(await client.get(path))


@pytest.mark.parametrize(
    "path",
    [
        "/console",
        "/console/categories",
        "/console/audit",
        "/console/no/such/page",
        "/console/plugins/versions/00000000-0000-0000-0000-000000000000",
    ],
)
async def test_headers_with_a_session(
    client: httpx.AsyncClient, factory: Factory, path: str
) -> None:
    await logged_in(client, await factory.admin())
    _assert_strict(await client.get(path))


async def test_headers_on_a_refused_form(client: httpx.AsyncClient, factory: Factory) -> None:
    await logged_in(client, await factory.admin())
    response = await client.post("/console/categories", data={"action": "add"})
    assert response.status_code == 403
    _assert_strict(response)


async def test_api_responses_keep_their_own_headers(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/plugins")
    assert "content-security-policy" not in response.headers


async def test_pages_carry_no_inline_script_or_style(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await logged_in(client, await factory.admin())
    for path in ("/console", "/console/categories", "/console/audit"):
        page = (await client.get(path)).text
        assert "<script" not in page and "style=" not in page and "<style" not in page


async def test_unknown_console_paths_are_a_404_page_not_json(client: httpx.AsyncClient) -> None:
    response = await client.get("/console/no/such/page")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "no such page" in response.text
