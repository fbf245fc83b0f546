"""`GET /` is no dead end: a browser gets the landing page (tests/public_pages), any other
client gets the service's name and where its console and documentation are."""

from __future__ import annotations

from typing import Any

import httpx

from tests.helpers import ok


async def test_a_browser_at_the_root_gets_the_landing_page(client: httpx.AsyncClient) -> None:
    response = await client.get(
        "/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["vary"] == "Accept"
    for link in ("/portal", "/console", "/docs"):
        assert f'href="{link}"' in response.text
    console = await client.get("/console", follow_redirects=True)
    assert console.status_code == 200
    assert "Log in" in console.text


async def test_any_other_client_at_the_root_gets_the_links(client: httpx.AsyncClient) -> None:
    response = await client.get("/", headers={"Accept": "application/json"})
    assert response.headers["vary"] == "Accept"  # the same URL answers browsers with HTML
    data = ok(response)
    assert data == {
        "name": "Plugin and Scenario Marketplace",
        "console": "/console",
        "docs": "/docs",
        "openapi": "/openapi.json",
    }
    for link in ("docs", "openapi"):
        assert (await client.get(data[link])).status_code == 200
    assert ok(await client.get("/"))["console"] == "/console"  # no Accept header at all


async def test_the_root_is_documented(client: httpx.AsyncClient) -> None:
    document: dict[str, Any] = (await client.get("/openapi.json")).json()
    operation = document["paths"]["/"]["get"]
    assert "reviewer console" in operation["description"]
    assert "landing page" in operation["description"]
    assert set(operation["responses"]["200"]["content"]) == {"application/json", "text/html"}
    assert "307" not in operation["responses"]
