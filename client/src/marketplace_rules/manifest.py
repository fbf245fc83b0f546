"""Manifest rules (CONTRACT section 4, "Manifest"), each step returning every finding.

The steps follow the service's order of checks: load_manifest (the document), then
identity_findings (id, version, semver), category_findings, shape_findings (main,
optional keys, mcp) and distribution_findings; then content_findings (automatic
validation, in `rules.content`). The service raises the first finding of a step; the
publishing tool lists them all at once, with record_findings on top: what it needs to
build the plugin record from the manifest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from pathlib import PurePosixPath
from typing import Any

from marketplace_rules.content import (
    PackageFiles,
    content_findings,
    is_icon_path,
    is_url,
)
from marketplace_rules.findings import Code, Finding, item_path, join_path
from marketplace_rules.limits import (
    MANIFEST_MAX_DEPTH,
    PLUGIN_KEY_MAX_LENGTH,
    PLUGIN_KEY_MIN_LENGTH,
)
from marketplace_rules.text import display, iter_strings
from marketplace_rules.versions import SEMVER_PATTERN, version_problem
from marketplace_rules.vocabulary import (
    CONFIG_ONLY,
    ICON_MEDIA_TYPES,
    INLINE,
    INLINE_CODE_KEYS,
    MCP_TRANSPORTS,
    PLATFORMS,
    PLUGIN_KEY_PATTERN,
    PLUGIN_TYPES,
    RESERVED_KEYS,
    STDIO,
    TARBALL,
    UUID_PATTERN,
    Distribution,
)

# orjson (responses) and most JSON clients stop at 64-bit integers.
_INT_LIMIT = 2**63 - 1

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
# Texts the publishing tool copies into the plugin record when present.
_RECORD_TEXTS = ("nameZh", "descriptionZh", "license", "homepage", "repository")
_NO_DISTRIBUTION = (
    'needs main "" with an mcp declaration (configuration only), or inlineCode / '
    "inlineUiCode (inline code)"
)


# ---------- the document ----------


class UnreadableManifest(ValueError):
    """manifest.json cannot be used at all; finding says why (its path is the document's)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def load_manifest(raw: bytes) -> dict[str, Any]:
    """Parse manifest.json: a strict UTF-8 JSON object, no repeated keys, and nothing a
    store or a JSON client cannot hold (NUL, unpaired surrogates, numbers past 64 bits)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _unreadable(Code.MANIFEST_NOT_UTF8, "is not valid UTF-8") from None
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constants)
    except _RepeatedKeyError as exc:
        message = f'repeats the key "{display(exc.key)}"'
        raise _unreadable(Code.MANIFEST_REPEATED_KEY, message) from None
    except json.JSONDecodeError as exc:
        message = f"is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise _unreadable(Code.MANIFEST_NOT_JSON, message) from None
    except (ValueError, RecursionError):
        raise _unreadable(Code.MANIFEST_NOT_JSON, "is not valid JSON") from None
    if not isinstance(value, dict):
        raise _unreadable(Code.MANIFEST_NOT_OBJECT, "must contain a JSON object")
    problems = storability_findings(value)
    if problems:
        raise UnreadableManifest(problems[0])
    return value


def storability_findings(value: Any) -> list[Finding]:
    """Values JSON decoding accepts but that no store or JSON client holds faithfully."""
    findings = [
        Finding.error(
            Code.MANIFEST_UNSTORABLE_TEXT,
            "",
            f"holds a NUL or an unpaired surrogate at {display(where)}",
        )
        for where, string in iter_strings(value)
        # PostgreSQL JSON refuses NUL and no UTF-8 store holds an unpaired surrogate.
        if "\x00" in string or _has_surrogate(string)
    ]
    stack: list[tuple[str, Any, int]] = [("manifest", value, 1)]
    while stack:  # iterative: nesting may be deep
        where, item, depth = stack.pop()
        if isinstance(item, dict | list) and depth > MANIFEST_MAX_DEPTH:
            message = f"nests deeper than {MANIFEST_MAX_DEPTH} levels at {display(where)}"
            return [*findings, Finding.error(Code.MANIFEST_TOO_DEEP, "", message)]
        if isinstance(item, dict):
            stack.extend((join_path(where, k), child, depth + 1) for k, child in item.items())
        elif isinstance(item, list):
            stack.extend((item_path(where, i), child, depth + 1) for i, child in enumerate(item))
        elif unsafe_number(item):
            findings.append(
                Finding.error(
                    Code.MANIFEST_UNSAFE_NUMBER,
                    "",
                    f"holds a number out of the 64-bit range at {display(where)}",
                )
            )
    return findings


def unsafe_number(item: Any) -> bool:
    """A number some store or JSON client cannot give back as it came.

    1e400 parses as infinity; PostgreSQL JSONB keeps 1e20 as an exact numeric and gives it
    back as the integer 100000000000000000000, beyond what orjson and most clients hold.
    So floats keep to the same range as integers."""
    if isinstance(item, float):
        return not math.isfinite(item) or abs(item) > _INT_LIMIT
    return isinstance(item, int) and not isinstance(item, bool) and abs(item) > _INT_LIMIT


def _unreadable(code: Code, message: str) -> UnreadableManifest:
    return UnreadableManifest(Finding.error(code, "", message))


class _RepeatedKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _RepeatedKeyError(key)
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# ---------- identity: id, version ----------


def plugin_key_findings(value: str, path: str = "id") -> list[Finding]:
    """pluginKey (and manifest id) rule: ^[a-z][a-z0-9-]*$, 3-64 characters, not a UUID,
    not a reserved word."""
    findings: list[Finding] = []
    if PLUGIN_KEY_PATTERN.fullmatch(value) is None:
        findings.append(
            Finding.error(
                Code.PLUGIN_KEY_INVALID,
                path,
                f'"{display(value)}" must start with a lowercase letter and contain only '
                "lowercase letters, digits and hyphens (^[a-z][a-z0-9-]*$)",
            )
        )
    if not PLUGIN_KEY_MIN_LENGTH <= len(value) <= PLUGIN_KEY_MAX_LENGTH:
        findings.append(
            Finding.error(
                Code.PLUGIN_KEY_INVALID,
                path,
                f"must be {PLUGIN_KEY_MIN_LENGTH}-{PLUGIN_KEY_MAX_LENGTH} characters, "
                f"got {len(value)}",
            )
        )
    if UUID_PATTERN.fullmatch(value) is not None:
        findings.append(
            Finding.error(Code.PLUGIN_KEY_INVALID, path, "must not be shaped like a UUID")
        )
    if value in RESERVED_KEYS:
        message = f'"{value}" is reserved: a path of the API has that name'
        findings.append(Finding.error(Code.PLUGIN_KEY_INVALID, path, message))
    return findings


def is_valid_plugin_key(key: object) -> bool:
    return isinstance(key, str) and not plugin_key_findings(key)


def identity_findings(
    manifest: Mapping[str, Any], *, plugin_key: str | None = None, version: str | None = None
) -> list[Finding]:
    """id and version present as strings. Given the plugin's pluginKey and the requested
    version, they must equal them (case-sensitive); else id must be a valid pluginKey.
    The version must be semver."""
    findings = _required_string(manifest, "id")
    if not findings and plugin_key is None:
        findings = plugin_key_findings(manifest["id"])
    elif not findings and manifest["id"] != plugin_key:
        findings = [Finding.error(Code.ID_MISMATCH, "id", "does not match plugin.pluginKey")]
    return findings + _version_findings(manifest, version)


def _version_findings(manifest: Mapping[str, Any], requested: str | None) -> list[Finding]:
    missing = _required_string(manifest, "version")
    if missing:
        return missing
    if requested is not None and manifest["version"] != requested:
        message = "does not match requested version"
        return [Finding.error(Code.VERSION_MISMATCH, "version", message)]
    problem = version_problem(manifest["version"])
    if problem is not None:
        return [Finding.error(Code.VERSION_INVALID, "version", problem)]
    return []


# ---------- category ----------


def category_findings(
    manifest: Mapping[str, Any], *, categories: Collection[str] | None = None
) -> list[Finding]:
    """category present as a string and, given the category table's keys, one of them."""
    missing = _required_string(manifest, "category")
    if missing:
        return missing
    category = manifest["category"]
    if categories is not None and category not in categories:
        message = f'"{display(category)}" is not a category of this marketplace'
        return [Finding.error(Code.CATEGORY_UNKNOWN, "category", message)]
    return []


# ---------- shape: main, optional keys, mcp ----------


def shape_findings(manifest: Mapping[str, Any], *, plugin_type: str | None = None) -> list[Finding]:
    """main present ("" allowed); optional keys of the right JSON type; mcp declaration
    valid, and present for a plugin of type mcp (the plugin's type, else the manifest's)."""
    findings: list[Finding] = []
    if "main" not in manifest:
        message = 'is required ("" for a configuration-only plugin)'
        findings.append(Finding.error(Code.REQUIRED, "main", message))
    elif not isinstance(manifest["main"], str):
        findings.append(Finding.error(Code.WRONG_TYPE, "main", "must be a string"))
    for key, (kind, described) in _OPTIONAL_TYPES.items():
        if key in manifest and not isinstance(manifest[key], kind):
            findings.append(Finding.error(Code.WRONG_TYPE, key, f"must be {described}"))
    permissions = manifest.get("permissions")
    if isinstance(permissions, list) and not _is_str_list(permissions):
        findings.append(Finding.error(Code.WRONG_TYPE, "permissions", "must be a list of strings"))
    declaration = manifest.get("mcp")
    if isinstance(declaration, dict):
        findings += mcp_findings(declaration)
    elif "mcp" not in manifest and (plugin_type or manifest.get("type")) == "mcp":
        message = "is required for a plugin of type mcp"
        findings.append(Finding.error(Code.MCP_REQUIRED, "mcp", message))
    return findings


def mcp_findings(declaration: object, path: str = "mcp") -> list[Finding]:
    """The MCP capability declaration: a stdio command, or a remote server's URL."""
    if not isinstance(declaration, dict):
        return [Finding.error(Code.MCP_INVALID, path, "must be an object")]
    transport = declaration.get("transport", STDIO)
    if transport == STDIO:
        return _stdio_findings(declaration, path)
    if transport in MCP_TRANSPORTS:
        url = declaration.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            message = f"must be an http(s) URL for transport {transport}"
            return [Finding.error(Code.MCP_INVALID, join_path(path, "url"), message)]
        return []
    message = 'must be "stdio", "sse" or "streamable-http"'
    return [Finding.error(Code.MCP_INVALID, join_path(path, "transport"), message)]


def _stdio_findings(declaration: Mapping[str, Any], path: str) -> list[Finding]:
    findings: list[Finding] = []
    command = declaration.get("command")
    if not isinstance(command, str) or not command.strip():
        message = "must be a non-empty string for a stdio server"
        findings.append(Finding.error(Code.MCP_INVALID, join_path(path, "command"), message))
    if not _is_str_list(declaration.get("args", [])):
        message = "must be a list of strings"
        findings.append(Finding.error(Code.MCP_INVALID, join_path(path, "args"), message))
    env = declaration.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
        message = "must map names to strings"
        findings.append(Finding.error(Code.MCP_INVALID, join_path(path, "env"), message))
    return findings


# ---------- distribution (seed 2.4) ----------


def distribution_of(manifest: Mapping[str, Any], *, has_package: bool) -> Distribution | None:
    """tarball when main is non-empty and a package comes; config_only when main is "" and
    mcp is declared; inline when inlineCode or inlineUiCode is present; else None."""
    main = manifest.get("main")
    if has_package and isinstance(main, str) and main:
        return TARBALL
    if main == "" and "mcp" in manifest:
        return CONFIG_ONLY
    if any(key in manifest for key in INLINE_CODE_KEYS):
        return INLINE
    return None


def distribution_findings(manifest: Mapping[str, Any], *, has_package: bool) -> list[Finding]:
    """A finding when the manifest fits no distribution mode."""
    if distribution_of(manifest, has_package=has_package) is not None:
        return []
    suffix = "" if has_package else ", when no package is uploaded"
    return [Finding.error(Code.DISTRIBUTION_NONE, "", _NO_DISTRIBUTION + suffix)]


# ---------- the plugin record the publishing tool derives ----------


def record_findings(manifest: Mapping[str, Any], *, publishing: bool = True) -> list[Finding]:
    """What the publishing tool needs beyond the service's manifest rules: the manifest
    becomes the plugin record (type, texts, tags, platforms) and its icon is uploaded.
    publishing=False (packing only) leaves out the texts the record requires."""
    findings: list[Finding] = []
    kind = manifest.get("type")
    if isinstance(kind, str) and kind not in PLUGIN_TYPES:
        message = f"must be one of {', '.join(PLUGIN_TYPES)}"
        findings.append(Finding.error(Code.TYPE_UNKNOWN, "type", message))
    if "tags" in manifest and not _is_str_list(manifest["tags"]):
        findings.append(Finding.error(Code.WRONG_TYPE, "tags", "must be a list of strings"))
    if "platforms" in manifest:
        platforms = manifest["platforms"]
        if not _is_str_list(platforms) or not set(platforms) <= set(PLATFORMS):
            message = f"must be a list drawn from {', '.join(PLATFORMS)}"
            findings.append(Finding.error(Code.PLATFORM_UNKNOWN, "platforms", message))
    findings += _config_item_types(manifest)
    findings += _icon_file_type(manifest)
    if publishing:
        for key in ("name", "description"):
            value = manifest.get(key)
            if key not in manifest or (isinstance(value, str) and not value.strip()):
                message = "is required for publishing (a non-empty string)"
                findings.append(Finding.error(Code.REQUIRED, key, message))
    for key in _RECORD_TEXTS:
        if manifest.get(key) is not None and not isinstance(manifest[key], str):
            findings.append(Finding.error(Code.WRONG_TYPE, key, "must be a string"))
    return findings


def _config_item_types(manifest: Mapping[str, Any]) -> list[Finding]:
    config = manifest.get("config")
    if not isinstance(config, list):
        return []
    findings: list[Finding] = []
    for index, item in enumerate(config):
        if not isinstance(item, dict):
            continue
        for name, kind, described in (
            ("label", str, "a string"),
            ("description", str, "a string"),
            ("required", bool, "true or false"),
            ("secret", bool, "true or false"),
        ):
            if name in item and not isinstance(item[name], kind):
                where = join_path(item_path("config", index), name)
                findings.append(Finding.error(Code.WRONG_TYPE, where, f"must be {described}"))
    return findings


def _icon_file_type(manifest: Mapping[str, Any]) -> list[Finding]:
    """The tool uploads a local icon through the icon endpoint: png, jpeg, svg or webp."""
    icon = manifest.get("icon")
    if icon == "":
        message = "must be a relative file path or an icon name"
        return [Finding.error(Code.ICON_EMPTY, "icon", message)]
    if not isinstance(icon, str) or is_url(icon) or not is_icon_path(icon):
        return []
    if PurePosixPath(icon.replace("\\", "/")).suffix.lower() not in ICON_MEDIA_TYPES:
        message = f"{display(icon)} must be a png, jpeg, svg or webp file"
        return [Finding.error(Code.ICON_FORMAT, "icon", message)]
    return []


# ---------- everything, for the publishing tool ----------


def plugin_manifest_findings(
    manifest: Mapping[str, Any],
    package: PackageFiles | None,
    *,
    publishing: bool = True,
) -> list[Finding]:
    """Every finding for a plugin folder about to be published: the service's steps in the
    service's order (a package goes up when main is non-empty), then the record's."""
    return [
        *refusal_findings(manifest),
        *content_findings(manifest, package),
        *record_findings(manifest, publishing=publishing),
    ]


def refusal_findings(manifest: Mapping[str, Any]) -> list[Finding]:
    """The service's steps before automatic validation, in its order: what refuses an
    upload or create-version (nothing is stored), as opposed to the findings a version
    keeps (`rules.review`)."""
    findings = [
        *identity_findings(manifest),
        *category_findings(manifest),
        *shape_findings(manifest),
    ]
    main = manifest.get("main")
    if isinstance(main, str):
        findings += distribution_findings(manifest, has_package=bool(main))
    return findings


def _required_string(manifest: Mapping[str, Any], key: str) -> list[Finding]:
    if key not in manifest:
        return [Finding.error(Code.REQUIRED, key, "is required")]
    if not isinstance(manifest[key], str):
        return [Finding.error(Code.WRONG_TYPE, key, "must be a string")]
    return []


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def manifest_json_schema() -> dict[str, Any]:
    """The keys of a manifest as JSON Schema, for documents that carry one (create-version).

    What it can say: the keys every manifest needs and the JSON type of the known ones. The
    rules above stay the judge of what depends on more than the document: that id and
    version equal the plugin's key and the requested version, the category table, the
    plugin's type (an mcp plugin needs `mcp`), and how main and inline code go together.
    """
    json_types = {str: "string", list: "array", dict: "object", bool: "boolean"}
    properties: dict[str, Any] = {
        key: {"type": json_types[kind]} for key, (kind, _) in _OPTIONAL_TYPES.items()
    }
    properties["permissions"] = {"type": "array", "items": {"type": "string"}}
    properties["id"] = {
        "type": "string",
        "pattern": f"^{PLUGIN_KEY_PATTERN.pattern}$",
        "minLength": PLUGIN_KEY_MIN_LENGTH,
        "maxLength": PLUGIN_KEY_MAX_LENGTH,
        "not": plugin_key_exclusions(),
    }
    properties["version"] = {"type": "string", "pattern": SEMVER_PATTERN}
    properties["category"] = {"type": "string"}
    properties["main"] = {"type": "string"}
    return {
        "type": "object",
        "required": ["id", "version", "category", "main"],
        "properties": properties,
    }


def plugin_key_exclusions() -> dict[str, Any]:
    """JSON Schema `not` of a plugin key (and scenario id): UUID-shaped, or reserved."""
    return {"anyOf": [{"pattern": f"^{UUID_PATTERN.pattern}$"}, {"enum": sorted(RESERVED_KEYS)}]}
