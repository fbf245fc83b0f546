"""OpenAPI descriptions of the plugin forms the upload routes parse themselves (streamed)."""

from __future__ import annotations

from marketplace.kit.forms import multipart_form
from marketplace.models import Channel
from marketplace.plugins.schemas import CHANGELOG_MAX_CHARS, VERSION_MAX_CHARS
from marketplace_rules.limits import ICON_MAX_BYTES, KIB, PLUGIN_PACKAGE_MAX_MIB
from marketplace_rules.text import visible_text_pattern
from marketplace_rules.versions import SEMVER_PATTERN

PACKAGE_FORM = multipart_form(
    {
        "file": {
            "type": "string",
            "format": "binary",
            "description": f".tar.gz, at most {PLUGIN_PACKAGE_MAX_MIB} MB by default "
            "(setting plugin_package_max_mb)",
        },
        "version": {
            "type": "string",
            "pattern": SEMVER_PATTERN,
            "maxLength": VERSION_MAX_CHARS,
            "description": "semver; must equal manifest.version",
        },
        "changelog": {
            "type": "string",
            "maxLength": CHANGELOG_MAX_CHARS,
            "pattern": visible_text_pattern(),
        },
        "channel": {
            "type": "string",
            "enum": [channel.value for channel in Channel],
            "description": "stable (default) or prerelease: approving a prerelease leaves "
            "the current version alone (CONTRACT 16)",
        },
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
