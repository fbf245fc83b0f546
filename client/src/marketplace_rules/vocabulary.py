"""Names both sides agree on: plugin types, platforms, distributions, transports, files."""

from __future__ import annotations

import re
from typing import Final, Literal

MANIFEST_NAME: Final = "manifest.json"

PLUGIN_TYPES: Final = ("mcp", "tool", "channel", "scenario", "hook", "composite", "skill")
PLATFORMS: Final = ("darwin", "win32", "linux")

Distribution = Literal["tarball", "config_only", "inline"]
TARBALL: Final = "tarball"
CONFIG_ONLY: Final = "config_only"
INLINE: Final = "inline"
DISTRIBUTIONS: Final = (TARBALL, CONFIG_ONLY, INLINE)

STDIO: Final = "stdio"
REMOTE_TRANSPORTS: Final = ("sse", "streamable-http")
MCP_TRANSPORTS: Final = (STDIO, *REMOTE_TRANSPORTS)

UI_PERMISSION: Final = "ui.render"
INLINE_CODE_KEYS: Final = ("inlineCode", "inlineUiCode")

# Icon files by extension, for the publishing tool; the service judges the bytes.
ICON_MEDIA_TYPES: Final = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".svg": "image/svg+xml",
    ".webp": "image/webp",
}

# pluginKey, manifest id and scenario id: lowercase letters, digits and hyphens.
PLUGIN_KEY_PATTERN: Final = re.compile(r"[a-z][a-z0-9-]*")
# A pluginKey shaped like a UUID would be ambiguous in paths that accept an id or a key.
UUID_PATTERN: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Words that are concrete paths beside `{plugin_id}` / `{scenario_id}` (`/developer/plugins/
# publish`, `/admin/plugins/categories`, `/marketplace/developer/scenarios`): a key spelled so
# could not be reached by it, since a concrete path owns its methods (kit.methods).
RESERVED_KEYS: Final = frozenset({"categories", "publish", "scenarios"})
# Publishing tokens start with this (so a scan can tell them from every other secret).
PAT_PREFIX: Final = "mkt_pat_"
