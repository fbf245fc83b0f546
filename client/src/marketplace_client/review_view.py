"""How `marketplace review` prints for people: the queue as aligned columns, a version with
its findings, a diff as +/-/~ lines. Pure functions of the service's JSON, plus `now`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rich.cells import cell_len

KIB = 1024


@dataclass(frozen=True)
class QueueRow:
    """One thing waiting for a reviewer: a new plugin, a plugin or scenario version, or a
    developer's identity."""

    type: str  # "plugin" (approve-plugin), "plugin-version", "scenario-version", "identity"
    id: str  # what the review commands take: the plugin's id, or the version's
    key: str  # pluginKey or scenario id
    name: str
    version: str | None
    created_at: str
    parent_id: str  # the plugin or scenario, whose owner is the developer
    owner_id: str | None  # known for plugins; looked up for versions
    findings: int | None  # None for a plugin (its versions carry the findings)

    def to_json(self, now: datetime, developer: Mapping[str, str] | None) -> dict[str, Any]:
        return {
            "type": self.type,
            "id": self.id,
            "key": self.key,
            "name": self.name,
            "version": self.version,
            "createdAt": self.created_at,
            "ageSeconds": age_seconds(self.created_at, now),
            "developer": dict(developer) if developer else None,
            "findings": self.findings,
        }


def utcnow() -> datetime:
    return datetime.now(UTC)


def parse_time(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def age_seconds(created_at: str, now: datetime) -> int | None:
    created = parse_time(created_at)
    return None if created is None else max(0, int((now - created).total_seconds()))


def format_age(seconds: int | None) -> str:
    """Two units at most: `3d 4h`, `5h 2m`, `12m`, `<1m`."""
    if seconds is None:
        return "?"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if days:
        return f"{days}d {hours % 24}h"
    if hours:
        return f"{hours}h {minutes % 60}m"
    return f"{minutes}m" if minutes else "<1m"


def format_size(size: int | None) -> str:
    if size is None:
        return "-"
    if size < KIB:
        return f"{size} B"
    if size < KIB * KIB:
        return f"{size / KIB:.1f} KiB"
    return f"{size / (KIB * KIB):.1f} MiB"


def columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as left-aligned columns, never wrapped (ids must stay whole to be copied);
    widths in terminal cells, so names in Chinese line up too."""
    widths = [max(cell_len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    return [
        "  ".join(
            cell + " " * (width - cell_len(cell)) for cell, width in zip(row, widths, strict=True)
        ).rstrip()
        for row in rows
    ]


def queue_lines(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """The queue page (QueueRow.to_json items) as a table with a header."""
    header = ["AGE", "TYPE", "ID", "ITEM", "VERSION", "DEVELOPER", "FINDINGS"]
    rows = [header]
    for item in items:
        developer = item.get("developer") or {}
        findings = item.get("findings")
        rows.append(
            [
                format_age(item.get("ageSeconds")),
                str(item["type"]),
                str(item["id"]),
                str(item["key"]),
                str(item.get("version") or "-"),
                str(developer.get("name") or developer.get("id") or "?"),
                "-" if findings is None else str(findings),
            ]
        )
    return columns(rows)


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def finding_lines(findings: Sequence[Mapping[str, Any]]) -> list[str]:
    if not findings:
        return ["Findings: none"]
    lines = [f"Findings ({len(findings)}):"]
    for finding in findings:
        path = finding.get("path")
        where = f"{path}: " if path else ""
        lines.append(
            f"  {finding.get('severity', '?'):<7} {finding.get('code', '?')}  "
            f"{where}{finding.get('message', '')}"
        )
    return lines


def version_lines(
    kind_word: str,
    version: Mapping[str, Any],
    item: Mapping[str, Any],
    developer: str | None,
    now: datetime,
) -> list[str]:
    """`review show`: what the version is, who sent it, its state, findings and contents."""
    key = item.get("pluginKey") or item.get("id")
    name = item.get("name")
    created = str(version.get("createdAt"))
    fields = [
        ("id", str(version.get("id"))),
        (
            "status",
            f"{version.get('reviewStatus')}" + ("  (current)" if version.get("isLatest") else ""),
        ),
        ("created", f"{created}  ({format_age(age_seconds(created, now))} ago)"),
        ("developer", developer or str(item.get("ownerId") or "?")),
    ]
    if "distribution" in version:
        fields.append(("distribution", str(version.get("distribution"))))
    sha256 = version.get("sha256")
    fields.append(
        ("package", f"{format_size(version.get('size'))}, sha256 {sha256}" if sha256 else "none")
    )
    if version.get("reviewNote"):
        fields.append(("review note", str(version.get("reviewNote"))))
    title = f"{kind_word.capitalize()} version {version.get('version')} of {key}"
    lines = [title + (f" ({name})" if name else "")]
    lines += [f"  {label + ':':<13} {value}" for label, value in fields]
    if version.get("changelog"):
        lines.append("Changelog:")
        lines += [f"  {line}" for line in str(version["changelog"]).splitlines()]
    lines += finding_lines(version.get("findings") or [])
    if isinstance(version.get("manifest"), dict):
        lines.append("Manifest:")
        lines += [f"  {line}" for line in _pretty(version["manifest"]).splitlines()]
    else:
        metadata = {
            k: version.get(k)
            for k in ("name", "nameZh", "type", "category", "permissions", "description")
            if version.get(k) is not None
        }
        lines.append("Metadata:")
        lines += [f"  {line}" for line in _pretty(metadata).splitlines()]
    return lines


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def diff_lines(diff: Mapping[str, Any]) -> list[str]:
    """`review diff`: the base, then files, manifest keys and new permissions."""
    base = diff.get("base")
    lines = [
        f"Against version {base['version']} ({base['id']}), the last approved"
        if base
        else "First version: nothing approved to compare with, everything is new"
    ]
    files = diff.get("files") or {}
    added, removed, changed = (files.get(k) or [] for k in ("added", "removed", "changed"))
    lines.append(f"Files: {len(added)} added, {len(removed)} removed, {len(changed)} changed")
    lines += [f"  + {f['path']} ({format_size(f.get('size'))})" for f in added]
    lines += [f"  - {f['path']} ({format_size(f.get('size'))})" for f in removed]
    lines += [
        f"  ~ {f['path']} ({format_size(f.get('sizeBefore'))} -> {format_size(f.get('sizeAfter'))})"
        for f in changed
    ]
    manifest = diff.get("manifest") or {}
    keys = {k: manifest.get(k) or {} for k in ("added", "removed", "changed")}
    counts = ", ".join(f"{len(keys[k])} {k}" for k in keys)
    lines.append(f"Manifest: {counts}")
    lines += [f"  + {k}: {_value(v)}" for k, v in keys["added"].items()]
    lines += [f"  - {k}: {_value(v)}" for k, v in keys["removed"].items()]
    lines += [
        f"  ~ {k}: {_value(v.get('before'))} -> {_value(v.get('after'))}"
        for k, v in keys["changed"].items()
    ]
    permissions = diff.get("newPermissions") or []
    lines.append("New permissions: " + (", ".join(permissions) if permissions else "none"))
    return lines
