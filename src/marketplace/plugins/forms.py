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


PACKAGE_FORM = multipart_form(
    {
        "file": {"type": "string", "format": "binary", "description": ".tar.gz, at most 100 MB"},
        "version": {"type": "string", "description": "semver; must equal manifest.version"},
        "changelog": {"type": "string"},
    },
    ["file", "version"],
)

ICON_FORM = multipart_form(
    {"file": {"type": "string", "format": "binary", "description": "png/jpeg/svg/webp, 256 KB"}},
    ["file"],
)
