"""OpenAPI descriptions of the plugin forms the upload routes parse themselves (streamed)."""

from __future__ import annotations

from marketplace.kit.forms import multipart_form
from marketplace_rules.limits import ICON_MAX_BYTES, KIB, PLUGIN_PACKAGE_MAX_MIB

PACKAGE_FORM = multipart_form(
    {
        "file": {
            "type": "string",
            "format": "binary",
            "description": f".tar.gz, at most {PLUGIN_PACKAGE_MAX_MIB} MB by default "
            "(setting plugin_package_max_mb)",
        },
        "version": {"type": "string", "description": "semver; must equal manifest.version"},
        "changelog": {"type": "string"},
    },
    ["file", "version"],
)

ICON_FORM = multipart_form(
    {
        "file": {
            "type": "string",
            "format": "binary",
            "description": f"png/jpeg/svg/webp, at most {ICON_MAX_BYTES // KIB} KB",
        }
    },
    ["file"],
)
