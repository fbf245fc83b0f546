"""OpenAPI descriptions of the plugin forms the upload routes parse themselves (streamed)."""

from __future__ import annotations

from marketplace.kit.forms import multipart_form

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
