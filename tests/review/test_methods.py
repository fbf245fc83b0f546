"""OPTIONS, HEAD, 405 and trailing slashes answer what the routes really do."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.factories import Factory
from tests.helpers import ok
from tests.plugins.helpers import publish_body

SAMPLE = "x1"


@pytest.fixture
async def document(client: httpx.AsyncClient) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get("/openapi.json")).json()
    return body


def _concrete(template: str) -> str:
    return re.sub(r"\{[^}]+\}", SAMPLE, template)


def _expected_allow(document: dict[str, Any], path: str) -> set[str]:
    """As OpenAPI matches paths: a documented concrete path's own methods, else those of
    every documented template the path matches."""
    methods: set[str] = {"OPTIONS"}
    if path in document["paths"]:
        methods |= {m.upper() for m in document["paths"][path]}
    else:
        for template, item in document["paths"].items():
            pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
            if re.match(pattern, path):
                methods |= {m.upper() for m in item}
    if "GET" in methods:
        methods.add("HEAD")
    return methods


async def test_options_lists_every_method_of_every_documented_path(
    client: httpx.AsyncClient, document: dict[str, Any]
) -> None:
    wrong = {}
    for template in document["paths"]:
        path = _concrete(template)
        response = await client.options(path)
        allow = {m.strip() for m in response.headers.get("allow", "").split(",") if m.strip()}
        expected = _expected_allow(document, path)
        if response.status_code != 204 or allow != expected:
            wrong[path] = (response.status_code, sorted(allow), sorted(expected))
    assert wrong == {}


async def test_options_on_a_path_with_three_routes_names_all_their_methods(
    client: httpx.AsyncClient,
) -> None:
    response = await client.options("/api/v1/developer/plugins/some-plugin")
    assert response.status_code == 204
    assert response.headers["allow"] == "GET, HEAD, PUT, DELETE, OPTIONS"
    assert response.content == b""


async def test_options_on_an_unknown_path_is_not_found_in_the_envelope(
    client: httpx.AsyncClient,
) -> None:
    response = await client.options("/api/v1/nothing/here")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


async def test_method_not_allowed_names_every_method_of_the_path(
    client: httpx.AsyncClient,
) -> None:
    response = await client.patch("/api/v1/developer/plugins/some-plugin")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert response.headers["allow"] == "GET, HEAD, PUT, DELETE, OPTIONS"


async def test_head_answers_like_get_without_a_body(client: httpx.AsyncClient) -> None:
    get = await client.get("/api/v1/plugins/categories")
    head = await client.head("/api/v1/plugins/categories")
    assert (get.status_code, head.status_code) == (200, 200)
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.headers["content-length"] == get.headers["content-length"]


@pytest.mark.parametrize(
    "path", ["/api/v1/plugins/browse/", "/api/v1/plugins/categories/", "/api/v1/auth/me/"]
)
async def test_trailing_slash_is_not_found_not_a_redirect(
    client: httpx.AsyncClient, path: str
) -> None:
    response = await client.get(path)
    assert response.status_code == 404
    assert "location" not in response.headers
    assert response.json() == {
        "success": False,
        "error": {"code": "NOT_FOUND", "message": "Not found", "details": {}},
    }


UNDOCUMENTED = ("GET", "POST", "PUT", "PATCH", "DELETE")


async def test_every_other_method_of_every_documented_path_is_405_with_the_documented_allow(
    client: httpx.AsyncClient, document: dict[str, Any]
) -> None:
    wrong = {}
    for template, item in document["paths"].items():
        path = _concrete(template)
        expected = _expected_allow(document, path)
        for method in UNDOCUMENTED:
            if method.lower() in item:
                continue
            response = await client.request(method, path)
            allow = {m.strip() for m in response.headers.get("allow", "").split(",")}
            if response.status_code != 405 or allow != expected:
                wrong[f"{method} {path}"] = (response.status_code, sorted(allow))
    assert wrong == {}


async def test_a_concrete_path_is_not_taken_by_a_template_for_its_missing_methods(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    # "publish" is reserved now; a plugin keyed so before that stays reachable by its id.
    dev = await factory.developer()
    legacy = await factory.plugin(dev, plugin_key="publish")
    plugin = {"id": legacy.id}

    response = await client.delete("/api/v1/developer/plugins/publish", headers=dev.headers)

    assert response.status_code == 405
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert response.headers["allow"] == "POST, OPTIONS"
    # The plugin whose key is "publish" is still there, and reachable by its id.
    detail = await client.get(f"/api/v1/developer/plugins/{plugin['id']}", headers=dev.headers)
    assert ok(detail)["pluginKey"] == "publish"


async def test_the_words_of_concrete_paths_are_refused_as_plugin_keys(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    for key in ("publish", "categories", "scenarios"):
        body = publish_body(pluginKey=key)
        response = await client.post(
            "/api/v1/developer/plugins/publish", json=body, headers=dev.headers
        )
        assert response.status_code == 400, key
        assert "reserved" in response.text


async def test_console_pages_keep_routings_answers(client: httpx.AsyncClient) -> None:
    # A console page is not in the document: the concrete-path rule leaves it alone.
    response = await client.get("/console/logout")
    assert "application/json" not in response.headers.get("content-type", "")
