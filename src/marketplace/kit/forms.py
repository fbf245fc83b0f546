"""OpenAPI descriptions of the multipart forms the routes parse themselves (streamed)."""

from __future__ import annotations

from typing import Any


def multipart_form(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {"type": "object", "properties": properties, "required": required}
                }
            },
        }
    }
