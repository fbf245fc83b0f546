"""Schemathesis against the in-process app: no generated request may cause a 500.

Cases are drawn from `/openapi.json` by schemathesis' own strategies (positive and
negative data, a fixed seed, derandomized, a few examples per operation) and sent through
httpx to the worker's app in this test's event loop, so the database engine is never
shared across loops. Each answer goes through schemathesis' `not_a_server_error` check.

Calls carry a super administrator's token (also a verified developer) so that protected
operations get past 401 and validate their input; `plugin_id` is a real plugin's key, so
the plugin routes reach their services rather than stopping at 404.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.errors import FailureGroup
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.factories import Factory

pytestmark = pytest.mark.fault

EXAMPLES_PER_MODE = 3
BASE_URL = "http://test"


def _collect(strategy: st.SearchStrategy[Case]) -> list[Case]:
    cases: list[Case] = []

    @seed(12)
    @settings(
        max_examples=EXAMPLES_PER_MODE,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def draw(case: Case) -> None:
        cases.append(case)

    draw()
    return cases


def _httpx_kwargs(case: Case, token: str) -> dict[str, Any]:
    """The transport's request (requests-style arguments) spelled for httpx."""
    kwargs = case.as_transport_kwargs(base_url=BASE_URL)
    headers = {k: v for k, v in (kwargs.get("headers") or {}).items() if k.lower() != "host"}
    headers.setdefault("Authorization", f"Bearer {token}")
    request: dict[str, Any] = {
        "method": kwargs["method"],
        "url": kwargs["url"],
        "headers": headers,
        "params": kwargs.get("params"),
    }
    if kwargs.get("cookies"):
        headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in kwargs["cookies"].items())
    if "json" in kwargs:
        request["json"] = kwargs["json"]
    if kwargs.get("files") is not None:
        request["files"] = _sendable_files(kwargs["files"])
        request["data"] = kwargs.get("data")
    elif kwargs.get("data") is not None:
        data = kwargs["data"]
        request["content" if isinstance(data, bytes | str) else "data"] = data
    return request


def _part(value: Any) -> Any:
    """A negative case may put a number or null where the file's bytes go: httpx reads
    only bytes, text or files, so the value is sent as its JSON text instead."""
    if isinstance(value, tuple):
        name, content, *rest = value
        texts = [item if item is None or isinstance(item, str) else str(item) for item in rest]
        return (
            name if name is None or isinstance(name, str) else str(name),
            _part(content),
            *texts,
        )
    if isinstance(value, bytes | str) or hasattr(value, "read"):
        return value
    return json.dumps(value)


def _sendable_files(files: Any) -> Any:
    if isinstance(files, dict):
        return {name: _part(value) for name, value in files.items()}
    return [(name, _part(value)) for name, value in files]


async def test_no_generated_request_is_a_server_error(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.super_admin()
    plugin = await factory.plugin(admin)
    # A blob key whose shards repeat its digest, which no generated value would hit.
    known = {
        "plugin_id": plugin.plugin_key,
        "shard": "ab",
        "subshard": "cd",
        "digest": "abcd" + "0" * 60,
    }
    document = (await client.get("/openapi.json")).json()
    schema = schemathesis.openapi.from_dict(document)

    started = time.monotonic()
    failures: list[str] = []
    covered: list[str] = []
    unsatisfiable: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        names = {p.name for p in operation.path_parameters}
        fixed = {k: v for k, v in known.items() if k in names}
        covered.append(operation.label)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(mode, path_parameters=fixed or None)
            try:
                cases = _collect(strategy)
            except Unsatisfiable:
                unsatisfiable.append(f"{operation.label} [{mode}]")
                continue
            for case in cases:
                response = await client.request(**_httpx_kwargs(case, admin.token))
                response.request.read()  # a multipart body is a stream; the check reads it
                try:
                    case.validate_response(response, checks=[not_a_server_error])
                except FailureGroup as failure:
                    failures.append(f"{operation.label} [{mode}]: {failure}")
    elapsed = time.monotonic() - started

    assert failures == [], "\n\n".join(failures[:5])
    assert len(covered) == len([m for item in document["paths"].values() for m in item])
    # Only a negative case can be impossible (an operation with nothing to get wrong).
    assert [label for label in unsatisfiable if "[positive]" in label] == []
    print(f"schemathesis: {len(covered)} operations in {elapsed:.1f}s")


@pytest.mark.parametrize("status", [500, 503])
async def test_the_check_fails_on_a_server_error(status: int) -> None:
    """The check used above does catch a 5xx (so a green run means something)."""
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/x": {"get": {"responses": {"200": {"description": "ok"}}}}},
    }
    case = schemathesis.openapi.from_dict(document)["/x"]["GET"].Case()
    failing = Starlette(routes=[Route("/x", PlainTextResponse("boom", status_code=status))])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=failing), base_url=BASE_URL
    ) as http:
        response = await http.get("/x")
    with pytest.raises(FailureGroup):
        case.validate_response(response, checks=[not_a_server_error])
