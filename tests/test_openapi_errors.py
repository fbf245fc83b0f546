"""Each operation's OpenAPI lists the statuses and CONTRACT codes it can answer.

The lists are derived (`auth.openapi.operation_errors`): codes declared with `@raises` on
the endpoint and on every dependency it reaches, 400 for any input, 413 for a capped JSON
body, 429 everywhere. These tests pin a few operations exactly and check that no operation
forgets its auth and validation codes.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from marketplace.errors import AppError

ENVELOPE = {"$ref": "#/components/schemas/ErrorEnvelope"}


def _error_classes(base: type[AppError]) -> list[type[AppError]]:
    found = [base]
    for sub in base.__subclasses__():
        found += _error_classes(sub)
    return found


# status -> the codes error classes answer with at that status
KNOWN: dict[str, set[str]] = {}
for _error in _error_classes(AppError):
    KNOWN.setdefault(str(_error.status_code), set()).add(_error.code)


@pytest.fixture
async def document(client: httpx.AsyncClient) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get("/openapi.json")).json()
    return body


def _errors(operation: dict[str, Any]) -> dict[str, list[str]]:
    return {
        status: response["x-error-codes"]
        for status, response in operation["responses"].items()
        if "x-error-codes" in response
    }


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        (
            "POST",
            "/api/v1/developer/plugins/{plugin_id}/upload-version",
            {
                "400": ["PLUGIN_PACKAGE_INVALID", "VALIDATION_FAILED"],
                "401": ["UNAUTHORIZED"],
                "403": ["DEVELOPER_NOT_VERIFIED", "FORBIDDEN", "PLUGIN_NOT_OWNED"],
                "404": ["PLUGIN_NOT_FOUND"],
                "409": ["INVALID_STATE", "PLUGIN_VERSION_EXISTS"],
                "413": ["PLUGIN_PACKAGE_TOO_LARGE"],
                "429": ["RATE_LIMIT_EXCEEDED"],
            },
        ),
        (
            "POST",
            "/api/v1/auth/register",
            {
                "400": ["VALIDATION_FAILED"],
                "409": ["EMAIL_EXISTS"],
                "413": ["PAYLOAD_TOO_LARGE"],
                "429": ["RATE_LIMIT_EXCEEDED"],
            },
        ),
        (
            "GET",
            "/api/v1/auth/me",
            {"401": ["UNAUTHORIZED"], "403": ["FORBIDDEN"], "429": ["RATE_LIMIT_EXCEEDED"]},
        ),
        (
            "POST",
            "/api/v1/plugins/purchase/{plugin_id}",
            {
                "400": ["PLUGIN_IS_FREE", "VALIDATION_FAILED"],
                "401": ["UNAUTHORIZED"],
                "402": ["PLUGIN_NOT_PURCHASED"],
                "403": ["FORBIDDEN"],
                "404": ["PLUGIN_NOT_FOUND"],
                "409": ["INVALID_STATE"],
                "413": ["PAYLOAD_TOO_LARGE"],
                "429": ["RATE_LIMIT_EXCEEDED"],
            },
        ),
        (
            "PUT",
            "/api/v1/marketplace/developer/{scenario_id}",
            {
                "400": ["SCENARIO_VALIDATION_FAILED", "VALIDATION_FAILED"],
                "401": ["UNAUTHORIZED"],
                "403": ["DEVELOPER_NOT_VERIFIED", "FORBIDDEN", "SCENARIO_NOT_OWNED"],
                "404": ["SCENARIO_NOT_FOUND"],
                "409": ["INVALID_STATE"],
                "413": ["PAYLOAD_TOO_LARGE"],
                "429": ["RATE_LIMIT_EXCEEDED"],
            },
        ),
        (
            "GET",
            "/api/v1/admin/plugins/{plugin_id}",
            {
                "400": ["VALIDATION_FAILED"],
                "401": ["UNAUTHORIZED"],
                "403": ["FORBIDDEN"],
                "404": ["PLUGIN_NOT_FOUND"],
                "429": ["RATE_LIMIT_EXCEEDED"],
            },
        ),
    ],
)
def test_an_operation_lists_exactly_the_codes_it_can_answer(
    document: dict[str, Any], method: str, path: str, expected: dict[str, list[str]]
) -> None:
    operation = document["paths"][path][method.lower()]
    assert _errors(operation) == expected
    for status, codes in expected.items():
        response = operation["responses"][status]
        assert response["description"] == ", ".join(codes)
        assert response["content"]["application/json"]["schema"] == ENVELOPE


def test_every_operation_lists_its_auth_and_validation_codes(document: dict[str, Any]) -> None:
    missing = []
    for method, path, operation in _operations(document):
        errors = _errors(operation)
        codes = {code for names in errors.values() for code in names}
        needs = {"RATE_LIMIT_EXCEEDED"}
        if operation.get("security"):  # a token is read (required or optional): 401 and 403
            needs |= {"UNAUTHORIZED", "FORBIDDEN"}
        takes_input = operation.get("parameters") or operation.get("requestBody")
        if takes_input and not codes & {"VALIDATION_FAILED", "SCENARIO_VALIDATION_FAILED"}:
            missing.append(f"{method} {path}: no validation code")
        if needs - codes:
            missing.append(f"{method} {path}: {sorted(needs - codes)}")
        # Each code is listed under the status its error class answers with.
        for status, names in errors.items():
            missing += [f"{method} {path}: {status} {n}" for n in names if n not in KNOWN[status]]
    assert missing == []


def test_path_ids_list_their_not_found_code(document: dict[str, Any]) -> None:
    missing = []
    for method, path, operation in _operations(document):
        codes = _errors(operation).get("404", [])
        if "{plugin_id}" in path and "PLUGIN_NOT_FOUND" not in codes:
            missing.append(f"{method} {path}")
        if "{scenario_id}" in path and "SCENARIO_NOT_FOUND" not in codes:
            missing.append(f"{method} {path}")
        if "{version_id}" in path and not codes:
            missing.append(f"{method} {path}")
    assert missing == []


def test_the_generic_4xx_stays_for_what_no_operation_declares(document: dict[str, Any]) -> None:
    operation = document["paths"]["/api/v1/plugins/browse"]["get"]
    assert operation["responses"]["4XX"]["content"]["application/json"]["schema"] == ENVELOPE


def test_optional_json_bodies_are_documented_as_objects_not_null(
    document: dict[str, Any],
) -> None:
    # A `null` body is refused (400) like any non-object, so no schema may offer it.
    bodies = [
        (path, method, operation["requestBody"]["content"]["application/json"]["schema"])
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if "application/json" in operation.get("requestBody", {}).get("content", {})
    ]
    assert bodies
    for path, method, schema in bodies:
        assert {"type": "null"} not in schema.get("anyOf", []), (method, path)
    purchase = document["paths"]["/api/v1/plugins/purchase/{plugin_id}"]["post"]
    assert purchase["requestBody"].get("required", False) is False
    assert purchase["requestBody"]["content"]["application/json"]["schema"]["$ref"] == (
        "#/components/schemas/PurchaseIn"
    )
