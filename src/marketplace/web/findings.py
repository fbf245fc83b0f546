"""A version's automatic-check findings (CONTRACT 12), grouped by severity for the page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str
    path: str
    message: str


@dataclass(frozen=True)
class FindingGroup:
    severity: str
    findings: tuple[Finding, ...]


def _text(entry: dict[str, Any], key: str) -> str:
    value = entry.get(key)
    return value if isinstance(value, str) else ""


def findings_of(raw: Any) -> list[Finding]:
    """The stored list, read defensively: an unknown severity counts as info."""
    if not isinstance(raw, list):
        return []
    found = []
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        severity = _text(entry, "severity")
        found.append(
            Finding(
                code=_text(entry, "code"),
                severity=severity if severity in SEVERITIES else "info",
                path=_text(entry, "path"),
                message=_text(entry, "message"),
            )
        )
    return found


def grouped(raw: Any) -> list[FindingGroup]:
    """Errors first, then warnings, then information; empty groups left out."""
    found = findings_of(raw)
    groups = []
    for severity in SEVERITIES:
        members = tuple(f for f in found if f.severity == severity)
        if members:
            groups.append(FindingGroup(severity, members))
    return groups


def counts(raw: Any) -> dict[str, int]:
    found = findings_of(raw)
    return {severity: sum(f.severity == severity for f in found) for severity in SEVERITIES}
