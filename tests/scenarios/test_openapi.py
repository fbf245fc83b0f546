"""/openapi.json describes the scenario endpoints with their real request and response schemas."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

SCENARIO_OPERATIONS = {
    ("get", "/api/v1/marketplace/developer/scenarios"): "Envelope_DeveloperScenarioList_",
    ("post", "/api/v1/marketplace/developer/publish"): "Envelope_ScenarioDetail_",
    ("get", "/api/v1/marketplace/developer/{scenario_id}"): "Envelope_ScenarioDetail_",
    ("put", "/api/v1/marketplace/developer/{scenario_id}"): "Envelope_ScenarioOut_",
    ("delete", "/api/v1/marketplace/developer/{scenario_id}"): "Envelope_ScenarioTakedownOut_",
    (
        "post",
        "/api/v1/marketplace/developer/{scenario_id}/upload-package",
    ): "Envelope_ScenarioVersionOut_",
    ("get", "/api/v1/admin/scenarios"): "Envelope_AdminScenarioList_",
    ("get", "/api/v1/admin/scenarios/versions/pending"): "Envelope_AdminScenarioVersionList_",
    (
        "post",
        "/api/v1/admin/scenarios/versions/{version_id}/review",
    ): "Envelope_ScenarioVersionOut_",
    (
        "get",
        "/api/v1/admin/scenarios/versions/{version_id}/download",
    ): "Envelope_ScenarioDownloadOut_",
    ("get", "/api/v1/admin/scenarios/{scenario_id}"): "Envelope_ScenarioDetail_",
    ("get", "/api/v1/admin/scenarios/{scenario_id}/versions"): "Envelope_ScenarioVersionItems_",
    ("get", "/api/v1/marketplace/scenarios"): "Envelope_PublicScenarioList_",
    ("get", "/api/v1/marketplace/scenarios/{scenario_id}"): "Envelope_PublicScenarioOut_",
    (
        "get",
        "/api/v1/marketplace/scenarios/{scenario_id}/download",
    ): "Envelope_ScenarioDownloadOut_",
}


@pytest.fixture
async def document(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def _success(operation: dict[str, Any]) -> dict[str, Any]:
    (code,) = [c for c in operation["responses"] if c.startswith("2")]
    schema: dict[str, Any] = operation["responses"][code]["content"]["application/json"]["schema"]
    return schema


@pytest.mark.parametrize(("method", "path"), sorted(SCENARIO_OPERATIONS))
def test_operation_documents_its_envelope_and_errors(
    document: dict[str, Any], method: str, path: str
) -> None:
    operation = document["paths"][path][method]
    expected = SCENARIO_OPERATIONS[(method, path)]
    assert _success(operation) == {"$ref": f"#/components/schemas/{expected}"}
    assert operation["description"]  # the endpoint's docstring
    responses = operation["responses"]
    assert "422" not in responses  # validation failures are 400 in the envelope
    assert responses["4XX"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorEnvelope"
    }


def test_success_codes(document: dict[str, Any]) -> None:
    paths = document["paths"]
    assert "201" in paths["/api/v1/marketplace/developer/publish"]["post"]["responses"]
    upload = paths["/api/v1/marketplace/developer/{scenario_id}/upload-package"]["post"]
    assert "200" in upload["responses"]


def test_request_bodies_are_the_real_models(document: dict[str, Any]) -> None:
    paths, schemas = document["paths"], document["components"]["schemas"]

    def body(method: str, path: str) -> dict[str, Any]:
        content: dict[str, Any] = paths[path][method]["requestBody"]["content"]
        return content

    publish = body("post", "/api/v1/marketplace/developer/publish")["application/json"]["schema"]
    assert publish == {"$ref": "#/components/schemas/ScenarioPublishIn"}
    publish_schema = schemas["ScenarioPublishIn"]
    assert set(publish_schema["required"]) == {"id", "version", "name", "type", "category"}
    assert set(publish_schema["properties"]) == {
        "id",
        "version",
        "name",
        "nameZh",
        "description",
        "descriptionZh",
        "type",
        "category",
        "permissions",
        "changelog",
    }
    assert publish_schema["additionalProperties"] is False
    update = body("put", "/api/v1/marketplace/developer/{scenario_id}")["application/json"]
    assert update["schema"] == {"$ref": "#/components/schemas/ScenarioUpdateIn"}
    assert "permissions" not in schemas["ScenarioUpdateIn"]["properties"]
    form = body("post", "/api/v1/marketplace/developer/{scenario_id}/upload-package")
    form_schema = form["multipart/form-data"]["schema"]
    assert form_schema["required"] == ["file"]
    assert form_schema["properties"]["file"]["format"] == "binary"
    assert set(form_schema["properties"]) == {"file", "version"}
    review = body("post", "/api/v1/admin/scenarios/versions/{version_id}/review")
    assert review["application/json"]["schema"] == {"$ref": "#/components/schemas/VersionReviewIn"}


def test_response_models_carry_the_contract_fields(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert set(schemas["ScenarioOut"]["properties"]) == {
        "id",
        "version",
        "name",
        "nameZh",
        "description",
        "descriptionZh",
        "type",
        "category",
        "permissions",
        "changelog",
        "reviewStatus",
        "sha256",
        "size",
        "ownerId",
        "createdAt",
        "updatedAt",
    }
    assert set(schemas["ScenarioDownloadOut"]["properties"]) >= {
        "url",
        "sha256",
        "size",
        "expiresAt",
    }
    counts = schemas["AdminScenarioList"]["properties"]["counts"]
    assert counts == {"$ref": "#/components/schemas/StatusCounts"}
    assert set(schemas["StatusCounts"]["properties"]) == {
        "all",
        "pending",
        "approved",
        "rejected",
        "taken_down",
    }
