"""Assertions on the contract's envelope, and the secret key of the test settings."""

from __future__ import annotations

from typing import Any

import httpx

TEST_SECRET = "test-secret-key-not-for-production-0123456789"


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is True, body
    return body["data"]


def err(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is False, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    error: dict[str, Any] = body["error"]
    return error


def field_names(error: dict[str, Any]) -> set[str]:
    return {f["field"] for f in error["details"]["fields"]}
