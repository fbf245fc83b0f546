"""The document and the server agree (issue 24 item 4): what a schema refuses the server
refuses, and what the server refuses for its shape the schema refuses too, for each
constraint a generator found out of step."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import PluginVersion
from tests.factories import Factory
from tests.helpers import err, ok
from tests.packages.tarballs import package
from tests.plugins.helpers import publish
from tests.scenarios import helpers as scenarios

BROWSE = "/api/v1/plugins/browse"
UUID_SHAPED = "abcdef12-3456-7890-abcd-ef1234567890"


@pytest.fixture
async def document(client: httpx.AsyncClient) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get("/openapi.json")).json()
    return body


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _component(document: dict[str, Any], model: str, field: str) -> dict[str, Any]:
    schema: dict[str, Any] = document["components"]["schemas"][model]["properties"][field]
    return schema


def _q_schema(document: dict[str, Any]) -> dict[str, Any]:
    parameters = document["paths"][BROWSE]["get"]["parameters"]
    schema: dict[str, Any] = next(p["schema"] for p in parameters if p["name"] == "q")
    return schema


@pytest.mark.parametrize(
    ("q", "accepted"),
    [
        ("weather 天气", True),
        ("a\U000e0001b", True),  # an astral format character: searched (matches nothing)
        ("a\x15b", False),
        ("a\u200bb", False),
        ("line\nbreak", False),
    ],
)
async def test_browse_q_is_refused_exactly_when_its_documented_pattern_refuses_it(
    client: httpx.AsyncClient, document: dict[str, Any], q: str, accepted: bool
) -> None:
    response = await client.get(BROWSE, params={"q": q})

    assert _valid(_q_schema(document), q) is accepted
    if accepted:
        assert ok(response)["items"] == []
    else:
        error = err(response, 400, "VALIDATION_FAILED")
        assert [f["field"] for f in error["details"]["fields"]] == ["q"]


async def test_every_multipart_form_is_documented_closed(document: dict[str, Any]) -> None:
    forms = [
        operation["requestBody"]["content"]["multipart/form-data"]["schema"]
        for item in document["paths"].values()
        for operation in item.values()
        if "multipart/form-data" in operation.get("requestBody", {}).get("content", {})
    ]
    assert len(forms) >= 5
    assert all(form["additionalProperties"] is False for form in forms)


async def test_an_upload_with_a_padded_version_is_refused_as_its_form_says(
    client: httpx.AsyncClient,
    document: dict[str, Any],
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev, type="tool", category="utility")
    manifest = {"id": plugin["pluginKey"], "version": "1.0.0", "main": "index.js"}
    data = package({**manifest, "category": "utility", "type": "tool"}, {"index.js": b"1\n"})
    path = "/api/v1/developer/plugins/{plugin_id}/upload-version"
    form = document["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]

    response = await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/upload-version",
        data={"version": " 1.0.0"},
        files={"file": ("plugin.tar.gz", data, "application/gzip")},
        headers=dev.headers,
    )

    assert response.status_code == 400
    assert not _valid(form["schema"]["properties"]["version"], " 1.0.0")
    async with sessionmaker() as session:
        count = await session.scalar(
            select(func.count())
            .select_from(PluginVersion)
            .where(PluginVersion.plugin_id == plugin["id"])
        )
    assert count == 0


@pytest.mark.parametrize("scenario_id", [UUID_SHAPED, "publish", "scenarios", "Bad-Case"])
async def test_a_scenario_id_the_server_refuses_is_refused_by_its_schema(
    client: httpx.AsyncClient, document: dict[str, Any], factory: Factory, scenario_id: str
) -> None:
    dev = await factory.developer()
    body = scenarios.publish_body(id=scenario_id)

    response = await client.post(f"{scenarios.DEV}/publish", json=body, headers=dev.headers)

    err(response, 400, "SCENARIO_VALIDATION_FAILED")
    assert not _valid(_component(document, "ScenarioPublishIn", "id"), scenario_id)
    assert _valid(_component(document, "ScenarioPublishIn", "id"), "code-review")


async def test_a_manifest_without_its_required_keys_is_refused_by_its_schema_too(
    client: httpx.AsyncClient, document: dict[str, Any], factory: Factory
) -> None:
    admin = await factory.super_admin()
    plugin = await factory.plugin(admin)
    schema = _component(document, "CreateVersionIn", "manifest")

    response = await client.post(
        f"/api/v1/admin/plugins/{plugin.id}/create-version",
        json={"version": "2.0.0", "manifest": {}},
        headers=admin.headers,
    )

    err(response, 400, "PLUGIN_PACKAGE_INVALID")
    assert not _valid(schema, {})
    assert set(schema["required"]) == {"id", "version", "category", "main"}
    complete = {"id": plugin.plugin_key, "version": "2.0.0", "category": "utility", "main": ""}
    assert _valid(schema, complete)


async def test_every_url_parameter_documents_that_nul_is_refused(
    client: httpx.AsyncClient, document: dict[str, Any]
) -> None:
    unguarded = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] not in ("path", "query"):
                    continue
                schema = parameter["schema"]
                for choice in schema.get("anyOf", [schema]):
                    if choice.get("type") == "string" and _valid(choice, "a\x00b"):
                        unguarded.append(f"{method.upper()} {path} {parameter['name']}")
    assert unguarded == []
    response = await client.get("/api/v1/admin/plugins/versions/pending?search=a%00b")
    err(response, 400, "VALIDATION_FAILED")


async def test_a_padded_create_version_version_is_refused_as_its_pattern_says(
    client: httpx.AsyncClient, document: dict[str, Any], factory: Factory
) -> None:
    admin = await factory.super_admin()
    plugin = await factory.plugin(admin)
    manifest = {"id": plugin.plugin_key, "version": "2.0.0", "category": "utility", "main": ""}

    response = await client.post(
        f"/api/v1/admin/plugins/{plugin.id}/create-version",
        json={"version": " 2.0.0 ", "manifest": manifest},
        headers=admin.headers,
    )

    error = err(response, 400, "VALIDATION_FAILED")
    assert [f["field"] for f in error["details"]["fields"]] == ["version"]
    assert not _valid(_component(document, "CreateVersionIn", "version"), " 2.0.0 ")
