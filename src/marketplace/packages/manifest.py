"""Manifest rules (contract section 4 "Manifest") and the automatic-validation findings.

The structural checks are separate steps so that a caller can run its own between them,
in the contract's order: check_manifest_identity (id, version, semver), then the
caller's "version is new" lookup, then check_manifest_category, then check_manifest_shape.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Mapping
from typing import Any, Literal

import semver

from marketplace.errors import AppError, InvalidCategory, PackageInvalid, ValidationFailed
from marketplace.packages.archive import KIB, ArchiveInfo
from marketplace.packages.text import display, forbidden_chars, iter_strings
from marketplace.packages.text import has_forbidden_chars as has_forbidden_chars

Distribution = Literal["tarball", "config_only", "inline"]

PLUGIN_KEY_RE = re.compile(r"^[a-z][a-z0-9-]*$")
PLUGIN_KEY_MIN_LENGTH = 3
PLUGIN_KEY_MAX_LENGTH = 64
VERSION_MAX_LENGTH = 128
ICON_MAX_BYTES = 256 * KIB
UI_PERMISSION = "ui.render"
MCP_TRANSPORTS = ("stdio", "sse", "streamable-http")

# A pluginKey shaped like a UUID would be ambiguous in paths that accept an id or a key.
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_EXTENSION_RE = re.compile(r"\.[A-Za-z0-9]+$")
_MAX_TEXT_FINDINGS = 20
_MAX_LINK_HOPS = 40

# Optional manifest keys the service reads, with the JSON type each must have.
_OPTIONAL_TYPES: dict[str, tuple[type, str]] = {
    "name": (str, "a string"),
    "description": (str, "a string"),
    "type": (str, "a string"),
    "icon": (str, "a string"),
    "permissions": (list, "a list of strings"),
    "contributes": (dict, "an object"),
    "config": (list, "a list of objects"),
    "mcp": (dict, "an object"),
    "autoConnect": (bool, "true or false"),
    "inlineCode": (str, "a string"),
    "inlineUiCode": (str, "a string"),
}


def is_valid_plugin_key(key: object) -> bool:
    """pluginKey (and manifest id) rule: ^[a-z][a-z0-9-]*$, 3-64 characters, not a UUID."""
    return (
        isinstance(key, str)
        and PLUGIN_KEY_MIN_LENGTH <= len(key) <= PLUGIN_KEY_MAX_LENGTH
        and PLUGIN_KEY_RE.fullmatch(key) is not None
        and _UUID_RE.fullmatch(key) is None
    )


def parse_version(text: str) -> semver.Version:
    """A semver 2.0 version without build metadata; ValueError says what is wrong."""
    if len(text) > VERSION_MAX_LENGTH:
        raise ValueError(f"must be at most {VERSION_MAX_LENGTH} characters")
    try:
        version = semver.Version.parse(text)
    except (ValueError, TypeError):
        raise ValueError("must be a semver version such as 1.2.3 or 1.2.3-beta.1") from None
    if version.build is not None:
        raise ValueError("must not carry build metadata (+...)")
    if str(version) != text:  # only the canonical ASCII spelling is stored
        raise ValueError("must be a semver version such as 1.2.3 or 1.2.3-beta.1")
    return version


def is_valid_version(text: object) -> bool:
    try:
        return isinstance(text, str) and parse_version(text) is not None
    except ValueError:
        return False


def version_sort_key(text: str) -> semver.Version:
    """Sort key for "newest" = highest semver precedence (1.0.0-alpha.10 > 1.0.0-alpha.9)."""
    return semver.Version.parse(text)


def check_version(version: str, *, field: str = "version") -> semver.Version:
    """parse_version, refusing with 400 VALIDATION_FAILED naming the field."""
    try:
        return parse_version(version)
    except ValueError as exc:
        raise ValidationFailed.field(field, str(exc)) from None


def check_manifest_identity(
    manifest: Mapping[str, Any],
    *,
    plugin_key: str,
    version: str,
    error: type[AppError] = PackageInvalid,
) -> semver.Version:
    """manifest.id == pluginKey (case-sensitive), manifest.version == version, semver valid."""
    manifest_id = _required_string(manifest, "id", error)
    if manifest_id != plugin_key:
        raise error("manifest.id does not match plugin.pluginKey")
    manifest_version = _required_string(manifest, "version", error)
    if manifest_version != version:
        raise error("manifest.version does not match requested version")
    return check_version(version)


def check_manifest_category(
    manifest: Mapping[str, Any],
    *,
    categories: Collection[str],
    error: type[AppError] = PackageInvalid,
) -> str:
    """manifest.category present and in the category table (PLUGIN_INVALID_CATEGORY)."""
    category = _required_string(manifest, "category", error)
    if category not in categories:
        raise InvalidCategory(category)
    return category


def check_manifest_shape(
    manifest: Mapping[str, Any],
    *,
    plugin_type: str | None = None,
    error: type[AppError] = PackageInvalid,
) -> None:
    """main present ("" allowed); optional keys of the right JSON type; mcp declaration valid."""
    if "main" not in manifest:
        raise _fail(error, "manifest.main", 'is required ("" for a configuration-only plugin)')
    if not isinstance(manifest["main"], str):
        raise _fail(error, "manifest.main", "must be a string")
    for key, (kind, described) in _OPTIONAL_TYPES.items():
        if key in manifest and not isinstance(manifest[key], kind):
            raise _fail(error, f"manifest.{key}", f"must be {described}")
    if not all(isinstance(item, str) for item in manifest.get("permissions", [])):
        raise _fail(error, "manifest.permissions", "must be a list of strings")
    if "mcp" in manifest:
        problems = validate_mcp(manifest["mcp"])
        if problems:
            raise _fail(error, "manifest.mcp", "; ".join(problems))
    elif (plugin_type or manifest.get("type")) == "mcp":
        raise _fail(error, "manifest.mcp", "is required for a plugin of type mcp")


def check_package_manifest(
    manifest: Mapping[str, Any],
    *,
    plugin_key: str,
    version: str,
    categories: Collection[str],
    plugin_type: str | None = None,
    error: type[AppError] = PackageInvalid,
) -> None:
    """Every structural step in the contract's order, for callers with nothing to interleave."""
    check_manifest_identity(manifest, plugin_key=plugin_key, version=version, error=error)
    check_manifest_category(manifest, categories=categories, error=error)
    check_manifest_shape(manifest, plugin_type=plugin_type, error=error)


def validate_mcp(declaration: object) -> list[str]:
    """Problems with an mcp declaration (stdio command or remote url); [] when valid."""
    if not isinstance(declaration, dict):
        return ["must be an object"]
    transport = declaration.get("transport", "stdio")
    if transport == "stdio":
        return _stdio_problems(declaration)
    if transport in MCP_TRANSPORTS:
        url = declaration.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return [f"url must be an http(s) URL for transport {transport}"]
        return []
    return ['transport must be "stdio", "sse" or "streamable-http"']


def distribution_of(
    manifest: Mapping[str, Any],
    *,
    has_package: bool,
    error: type[AppError] = ValidationFailed,
) -> Distribution:
    """Seed 2.4: tarball when main is non-empty and a package came; config_only when main is
    "" and a valid mcp is declared; inline when inlineCode or inlineUiCode is present."""
    main = manifest.get("main")
    if has_package and isinstance(main, str) and main:
        return "tarball"
    if main == "" and "mcp" in manifest:
        problems = validate_mcp(manifest["mcp"])
        if problems:
            raise _fail(error, "manifest.mcp", "; ".join(problems))
        return "config_only"
    if "inlineCode" in manifest or "inlineUiCode" in manifest:
        return "inline"
    raise _fail(
        error,
        "manifest",
        'needs main "" with an mcp declaration (configuration only), or inlineCode / '
        "inlineUiCode (inline code)" + ("" if has_package else ", when no package is uploaded"),
    )


def deep_findings(manifest: Mapping[str, Any], info: ArchiveInfo | None) -> list[str]:
    """Automatic-validation findings; each one a sentence for the review note.

    info is the archive of a tarball version; None for config_only and inline versions,
    where only the manifest-level findings apply.
    """
    return [
        *_main_findings(manifest, info),
        *_ui_findings(manifest, info),
        *_icon_findings(manifest, info),
        *_config_findings(manifest),
        *_text_findings(manifest, info),
    ]


def _main_findings(manifest: Mapping[str, Any], info: ArchiveInfo | None) -> list[str]:
    main = manifest.get("main")
    if info is None or not isinstance(main, str) or not main:
        return []
    missing = _missing_file("manifest.main", main, info)
    return [missing] if missing else []


def _ui_findings(manifest: Mapping[str, Any], info: ArchiveInfo | None) -> list[str]:
    contributes = manifest.get("contributes")
    ui = contributes.get("ui") if isinstance(contributes, dict) else None
    has_ui = ui is not None or "inlineUiCode" in manifest
    findings: list[str] = []
    entry = ui.get("entry") if isinstance(ui, dict) else None
    if ui is not None and (not isinstance(entry, str) or not entry):
        findings.append("contributes.ui.entry must name the UI bundle file")
    elif isinstance(entry, str) and info is not None:
        missing = _missing_file("contributes.ui.entry", entry, info)
        findings += [missing] if missing else []
    permissions = manifest.get("permissions")
    if has_ui and not (isinstance(permissions, list) and UI_PERMISSION in permissions):
        findings.append(f'permissions must include "{UI_PERMISSION}" for a UI extension')
    return findings


def _icon_findings(manifest: Mapping[str, Any], info: ArchiveInfo | None) -> list[str]:
    icon = manifest.get("icon")
    if not isinstance(icon, str) or not icon:
        return []
    if "://" in icon or icon.startswith("data:"):
        return ["manifest.icon must be a path inside the package or an icon name, not a URL"]
    is_path = "/" in icon or "\\" in icon or _EXTENSION_RE.search(icon) is not None
    if not is_path or info is None:
        return []  # an icon name, or no archive to look in
    missing = _missing_file("manifest.icon", icon, info)
    if missing:
        return [missing]
    located = _locate(info, icon)
    size = info.files[located] if located else 0
    if size > ICON_MAX_BYTES:
        return [f"manifest.icon {display(icon)} is {size} bytes; the limit is {ICON_MAX_BYTES}"]
    return []


def _config_findings(manifest: Mapping[str, Any]) -> list[str]:
    config = manifest.get("config")
    if not isinstance(config, list):
        return []
    findings: list[str] = []
    seen: set[str] = set()
    for index, item in enumerate(config):
        key = item.get("key") if isinstance(item, dict) else None
        if not isinstance(item, dict):
            findings.append(f"config[{index}] must be an object")
        elif not isinstance(key, str) or not key.strip():
            findings.append(f"config[{index}] has no key")
        elif key in seen:
            findings.append(f'config[{index}] repeats the key "{display(key)}"')
        else:
            seen.add(key)
    return findings


def _text_findings(manifest: Mapping[str, Any], info: ArchiveInfo | None) -> list[str]:
    places = [(display(where), text) for where, text in iter_strings(dict(manifest))]
    if info is not None:
        places += [
            (f"file name {display(name, 60)}", name) for name in [*info.files, *info.symlinks]
        ]
    findings = [
        f"{label} contains invisible or bidirectional-control characters ({', '.join(chars)})"
        for label, text in places
        if (chars := forbidden_chars(text))
    ]
    if len(findings) > _MAX_TEXT_FINDINGS:
        extra = len(findings) - _MAX_TEXT_FINDINGS
        findings = [*findings[:_MAX_TEXT_FINDINGS], f"... and {extra} more such texts"]
    return findings


def _missing_file(label: str, value: str, info: ArchiveInfo) -> str | None:
    """A finding when value does not name a file of the package; None when it does."""
    if _package_path(value) is None:
        return f"{label} {display(value)} is not a relative path inside the package"
    if _locate(info, value) is None:
        return f"{label} names {display(value)}, which is not in the package"
    return None


def _locate(info: ArchiveInfo, value: str) -> str | None:
    """The regular file a manifest path leads to, following the package's symlinks."""
    path = _package_path(value)
    for _ in range(_MAX_LINK_HOPS):
        if path is None or path in info.files:
            return path
        target = info.symlinks.get(path)
        if target is None:
            return None
        path = _package_path(posixpath.normpath(posixpath.join(posixpath.dirname(path), target)))
    return None


def _package_path(value: str) -> str | None:
    """A manifest path relative to the package root, normalised; None if it points outside."""
    path = value.replace("\\", "/")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return None
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _stdio_problems(declaration: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    command = declaration.get("command")
    if not isinstance(command, str) or not command.strip():
        problems.append("command must be a non-empty string for a stdio server")
    args = declaration.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        problems.append("args must be a list of strings")
    env = declaration.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
        problems.append("env must map names to strings")
    return problems


def _required_string(manifest: Mapping[str, Any], key: str, error: type[AppError]) -> str:
    if key not in manifest:
        raise _fail(error, f"manifest.{key}", "is required")
    value = manifest[key]
    if not isinstance(value, str):
        raise _fail(error, f"manifest.{key}", "must be a string")
    return value


def _fail(error: type[AppError], field: str, problem: str) -> AppError:
    if issubclass(error, ValidationFailed):
        return error.field(field, problem)
    return error(f"{field} {problem}")
