"""OpenAPI descriptions of the multipart forms the routes parse themselves (streamed).

The receiver refuses a field it does not know (kit.upload), so the form is closed here too;
text fields are checked as sent, as their schemas say."""

from __future__ import annotations

from typing import Any


def multipart_form(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": properties,
                        "required": required,
                        "additionalProperties": False,
                    }
                }
            },
        }
    }
