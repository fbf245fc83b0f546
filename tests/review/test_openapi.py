"""/openapi.json describes every endpoint with its real schemas (CONTRACT 9).

The scenario routers document the error envelope (4XX → ErrorEnvelope) and drop FastAPI's
default 422, which this service never sends; the auth, account and plugin routers do not.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from marketplace_rules.emails import EMAIL_MAX_LENGTH, EMAIL_PATTERN

ENVELOPE = {"$ref": "#/components/schemas/ErrorEnvelope"}
PREFIXES = ("/api/v1/auth", "/api/v1/developer", "/api/v1/admin", "/api/v1/plugins")


@pytest.fixture
async def document(client: httpx.AsyncClient) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get("/openapi.json")).json()
    return body


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in document["paths"].items()
        if path.startswith(PREFIXES) and "/scenarios" not in path
        for method, operation in item.items()
    ]


def test_plugin_and_account_operations_document_the_error_envelope(
    document: dict[str, Any],
) -> None:
    wrong = []
    for method, path, operation in _operations(document):
        responses = operation["responses"]
        errors = [c for c in responses if c.startswith("4")]
        documented = any(
            responses[c].get("content", {}).get("application/json", {}).get("schema") == ENVELOPE
            for c in errors
        )
        if "422" in responses or not documented:
            wrong.append(f"{method.upper()} {path}")
    assert wrong == []


def test_admin_version_download_has_a_real_schema(document: dict[str, Any]) -> None:
    operation = document["paths"]["/api/v1/admin/plugins/versions/{version_id}/download"]["get"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["$ref"] != "#/components/schemas/Envelope_dict_str__Any__"


@pytest.mark.parametrize("model", ["PublishIn", "PriceIn", "AdminCreateIn"])
def test_money_inputs_are_documented_as_numbers(document: dict[str, Any], model: str) -> None:
    price = document["components"]["schemas"][model]["properties"]["price"]
    types = {price.get("type")} | {alt.get("type") for alt in price.get("anyOf", [])}
    assert "string" not in types
    assert not isinstance(price.get("default"), str)


ANONYMOUS_OR_BEARER = [{}, {"HTTPBearer": []}]
PUBLIC_READS = [
    "/api/v1/plugins/browse",
    "/api/v1/plugins/featured",
    "/api/v1/plugins/popular",
    "/api/v1/plugins/categories",
    "/api/v1/plugins/detail/{plugin_id}",
    "/api/v1/plugins/versions/{plugin_id}",
    "/api/v1/plugins/reviews/{plugin_id}",
    "/api/v1/plugins/revocations",
    "/api/v1/plugins/updates",  # a POST that only reads (CONTRACT 16: a token optional)
    "/api/v1/limits",
    "/api/v1/marketplace/scenarios",
    "/api/v1/marketplace/scenarios/{scenario_id}",
    "/api/v1/log/checkpoint",
    "/api/v1/log/entries",
    "/api/v1/log/proof/inclusion",
    "/api/v1/log/proof/consistency",
    "/api/v1/log/c2sp/checkpoint",
    "/api/v1/log/c2sp/tile/{path}",
]


def test_public_reads_document_the_token_as_optional(document: dict[str, Any]) -> None:
    optional = sorted(
        path
        for path, item in document["paths"].items()
        for operation in item.values()
        if operation.get("security") == ANONYMOUS_OR_BEARER
    )
    assert optional == sorted(PUBLIC_READS)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/v1/auth/me"),
        ("get", "/api/v1/plugins/installed"),
        ("get", "/api/v1/marketplace/scenarios/{scenario_id}/download"),
        ("post", "/api/v1/developer/plugins/publish"),
    ],
)
def test_operations_that_need_a_token_still_require_it(
    document: dict[str, Any], method: str, path: str
) -> None:
    assert document["paths"][path][method]["security"] == [{"HTTPBearer": []}]


@pytest.mark.parametrize(
    "path",
    ["/api/v1/plugins/browse", "/api/v1/plugins/categories", "/api/v1/marketplace/scenarios"],
)
async def test_public_reads_answer_without_a_token(client: httpx.AsyncClient, path: str) -> None:
    response = await client.get(path)
    assert response.status_code == 200
    assert response.json()["success"] is True


def _schema(document: dict[str, Any], model: str, field: str) -> dict[str, Any]:
    schema: dict[str, Any] = document["components"]["schemas"][model]["properties"][field]
    strings = [alt for alt in schema.get("anyOf", []) if alt.get("type") == "string"]
    return strings[0] if strings else schema


def _parameter(document: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    parameters = document["paths"][path]["get"]["parameters"]
    schema: dict[str, Any] = next(p["schema"] for p in parameters if p["name"] == name)
    return schema


@pytest.mark.parametrize(
    ("model", "field"),
    [("RegisterIn", "email"), ("LoginIn", "email"), ("IdentitySubmitIn", "contactEmail")],
)
def test_emails_are_documented_as_emails(document: dict[str, Any], model: str, field: str) -> None:
    schema = _schema(document, model, field)
    assert (schema["format"], schema["maxLength"]) == ("email", EMAIL_MAX_LENGTH)
    assert schema["pattern"] == EMAIL_PATTERN
    assert re.fullmatch(schema["pattern"].strip("^$"), "dev@example.com")
    assert not re.fullmatch(schema["pattern"].strip("^$"), "dev@localhost")


def test_plugin_key_is_documented_with_its_rule(document: dict[str, Any]) -> None:
    schema = _schema(document, "PublishIn", "pluginKey")
    assert (schema["pattern"], schema["minLength"], schema["maxLength"]) == (
        "^[a-z][a-z0-9-]*$",
        3,
        64,
    )
    uuid_shaped = "abcdef12-3456-7890-abcd-ef1234567890"
    [uuid, reserved] = schema["not"]["anyOf"]
    assert re.fullmatch(uuid["pattern"].strip("^$"), uuid_shaped)
    assert reserved["enum"] == ["categories", "publish", "scenarios"]


@pytest.mark.parametrize("model", ["PublishIn", "PriceIn", "AdminCreateIn"])
def test_prices_are_documented_with_their_bounds(document: dict[str, Any], model: str) -> None:
    price = _schema(document, model, "price")
    assert (price["minimum"], price["maximum"], price["multipleOf"]) == (0, 9_999_999_999.99, 0.01)


@pytest.mark.parametrize(
    ("model", "field", "max_length"),
    [("IdentityReviewIn", "reviewNote", 2000), ("PluginReviewIn", "reviewNote", 5000)],
)
def test_notes_are_documented_as_visible_text_with_a_length_cap(
    document: dict[str, Any], model: str, field: str, max_length: int
) -> None:
    schema = _schema(document, model, field)
    assert schema["maxLength"] == max_length
    pattern = re.compile(schema["pattern"])
    assert pattern.match("looks fine, 很好")
    assert not pattern.match("hidden\u202eoverride")
    assert not pattern.match("zero\u200bwidth")


def test_versions_are_documented_as_semver(document: dict[str, Any]) -> None:
    pattern = re.compile(_schema(document, "CreateVersionIn", "version")["pattern"])
    assert pattern.match("1.0.0-alpha.10")
    assert not pattern.match("1.0")
    assert not pattern.match("1.0.0+build")


def test_blob_links_document_their_key_expiry_and_signature(document: dict[str, Any]) -> None:
    # The key's three segments are three parameters: a generator can make each one.
    path = "/api/v1/blobs/{shard}/{subshard}/{digest}"
    for name in ("shard", "subshard"):
        pattern = _parameter(document, path, name)["pattern"]
        assert re.fullmatch(pattern.strip("^$"), "ab")
        assert not re.fullmatch(pattern.strip("^$"), "..")
    digest = _parameter(document, path, "digest")["pattern"]
    assert re.fullmatch(digest.strip("^$"), "abcd" + "0" * 60)
    assert not re.fullmatch(digest.strip("^$"), "../etc/passwd")
    assert _parameter(document, path, "expires")["pattern"] == "^[1-9][0-9]{0,11}$"
    assert _parameter(document, path, "sig")["pattern"] == "^[0-9a-f]{64}$"
