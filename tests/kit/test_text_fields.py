"""Text fields are checked as sent, so OpenAPI's lengths and patterns say exactly what the
service accepts (issue 24 item 4): a name of spaces passed `minLength` in the document but
was refused once trimmed, and a padded name over `maxLength` was accepted."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from marketplace.accounts.schemas import RegisterIn
from tests.factories import Factory
from tests.helpers import err, ok
from tests.plugins.helpers import publish_body

PASSWORD = "a-good-password-1"


def _register(name: str) -> dict[str, Any]:
    return {"email": "text@example.com", "password": PASSWORD, "name": name}


@pytest.fixture
async def name_schema(client: httpx.AsyncClient) -> dict[str, Any]:
    document = (await client.get("/openapi.json")).json()
    schema: dict[str, Any] = document["components"]["schemas"]["RegisterIn"]["properties"]["name"]
    return schema


def _documented(schema: dict[str, Any], text: str) -> bool:
    """As a JSON Schema validator reads the keywords (lengths in code points)."""
    return (
        schema["minLength"] <= len(text) <= schema["maxLength"]
        and re.fullmatch(schema["pattern"], text) is not None
    )


def _accepted(text: str) -> bool:
    try:
        RegisterIn.model_validate(_register(text))
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("name", [" ", "   ", "\t\n", "\u3000", " \u2003 "])
async def test_a_blank_name_is_refused_by_the_document_and_the_service(
    client: httpx.AsyncClient, name_schema: dict[str, Any], name: str
) -> None:
    response = await client.post("/api/v1/auth/register", json=_register(name))

    error = err(response, 400, "VALIDATION_FAILED")
    assert {f["field"] for f in error["details"]["fields"]} == {"name"}
    assert not _documented(name_schema, name)


async def test_a_padded_name_over_the_limit_is_refused_as_the_document_says(
    client: httpx.AsyncClient, name_schema: dict[str, Any]
) -> None:
    name = " " + "n" * 100  # 101 as sent; 100 once trimmed

    response = await client.post("/api/v1/auth/register", json=_register(name))

    err(response, 400, "VALIDATION_FAILED")
    assert not _documented(name_schema, name)


async def test_text_is_stored_trimmed_once_it_passed(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = ok(await client.post("/api/v1/auth/register", json=_register("  Ada  ")), 201)
    assert user["user"]["name"] == "Ada"
    dev = await factory.developer()
    body = publish_body(name="  Weather  ", tags=[" sun "])
    plugin = ok(
        await client.post("/api/v1/developer/plugins/publish", json=body, headers=dev.headers),
        201,
    )
    assert (plugin["name"], plugin["tags"]) == ("Weather", ["sun"])


async def test_a_padded_plugin_key_is_refused_not_trimmed(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    body = publish_body(pluginKey=" padded-key")
    response = await client.post(
        "/api/v1/developer/plugins/publish", json=body, headers=dev.headers
    )
    err(response, 400, "VALIDATION_FAILED")
    assert ok(await client.get("/api/v1/developer/plugins", headers=dev.headers))["total"] == 0


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(" \t\n\u3000\u00a0ab中\u200b\x07"), max_size=104))
def test_the_service_accepts_a_name_exactly_when_the_document_does(text: str) -> None:
    # The schema the document serves for the field (components are built from the model).
    schema = RegisterIn.model_json_schema(by_alias=True)["properties"]["name"]
    assert _accepted(text) == _documented(schema, text)
