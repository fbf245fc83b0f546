"""What a new version changes against the item's last approved version, as far as a
reviewer must notice: permissions, the MCP launch, new required or secret settings.

`base` is the last approved version's manifest (for scenarios, their metadata); None
when no version was ever approved, and then the first version's permissions are listed.

Permissions are compared by scope. A permission is a list of segments separated by `.`,
`:` or `/`; one permission covers another when its segments are a prefix of the other's,
segment by segment equal, or `*` (any one segment), or ending in `*` (any segment
starting so). So `fs` and `fs.*` cover `fs.read`, `network:*` covers
`network:api.example.com`, `*` covers everything. A permission the last approved version
lacked is widened when it covers one that version had (`fs.*` after `fs.read`), new when
no permission of that version covers it, and not reported when one does (narrowed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from marketplace_rules.findings import Code, Finding, item_path, join_path
from marketplace_rules.limits import PERMISSIONS_COMPARED_MAX
from marketplace_rules.text import display
from marketplace_rules.vocabulary import STDIO

_SEPARATORS = re.compile(r"[.:/]")
_WILDCARD = "*"
# The keys of an mcp declaration that decide what runs or where it connects.
LAUNCH_KEYS: Final = ("transport", "command", "args", "url")
_LISTED_MAX = 20  # permissions named in one message; the rest are counted
_VALUE_SHOWN = 150  # characters of a before/after value in a message


def change_findings(manifest: Mapping[str, Any], base: Mapping[str, Any] | None) -> list[Finding]:
    """Findings against the last approved version; the first version's permissions."""
    if base is None:
        return permissions_requested(manifest)
    return [
        *permission_findings(manifest, base),
        *mcp_launch_findings(manifest, base),
        *config_change_findings(manifest, base),
    ]


# ---------- permissions ----------


def permissions_of(manifest: Mapping[str, Any]) -> list[str]:
    """The manifest's permissions (strings only; anything else is the shape rules' job)."""
    value = manifest.get("permissions")
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]


def covers(wide: str, narrow: str) -> bool:
    """Whether permission `wide` grants at least what `narrow` does (module doc)."""
    wide_parts, narrow_parts = _SEPARATORS.split(wide), _SEPARATORS.split(narrow)
    if len(wide_parts) > len(narrow_parts):
        return False
    return all(_segment_covers(w, n) for w, n in zip(wide_parts, narrow_parts, strict=False))


def _segment_covers(wide: str, narrow: str) -> bool:
    if wide == narrow or wide == _WILDCARD:
        return True
    return wide.endswith(_WILDCARD) and narrow.startswith(wide[:-1])


def permissions_requested(manifest: Mapping[str, Any]) -> list[Finding]:
    permissions = list(dict.fromkeys(permissions_of(manifest)))
    if not permissions:
        return []
    return [
        Finding.info(
            Code.PERMISSIONS_REQUESTED,
            "permissions",
            f"no version was approved before; this one requests {_count(permissions)}: "
            + _listed(permissions),
        )
    ]


def permission_findings(manifest: Mapping[str, Any], base: Mapping[str, Any]) -> list[Finding]:
    """New and widened permissions, each at its place in the new manifest."""
    before = permissions_of(base)
    known = set(before)
    compared = before[:PERMISSIONS_COMPARED_MAX]
    findings: list[Finding] = []
    seen: set[str] = set()
    for index, permission in enumerate(_indexed_permissions(manifest)):
        if permission is None or permission in known or permission in seen:
            continue
        seen.add(permission)
        where = item_path("permissions", index)
        if len(seen) > PERMISSIONS_COMPARED_MAX:
            findings.append(_added(where, permission))
            continue
        narrower = [old for old in compared if covers(permission, old)]
        if narrower:
            message = (
                f'"{display(permission, 80)}" widens {_listed(narrower)} of the last approved '
                "version"
            )
            findings.append(Finding.warning(Code.PERMISSION_WIDENED, where, message))
        elif not any(covers(old, permission) for old in compared):
            findings.append(_added(where, permission))
    return findings


def _indexed_permissions(manifest: Mapping[str, Any]) -> list[str | None]:
    """The permissions list as it is, non-strings as None, so indexes stay the manifest's."""
    value = manifest.get("permissions")
    if not isinstance(value, list):
        return []
    return [item if isinstance(item, str) else None for item in value]


def _added(where: str, permission: str) -> Finding:
    message = f'"{display(permission, 80)}" is new since the last approved version'
    return Finding.warning(Code.PERMISSION_ADDED, where, message)


# ---------- the MCP launch ----------


def mcp_launch_findings(manifest: Mapping[str, Any], base: Mapping[str, Any]) -> list[Finding]:
    """What runs or where it connects, changed: one finding per changed key, before/after."""
    after, before = manifest.get("mcp"), base.get("mcp")
    if not isinstance(after, dict):
        return []  # nothing is launched any more: nothing new to review
    if not isinstance(before, dict):
        launch = ", ".join(
            f"{key} {_shown(_launch_value(after, key))}"
            for key in LAUNCH_KEYS
            if _launch_value(after, key) is not None
        )
        message = f"declares an MCP server ({launch}); the last approved version declared none"
        return [Finding.warning(Code.MCP_LAUNCH_CHANGED, "mcp", message)]
    findings = [
        Finding.warning(
            Code.MCP_LAUNCH_CHANGED,
            join_path("mcp", key),
            f"changed from {_shown(_launch_value(before, key))} "
            f"to {_shown(_launch_value(after, key))}",
        )
        for key in LAUNCH_KEYS
        if _launch_value(before, key) != _launch_value(after, key)
    ]
    env_before, env_after = _env_keys(before), _env_keys(after)
    if env_before != env_after:
        added, removed = sorted(env_after - env_before), sorted(env_before - env_after)
        parts = [f"added {_listed(added)}"] if added else []
        parts += [f"removed {_listed(removed)}"] if removed else []
        message = "variable names changed: " + "; ".join(parts)
        findings.append(Finding.warning(Code.MCP_LAUNCH_CHANGED, "mcp.env", message))
    return findings


def _launch_value(declaration: Mapping[str, Any], key: str) -> Any:
    value = declaration.get(key)
    if key == "transport" and value is None:
        return STDIO  # the declaration's default
    return value


def _env_keys(declaration: Mapping[str, Any]) -> set[str]:
    env = declaration.get("env")
    return {str(key) for key in env} if isinstance(env, dict) else set()


# ---------- configuration items ----------


def config_change_findings(manifest: Mapping[str, Any], base: Mapping[str, Any]) -> list[Finding]:
    """Settings that are newly secret (warning) or newly required (info), by key."""
    before = {item["key"]: item for item in _config_items(base)}
    findings: list[Finding] = []
    config = manifest.get("config")
    for index, item in enumerate(config if isinstance(config, list) else []):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            continue
        key = display(item["key"], 80)
        old = before.get(item["key"])
        where = item_path("config", index)
        if item.get("secret") is True and not (old and old.get("secret") is True):
            state = "a new secret setting" if old is None else "now secret"
            required = ", required" if item.get("required") is True else ""
            message = f'"{key}" is {state}{required}'
            findings.append(Finding.warning(Code.CONFIG_SECRET_ADDED, where, message))
        elif item.get("required") is True and not (old and old.get("required") is True):
            state = "a new required setting" if old is None else "now required"
            findings.append(Finding.info(Code.CONFIG_REQUIRED_ADDED, where, f'"{key}" is {state}'))
    return findings


def _config_items(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    config = manifest.get("config")
    if not isinstance(config, list):
        return []
    return [item for item in config if isinstance(item, dict) and isinstance(item.get("key"), str)]


# ---------- words ----------


def _shown(value: Any) -> str:
    """A before/after value: strings quoted, lists and objects as JSON, escaped and cut."""
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return f'"{display(value, _VALUE_SHOWN)}"'
    return display(json.dumps(value, ensure_ascii=False), _VALUE_SHOWN)


def _listed(items: list[str]) -> str:
    shown = ", ".join(f'"{display(item, 80)}"' for item in items[:_LISTED_MAX])
    extra = len(items) - _LISTED_MAX
    return shown + (f" and {extra} more" if extra > 0 else "")


def _count(permissions: list[str]) -> str:
    return f"{len(permissions)} permission" + ("" if len(permissions) == 1 else "s")
