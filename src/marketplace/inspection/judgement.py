"""What an inspection's report means for its version (CONTRACT 13): the permissions its
observations need that the manifest does not declare, and the findings against the last
approved version's inspection.

Permissions: `network:<host>` (an address or a looked-up name), `fs.write`, `process.spawn`,
`secrets.read`. A declared permission covers an observed one by `marketplace_rules.grants`
(hosts matched as host names: `network:*.example.com` covers `a.b.example.com`, not
`example.com.evil.net`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from marketplace_rules.changes import permissions_of
from marketplace_rules.findings import Code, Finding
from marketplace_rules.grants import granted_by_any

FS_WRITE = "fs.write"
PROCESS_SPAWN = "process.spawn"
SECRETS_READ = "secrets.read"
_SHOWN = 3  # observations named per undeclared permission in its finding's message
_DESCRIPTION_SHOWN = 300


def needed(observed: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each permission the observations need, with what was observed for it, in order."""
    needs: dict[str, list[str]] = {}
    for attempt in observed.get("network") or []:
        host, port = str(attempt.get("host")), attempt.get("port")
        needs.setdefault(f"network:{host}", []).append(
            f"look-up of {host}" if port is None else f"connection to {host}:{port}"
        )
    for key, permission, verb in (
        ("filesWritten", FS_WRITE, "write to"),
        ("processes", PROCESS_SPAWN, "runs"),
        ("sensitiveReads", SECRETS_READ, "read of"),
    ):
        for path in observed.get(key) or []:
            needs.setdefault(permission, []).append(f"{verb} {path}")
    return needs


def undeclared(observed: Mapping[str, Any], manifest: Mapping[str, Any]) -> dict[str, list[str]]:
    """The needed permissions no declared permission covers (the narrowest for each)."""
    declared = permissions_of(manifest)
    return {
        permission: seen
        for permission, seen in needed(observed).items()
        if not granted_by_any(declared, permission)
    }


def undeclared_findings(missing: Mapping[str, list[str]]) -> list[Finding]:
    findings = []
    for permission, seen in missing.items():
        shown = "; ".join(seen[:_SHOWN]) + (
            f"; and {len(seen) - _SHOWN} more" if len(seen) > _SHOWN else ""
        )
        message = f"the server needs undeclared permission {permission} ({shown})"
        findings.append(Finding.error(Code.CAPABILITY_UNDECLARED, "permissions", message))
    return findings


def failed_finding(error: str | None) -> Finding:
    return Finding.warning(
        Code.INSPECTION_FAILED, "inspection", f"the inspection failed: {error or 'no reason'}"
    )


def _by_name(items: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {str(item.get("name")): item for item in items}


def _shown(description: Any) -> str:
    text = "" if description is None else str(description)
    return repr(text if len(text) <= _DESCRIPTION_SHOWN else text[: _DESCRIPTION_SHOWN - 1] + "…")


def _changed(what: str, before: Any, after: Any) -> str:
    return f"{what} changed: before {_shown(before)}, after {_shown(after)}"


def change_findings(report: Mapping[str, Any], base: Mapping[str, Any]) -> list[Finding]:
    """tool-added/removed/changed, prompt-changed and instructions-changed against the
    report of the last approved version."""
    findings: list[Finding] = []
    tools, base_tools = _by_name(report.get("tools") or []), _by_name(base.get("tools") or [])
    for name, tool in tools.items():
        before = base_tools.get(name)
        path = f"tool:{name}"
        if before is None:
            findings.append(Finding.info(Code.TOOL_ADDED, path, f"new tool {name!r}"))
        elif before.get("fingerprint") != tool.get("fingerprint"):
            message = _changed(f"tool {name!r}", before.get("description"), tool.get("description"))
            findings.append(Finding.warning(Code.TOOL_CHANGED, path, message))
    for name in base_tools.keys() - tools.keys():
        findings.append(Finding.info(Code.TOOL_REMOVED, f"tool:{name}", f"tool {name!r} removed"))
    prompts, base_prompts = (
        _by_name(report.get("prompts") or []),
        _by_name(base.get("prompts") or []),
    )
    for name, prompt in prompts.items():
        before = base_prompts.get(name)
        if before is not None and before.get("fingerprint") != prompt.get("fingerprint"):
            message = _changed(
                f"prompt {name!r}", before.get("description"), prompt.get("description")
            )
            findings.append(Finding.warning(Code.PROMPT_CHANGED, f"prompt:{name}", message))
    instructions = (report.get("server") or {}).get("instructions")
    base_instructions = (base.get("server") or {}).get("instructions")
    if instructions != base_instructions:
        message = _changed("instructions", base_instructions, instructions)
        findings.append(Finding.warning(Code.INSTRUCTIONS_CHANGED, "instructions", message))
    return findings
