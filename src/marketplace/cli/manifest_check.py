"""Client-side checks of a plugin's manifest.json, reporting every problem at once.

These mirror the service's checks (CONTRACT section 4, "Manifest") so a publisher hears
about all faults before anything is sent. The category is checked later, against the
list the service returns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypeGuard

import semver

from marketplace.cli.errors import ManifestInvalid

MANIFEST_FILE = "manifest.json"
ID_PATTERN = re.compile(r"^[a-z][a-z0-9-]*$")
UUID_PATTERN = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ID_MIN, ID_MAX = 3, 64
PLUGIN_TYPES = ("mcp", "tool", "channel", "scenario", "hook", "composite", "skill")
PLATFORMS = ("darwin", "win32", "linux")
REMOTE_TRANSPORTS = ("sse", "streamable-http")
ICON_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".svg": "image/svg+xml",
    ".webp": "image/webp",
}
ICON_MAX_BYTES = 256 * 1024

Problems = list[str]


def check_plugin_key(value: Any, field: str = "id") -> Problems:
    if not isinstance(value, str) or not value:
        return [f"{field}: required, a non-empty string"]
    problems: Problems = []
    if not ID_PATTERN.match(value):
        problems.append(
            f"{field}: {value!r} must start with a lowercase letter and contain only "
            "lowercase letters, digits and hyphens (^[a-z][a-z0-9-]*$)"
        )
    if not ID_MIN <= len(value) <= ID_MAX:
        problems.append(f"{field}: must be {ID_MIN}-{ID_MAX} characters, got {len(value)}")
    if UUID_PATTERN.match(value):
        problems.append(f"{field}: must not be shaped like a UUID")
    return problems


def check_version(value: Any, field: str = "version") -> Problems:
    if not isinstance(value, str) or not value:
        return [f"{field}: required, a semver string such as 1.0.0"]
    try:
        parsed = semver.Version.parse(value)
    except ValueError:
        return [f"{field}: {value!r} is not a valid semver version (e.g. 1.2.3 or 1.2.3-beta.1)"]
    if parsed.build is not None:
        return [f"{field}: {value!r} has build metadata (+...), which the service refuses"]
    return []


def _check_optional_str(manifest: Mapping[str, Any], key: str) -> Problems:
    if key in manifest and manifest[key] is not None and not isinstance(manifest[key], str):
        return [f"{key}: must be a string"]
    return []


def _is_str_list(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(item, str) for item in value.values())


def _check_required(manifest: Mapping[str, Any]) -> Problems:
    problems = check_plugin_key(manifest.get("id"))
    problems += check_version(manifest.get("version"))
    if "main" not in manifest:
        problems.append('main: required (a file name, or "" for a configuration-only plugin)')
    elif not isinstance(manifest["main"], str):
        problems.append("main: must be a string")
    category = manifest.get("category")
    if not isinstance(category, str) or not category:
        problems.append("category: required, a category key such as productivity")
    return problems


def _check_publish_texts(manifest: Mapping[str, Any]) -> Problems:
    problems: Problems = []
    for key in ("name", "description"):
        value = manifest.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{key}: required for publishing, a non-empty string")
    for key in ("nameZh", "descriptionZh", "license", "homepage", "repository"):
        problems += _check_optional_str(manifest, key)
    return problems


def _check_lists(manifest: Mapping[str, Any]) -> Problems:
    problems: Problems = []
    if "tags" in manifest and not _is_str_list(manifest["tags"]):
        problems.append("tags: must be an array of strings")
    if "platforms" in manifest:
        platforms = manifest["platforms"]
        if not _is_str_list(platforms) or not set(platforms) <= set(PLATFORMS):
            problems.append(f"platforms: must be an array of {', '.join(PLATFORMS)}")
    if "permissions" in manifest and not _is_str_list(manifest["permissions"]):
        problems.append("permissions: must be an array of strings")
    if "autoConnect" in manifest and not isinstance(manifest["autoConnect"], bool):
        problems.append("autoConnect: must be true or false")
    for key in ("inlineCode", "inlineUiCode"):
        problems += _check_optional_str(manifest, key)
    return problems


def _check_type(manifest: Mapping[str, Any]) -> Problems:
    if "type" in manifest and manifest["type"] not in PLUGIN_TYPES:
        return [f"type: must be one of {', '.join(PLUGIN_TYPES)}"]
    return []


def check_mcp_declaration(value: Any) -> Problems:
    """The `mcp` capability declaration: a stdio command or a remote URL."""
    if not isinstance(value, dict):
        return ["mcp: must be an object"]
    transport = value.get("transport", "stdio")
    if transport == "stdio":
        problems: Problems = []
        command = value.get("command")
        if not isinstance(command, str) or not command:
            problems.append("mcp.command: required for a stdio server, a non-empty string")
        if "args" in value and not _is_str_list(value["args"]):
            problems.append("mcp.args: must be an array of strings")
        if "env" in value and not _is_str_map(value["env"]):
            problems.append("mcp.env: must be an object of string values")
        return problems
    if transport in REMOTE_TRANSPORTS:
        url = value.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return [f"mcp.url: required for a {transport} server, an http(s) URL"]
        return []
    return [f"mcp.transport: must be stdio, sse or streamable-http, got {transport!r}"]


def _check_mcp(manifest: Mapping[str, Any]) -> Problems:
    needs_mcp = manifest.get("type") == "mcp" or manifest.get("main") == ""
    if "mcp" in manifest:
        return check_mcp_declaration(manifest["mcp"])
    if needs_mcp:
        reason = "type is mcp" if manifest.get("type") == "mcp" else 'main is ""'
        return [f"mcp: an MCP capability declaration is required when {reason}"]
    return []


def _check_config_item(index: int, item: Any, seen: set[str]) -> Problems:
    where = f"config[{index}]"
    if not isinstance(item, dict):
        return [f"{where}: must be an object"]
    key = item.get("key")
    problems: Problems = []
    if not isinstance(key, str) or not key:
        problems.append(f"{where}.key: required, a non-empty string")
    elif key in seen:
        problems.append(f"{where}.key: duplicate key {key!r}")
    else:
        seen.add(key)
    for name in ("label", "description"):
        if name in item and not isinstance(item[name], str):
            problems.append(f"{where}.{name}: must be a string")
    for name in ("required", "secret"):
        if name in item and not isinstance(item[name], bool):
            problems.append(f"{where}.{name}: must be true or false")
    return problems


def _check_config(manifest: Mapping[str, Any]) -> Problems:
    if "config" not in manifest:
        return []
    items = manifest["config"]
    if not isinstance(items, list):
        return ["config: must be an array of {key, label?, description?, required?, secret?}"]
    seen: set[str] = set()
    problems: Problems = []
    for index, item in enumerate(items):
        problems += _check_config_item(index, item, seen)
    return problems


def ui_entry(manifest: Mapping[str, Any]) -> Any:
    contributes = manifest.get("contributes")
    if not isinstance(contributes, dict):
        return None
    ui = contributes.get("ui")
    return ui.get("entry") if isinstance(ui, dict) else None


def _check_ui(manifest: Mapping[str, Any]) -> Problems:
    entry = ui_entry(manifest)
    if entry is None:
        return []
    if not isinstance(entry, str) or not entry:
        return ["contributes.ui.entry: must be a file name"]
    permissions = manifest.get("permissions")
    if not isinstance(permissions, list) or "ui.render" not in permissions:
        return ["permissions: must include ui.render when contributes.ui.entry is set"]
    return []


def is_local_icon(icon: str) -> bool:
    """A relative file path (icon/icon.png), as opposed to an icon name or a URL."""
    if icon.startswith(("data:", "http://", "https://")):
        return False
    return "/" in icon or "\\" in icon or PurePosixPath(icon).suffix.lower() in ICON_TYPES


def safe_relative(path: str) -> bool:
    """A relative path that stays inside its folder."""
    pure = PurePosixPath(path.replace("\\", "/"))
    return bool(path) and not pure.is_absolute() and ".." not in pure.parts and ":" not in path


def _check_file(plugin_dir: Path, field: str, name: str) -> Problems:
    if not safe_relative(name):
        return [f"{field}: {name!r} must be a relative path inside the plugin folder"]
    if not (plugin_dir / name).is_file():
        return [f"{field}: file {name!r} not found in {plugin_dir}"]
    return []


def _check_icon(manifest: Mapping[str, Any], plugin_dir: Path | None) -> Problems:
    icon = manifest.get("icon")
    if icon is None:
        return []
    if not isinstance(icon, str) or not icon:
        return ["icon: must be a relative file path or an icon name"]
    if not is_local_icon(icon):
        return []
    if PurePosixPath(icon).suffix.lower() not in ICON_TYPES:
        return [f"icon: {icon!r} must be a png, jpeg, svg or webp file"]
    if plugin_dir is None:
        return []
    problems = _check_file(plugin_dir, "icon", icon)
    if not problems and (plugin_dir / icon).stat().st_size > ICON_MAX_BYTES:
        problems.append(f"icon: {icon!r} is larger than 256 KB")
    return problems


def _check_files(manifest: Mapping[str, Any], plugin_dir: Path | None) -> Problems:
    if plugin_dir is None:
        return []
    problems: Problems = []
    main = manifest.get("main")
    if isinstance(main, str) and main:
        problems += _check_file(plugin_dir, "main", main)
    entry = ui_entry(manifest)
    if isinstance(entry, str) and entry:
        problems += _check_file(plugin_dir, "contributes.ui.entry", entry)
    return problems


CHECKS: tuple[Callable[[Mapping[str, Any]], Problems], ...] = (
    _check_required,
    _check_type,
    _check_lists,
    _check_mcp,
    _check_config,
    _check_ui,
)


def check_manifest(
    manifest: Any, plugin_dir: Path | None = None, *, for_publish: bool = True
) -> Problems:
    """Every problem of `manifest` (empty when it is valid)."""
    if not isinstance(manifest, dict):
        return ["manifest.json must contain a JSON object"]
    problems: Problems = []
    for check in CHECKS:
        problems += check(manifest)
    if for_publish:
        problems += _check_publish_texts(manifest)
    problems += _check_icon(manifest, plugin_dir)
    problems += _check_files(manifest, plugin_dir)
    return problems


def read_manifest(plugin_dir: Path) -> dict[str, Any]:
    """The parsed manifest.json of a folder, or ManifestInvalid saying why it cannot be read."""
    path = plugin_dir / MANIFEST_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ManifestInvalid([f"{path}: not found"]) from exc
    except (OSError, ValueError) as exc:
        raise ManifestInvalid([f"{path}: not readable JSON ({exc})"]) from exc
    if not isinstance(document, dict):
        raise ManifestInvalid(["manifest.json must contain a JSON object"])
    return document


@dataclass(frozen=True)
class PluginManifest:
    """A checked manifest: the raw document plus typed access to what publishing uses."""

    raw: dict[str, Any]
    source_version: str

    def text(self, key: str) -> str | None:
        value = self.raw.get(key)
        return value if isinstance(value, str) else None

    @property
    def id(self) -> str:
        return str(self.raw["id"])

    @property
    def version(self) -> str:
        return str(self.raw["version"])

    @property
    def version_overridden(self) -> bool:
        return self.version != self.source_version

    @property
    def main(self) -> str:
        return str(self.raw["main"])

    @property
    def category(self) -> str:
        return str(self.raw["category"])

    @property
    def type(self) -> str:
        """The declared type; without one, mcp when an MCP server is declared, else tool."""
        declared = self.text("type")
        if declared:
            return declared
        return "mcp" if "mcp" in self.raw else "tool"

    @property
    def config_only(self) -> bool:
        return self.main == ""

    @property
    def icon(self) -> str | None:
        return self.text("icon")

    @property
    def local_icon(self) -> str | None:
        icon = self.icon
        return icon if icon is not None and is_local_icon(icon) else None

    @property
    def ui_entry(self) -> str | None:
        entry = ui_entry(self.raw)
        return entry if isinstance(entry, str) and entry else None

    def string_list(self, key: str) -> list[str] | None:
        value = self.raw.get(key)
        return list(value) if _is_str_list(value) else None


def load_checked_manifest(
    plugin_dir: Path, version_override: str | None = None, *, for_publish: bool = True
) -> PluginManifest:
    """Read, apply `--version`, check; raise ManifestInvalid listing every problem."""
    raw = read_manifest(plugin_dir)
    source_version = raw.get("version")
    if version_override is not None:
        raw = {**raw, "version": version_override}
    problems = check_manifest(raw, plugin_dir, for_publish=for_publish)
    if problems:
        raise ManifestInvalid(problems)
    return PluginManifest(raw=raw, source_version=str(source_version))


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    """The manifest as written into a package when `--version` rewrote it."""
    return (json.dumps(manifest, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
