"""Request schemas say what the server accepts (issue 12): schema-valid data is accepted and
the documented shapes match the server's rules, so generated clients and fuzzers agree."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from marketplace_rules.text import has_forbidden_chars, visible_text_pattern
from tests.factories import Factory
from tests.helpers import ok


@pytest.fixture
async def document(client: httpx.AsyncClient) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get("/openapi.json")).json()
    return body


def _model(document: dict[str, Any], name: str) -> dict[str, Any]:
    schema: dict[str, Any] = document["components"]["schemas"][name]
    return schema


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        ("DeveloperUpdateIn", ["name", "nameZh", "description", "category", "tags", "platforms"]),
        ("AdminUpdateIn", ["name", "category", "featured", "enabled"]),
        ("ScenarioUpdateIn", ["name", "category"]),
    ],
)
def test_fields_refused_as_null_are_not_documented_as_nullable(
    document: dict[str, Any], model: str, fields: list[str]
) -> None:
    properties = _model(document, model)["properties"]
    for field in fields:
        assert "anyOf" not in properties[field], (field, properties[field])
        assert properties[field].get("type") != "null"
    # Fields that may be cleared keep null.
    if model != "ScenarioUpdateIn":
        license_types = [alt.get("type") for alt in properties["license"]["anyOf"]]
        assert "null" in license_types


@pytest.mark.parametrize("model", ["PublishIn", "AdminCreateIn"])
def test_the_price_rule_is_documented(document: dict[str, Any], model: str) -> None:
    [rule] = _model(document, model)["allOf"]
    assert rule["if"] == {"properties": {"isFree": {"const": False}}, "required": ["isFree"]}
    assert rule["then"]["required"] == ["price"]
    assert rule["then"]["properties"]["price"] == {"exclusiveMinimum": 0}
    assert rule["else"]["properties"]["price"] == {"maximum": 0}


def test_integer_bounds_are_documented_as_minimum_and_maximum(document: dict[str, Any]) -> None:
    sort_order = _model(document, "CategoryIn")["properties"]["sortOrder"]
    assert sort_order["type"] == "integer"
    assert (sort_order["minimum"], sort_order["maximum"]) == (-1_000_000, 1_000_000)
    assert "ge" not in sort_order and "le" not in sort_order


def test_category_keys_are_documented_with_their_shape(document: dict[str, Any]) -> None:
    category = _model(document, "PublishIn")["properties"]["category"]
    assert category["pattern"] == "^[a-z][a-z0-9-]*$"


def test_the_visible_text_pattern_names_no_surrogates_and_agrees_with_the_check() -> None:
    pattern = visible_text_pattern()
    assert "\\ud800" not in pattern
    for text in ("plain", "中文", "emoji \U0001f600\ufe0f", "tab\tnewline\n"):
        assert re.fullmatch(pattern, text) and not has_forbidden_chars(text)
    for text in ("bell\x07", "soft\u00adhyphen", "rlo\u202e", "bom\ufeff", "tag\U000e0041"):
        assert re.fullmatch(pattern, text) is None and has_forbidden_chars(text)


@pytest.mark.parametrize(
    ("sort_order", "status", "stored"),
    [(30.0, 201, 30), (-2.0, 201, -2), (30.5, 400, None), ("30", 400, None), (True, 400, None)],
)
async def test_integers_accept_integral_json_numbers_only(
    client: httpx.AsyncClient, factory: Factory, sort_order: object, status: int, stored: int | None
) -> None:
    admin = await factory.admin()
    body = {"key": "precise", "name": "Precise", "nameZh": "精确", "sortOrder": sort_order}
    response = await client.post(
        "/api/v1/admin/plugins/categories", json=body, headers=admin.headers
    )
    assert response.status_code == status, response.text
    listed = ok(await client.get("/api/v1/admin/plugins/categories", headers=admin.headers))
    found = [c for c in listed["items"] if c["key"] == "precise"]
    if stored is None:
        assert response.json()["error"]["code"] == "VALIDATION_FAILED"
        assert found == []
    else:
        assert [c["sortOrder"] for c in found] == [stored]
