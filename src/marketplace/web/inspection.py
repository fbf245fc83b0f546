"""A plugin version's inspection (CONTRACT 13) as the console shows it: the run's status,
what the server said it offers, what it tried to do against what its manifest declares,
and what changed since the last approved version's inspection.

Everything in a report was written by the publisher's server (names, descriptions,
schemas, instructions): these classes keep it as plain text and data, and the templates
only ever print it escaped. `load_inspection` is the page's one seam; `queue_badges` is
the queue's, from the row and the findings already loaded with the version.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.inspection.judgement import needed
from marketplace.inspection.ledger import is_applicable
from marketplace.inspection.schemas import inspection_json
from marketplace.models import Distribution, InspectionStatus, PluginInspection, PluginVersion
from marketplace.models.inspections import MAX_ATTEMPTS
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.audit import SYSTEM_REVIEWER
from marketplace.publishing.diff import diff_base
from marketplace_rules.changes import covers, permissions_of
from marketplace_rules.findings import Code

DONE = InspectionStatus.DONE.value
FAILED = InspectionStatus.FAILED.value
NOT_APPLICABLE = InspectionStatus.NOT_APPLICABLE.value
IN_PROGRESS = frozenset({InspectionStatus.QUEUED.value, InspectionStatus.RUNNING.value})
TOOL_CODES = frozenset({Code.TOOL_ADDED, Code.TOOL_REMOVED, Code.TOOL_CHANGED})


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _same(a: Any, b: Any) -> bool:
    # As JSON, as the fingerprints see them: true is not 1.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _items(value: Any) -> list[Mapping[str, Any]]:
    """A report's list, read defensively: entries that are not objects are left out."""
    return (
        [entry for entry in value if isinstance(entry, Mapping)] if isinstance(value, list) else []
    )


@dataclass(frozen=True)
class ServerView:
    name: str
    version: str
    instructions: str


@dataclass(frozen=True)
class ToolView:
    name: str
    description: str
    input_schema: Any
    annotations: Any
    fingerprint: str


@dataclass(frozen=True)
class PromptView:
    name: str
    description: str
    arguments: Any
    fingerprint: str


@dataclass(frozen=True)
class ResourceView:
    uri: str
    name: str
    description: str
    mime_type: str


@dataclass(frozen=True)
class CapabilityRow:
    """A permission the observations need, what was observed for it, and the declared
    permission that covers it (None: undeclared)."""

    permission: str
    observed: tuple[str, ...]
    covered_by: str | None

    @property
    def undeclared(self) -> bool:
        return self.covered_by is None


@dataclass(frozen=True)
class ToolChange:
    """A tool of the same name with another fingerprint: both sides, for a side-by-side."""

    name: str
    before: ToolView
    after: ToolView

    @property
    def description_changed(self) -> bool:
        return self.before.description != self.after.description

    @property
    def schema_changed(self) -> bool:
        return not _same(self.before.input_schema, self.after.input_schema)

    @property
    def annotations_changed(self) -> bool:
        return not _same(self.before.annotations, self.after.annotations)

    @property
    def what_changed(self) -> str:
        parts = (
            ("description", self.description_changed),
            ("input schema", self.schema_changed),
            ("annotations", self.annotations_changed),
        )
        return ", ".join(part for part, changed in parts if changed)


@dataclass(frozen=True)
class TextChange:
    """A prompt's description or the server's instructions, before and after."""

    name: str
    before: str
    after: str


@dataclass(frozen=True)
class InspectionChanges:
    base_version: str
    tools_added: tuple[ToolView, ...]
    tools_removed: tuple[ToolView, ...]
    tools_changed: tuple[ToolChange, ...]
    prompts_changed: tuple[TextChange, ...]
    instructions: TextChange | None  # None: the same instructions

    @property
    def unchanged(self) -> bool:
        return not (
            self.tools_added
            or self.tools_removed
            or self.tools_changed
            or self.prompts_changed
            or self.instructions
        )


@dataclass(frozen=True)
class InspectionView:
    status: str  # queued | running | done | failed | not_applicable
    attempts: int
    queued_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    why_not_applicable: str | None
    server: ServerView | None
    tools: tuple[ToolView, ...]
    prompts: tuple[PromptView, ...]
    resources: tuple[ResourceView, ...]
    capabilities: tuple[CapabilityRow, ...]
    declared: tuple[str, ...]
    changes: InspectionChanges | None
    changes_note: str  # why there is no comparison ("" when there is one)

    @property
    def max_attempts(self) -> int:
        return MAX_ATTEMPTS

    @property
    def in_progress(self) -> bool:
        return self.status in IN_PROGRESS

    @property
    def has_report(self) -> bool:
        return self.status in (DONE, FAILED)

    @property
    def undeclared(self) -> tuple[CapabilityRow, ...]:
        return tuple(row for row in self.capabilities if row.undeclared)

    @property
    def seconds(self) -> int | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return max(0, round((self.finished_at - self.started_at).total_seconds()))


def _server(value: Any) -> ServerView | None:
    if not isinstance(value, Mapping):
        return None
    return ServerView(
        _text(value.get("name")), _text(value.get("version")), _text(value.get("instructions"))
    )


def _tool(entry: Mapping[str, Any]) -> ToolView:
    return ToolView(
        name=_text(entry.get("name")),
        description=_text(entry.get("description")),
        input_schema=entry.get("inputSchema"),
        annotations=entry.get("annotations"),
        fingerprint=_text(entry.get("fingerprint")),
    )


def _prompt(entry: Mapping[str, Any]) -> PromptView:
    return PromptView(
        name=_text(entry.get("name")),
        description=_text(entry.get("description")),
        arguments=entry.get("arguments"),
        fingerprint=_text(entry.get("fingerprint")),
    )


def _resource(entry: Mapping[str, Any]) -> ResourceView:
    return ResourceView(
        uri=_text(entry.get("uri")),
        name=_text(entry.get("name")),
        description=_text(entry.get("description")),
        mime_type=_text(entry.get("mimeType")),
    )


def capability_rows(observed: Any, declared: Iterable[str]) -> tuple[CapabilityRow, ...]:
    """Each permission the observations need (judgement.needed), with the first declared
    permission that covers it, as the verdict judges it."""
    granted = list(declared)
    rows = []
    for permission, seen in needed(observed if isinstance(observed, Mapping) else {}).items():
        cover = next((grant for grant in granted if covers(grant, permission)), None)
        rows.append(CapabilityRow(permission, tuple(seen), cover))
    return tuple(rows)


def compare_reports(
    base_version: str, report: Mapping[str, Any], base: Mapping[str, Any]
) -> InspectionChanges:
    """This report against the base version's, as the inspection's findings judge it:
    tools by name and fingerprint, prompts by name and fingerprint, the instructions."""
    tools = {t.name: t for t in map(_tool, _items(report.get("tools")))}
    before_tools = {t.name: t for t in map(_tool, _items(base.get("tools")))}
    prompts = {p.name: p for p in map(_prompt, _items(report.get("prompts")))}
    before_prompts = {p.name: p for p in map(_prompt, _items(base.get("prompts")))}
    instructions = (_server(report.get("server")) or ServerView("", "", "")).instructions
    before = (_server(base.get("server")) or ServerView("", "", "")).instructions
    return InspectionChanges(
        base_version=base_version,
        tools_added=tuple(t for name, t in tools.items() if name not in before_tools),
        tools_removed=tuple(t for name, t in before_tools.items() if name not in tools),
        tools_changed=tuple(
            ToolChange(name, before_tools[name], tool)
            for name, tool in tools.items()
            if name in before_tools and before_tools[name].fingerprint != tool.fingerprint
        ),
        prompts_changed=tuple(
            TextChange(name, before_prompts[name].description, prompt.description)
            for name, prompt in prompts.items()
            if name in before_prompts and before_prompts[name].fingerprint != prompt.fingerprint
        ),
        instructions=(
            TextChange("instructions", before, instructions) if before != instructions else None
        ),
    )


def _why_not_applicable(version: PluginVersion) -> str:
    if version.distribution == Distribution.CONFIG_ONLY.value:
        return (
            "This version is config-only: the marketplace ships no code of its own to run, "
            "so there is nothing to inspect."
        )
    if not is_applicable(version.manifest, version.distribution):
        return (
            "Its manifest declares no stdio MCP server (mcp.command), so there is no server "
            "to run and list."
        )
    if version.reviewed_by == SYSTEM_REVIEWER and version.review_status == "rejected":
        return (
            "The upload's own checks rejected this version, so its code is never distributed "
            "and was not run."
        )
    return "This version was not inspected (it was uploaded before inspections began)."


async def _changes(
    session: AsyncSession, version: PluginVersion, row: PluginInspection | None
) -> tuple[InspectionChanges | None, str]:
    if row is None or row.status != DONE:
        return None, "Compared once this version's inspection is done."
    base = await diff_base(session, PLUGINS, version)
    if base is None:
        return None, "No approved version to compare with."
    inspection = base.inspection
    if inspection is None or inspection.status != DONE:
        return None, (
            f"The last approved version, {base.version}, has no finished inspection "
            "to compare with."
        )
    return compare_reports(base.version, row.report or {}, inspection.report or {}), ""


async def load_inspection(session: AsyncSession, version: PluginVersion) -> InspectionView:
    """The version's inspection and, when it and the last approved version's are both
    done, what changed between them."""
    row = version.inspection
    shown = inspection_json(row)
    changes, note = await _changes(session, version, row)
    declared = permissions_of(version.manifest)
    return InspectionView(
        status=shown["status"],
        attempts=row.attempts if row is not None else 0,
        queued_at=row.queued_at if row is not None else None,
        started_at=shown["startedAt"],
        finished_at=shown["finishedAt"],
        error=shown["error"],
        why_not_applicable=_why_not_applicable(version) if row is None else None,
        server=_server(shown["server"]),
        tools=tuple(map(_tool, _items(shown["tools"]))),
        prompts=tuple(map(_prompt, _items(shown["prompts"]))),
        resources=tuple(map(_resource, _items(shown["resources"]))),
        capabilities=capability_rows(shown["observed"], declared),
        declared=tuple(declared),
        changes=changes,
        changes_note=note,
    )


@dataclass(frozen=True)
class Badge:
    label: str
    tone: str  # a badge-<tone> CSS class: pending, error, warning
    title: str


def queue_badges(version: PluginVersion) -> tuple[Badge, ...]:
    """What the queue says of a version's inspection: still running, or what it found.
    Reads only the row and findings loaded with the version (no query)."""
    row = version.inspection
    if row is None:
        return ()
    codes = {f.get("code") for f in version.findings or [] if isinstance(f, Mapping)}
    badges = []
    if row.status in IN_PROGRESS:
        badges.append(Badge("inspecting", "pending", f"inspection {row.status}"))
    report = row.report or {}
    if Code.CAPABILITY_UNDECLARED in codes or report.get("undeclared"):
        badges.append(
            Badge(
                "undeclared capability",
                "error",
                ", ".join(map(str, report.get("undeclared") or [])),
            )
        )
    if row.status == FAILED:
        badges.append(Badge("inspection failed", "warning", row.error or ""))
    if codes & TOOL_CODES:
        badges.append(Badge("tools changed", "warning", "tools added, removed or changed"))
    return tuple(badges)
