"""Finishing an inspection (CONTRACT 13): the report kept with the version, its findings,
and the move an error brings, all in one transaction under the plugin's lock.

An error finding (an undeclared capability) rejects a pending version (reviewedBy
`system`, trigger auto-validation) and takes down a version an administrator approved
before the inspection ended (audit TAKEDOWN, revocation list, current version moving back).
The findings replace the version's earlier inspection findings, so a retried job never
lists one twice; among them the text findings over what the server offers a model (CONTRACT
14: its instructions, tools and prompts), while the upload's (manifest and files) stay.
Those are warnings and infos: they never reject nor take down.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.errors import VersionNotFound
from marketplace.inspection import judgement, ledger
from marketplace.inspection.report import RunReport
from marketplace.kit.dbtypes import utcnow
from marketplace.kit.jsonsafe import storable
from marketplace.models import InspectionStatus, PluginInspection, PluginVersion, ReviewStatus
from marketplace.packages.manifest import note_line
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing import review
from marketplace.publishing.audit import Trigger
from marketplace.publishing.diff import diff_base
from marketplace.publishing.findings import as_stored
from marketplace.publishing.lookup import lock_item, locked_version_with_item
from marketplace.publishing.takedown import REASON_MAX_CHARS, take_down_version
from marketplace_rules.findings import Code, Finding, Severity
from marketplace_rules.model_text import AI_CODES, inspection_texts, model_text_findings
from marketplace_rules.review import finalize

INSPECTION_CODES = frozenset(
    {
        Code.CAPABILITY_UNDECLARED,
        Code.INSPECTION_FAILED,
        Code.TOOL_ADDED,
        Code.TOOL_REMOVED,
        Code.TOOL_CHANGED,
        Code.PROMPT_CHANGED,
        Code.INSTRUCTIONS_CHANGED,
    }
)

# Paths of the text findings (CONTRACT 14) over what the server offers a model: found at
# inspection's end, replaced with the inspection's other findings; the same codes at
# manifest paths and `file:` paths are the upload's and stay.
INSPECTION_TEXT_PATHS = ("tool:", "prompt:")
INSPECTION_TEXT_PATH = "instructions"


def is_inspection_finding(finding: dict[str, Any]) -> bool:
    """A stored finding that inspection's end wrote (and a retried job writes again)."""
    code = finding.get("code")
    if code in INSPECTION_CODES:
        return True
    path = str(finding.get("path") or "")
    return code in AI_CODES and (
        path.startswith(INSPECTION_TEXT_PATHS) or path == INSPECTION_TEXT_PATH
    )


# A report is loaded with its version: it stays small whatever the server lists.
REPORT_MAX_BYTES = 1024 * 1024
_LISTINGS = ("resources", "prompts", "tools")  # trimmed in this order


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _within_budget(stored: dict[str, Any]) -> dict[str, Any]:
    """Over REPORT_MAX_BYTES: input schemas give way first (a marker stays, the
    fingerprint still covers the schema sent), then the listings' last items."""
    if _size(stored) <= REPORT_MAX_BYTES:
        return stored
    for tool in stored["tools"]:
        if _size(tool.get("inputSchema")) > 1024:
            tool["inputSchema"] = {"x-marketplace-truncated": True}
    for key in _LISTINGS:
        while stored[key] and _size(stored) > REPORT_MAX_BYTES:
            stored[key].pop()
    return stored


def stored_report(report: RunReport, undeclared: Sequence[str]) -> dict[str, Any]:
    stored: dict[str, Any] = storable(
        {
            "server": report.server,
            "tools": report.tools,
            "prompts": report.prompts,
            "resources": report.resources,
            "observed": report.observed.to_json(),
            "undeclared": list(undeclared),
        }
    )
    return _within_budget(stored)


async def _base_report(session: AsyncSession, version: PluginVersion) -> dict[str, Any] | None:
    base = await diff_base(session, PLUGINS, version)
    inspection = base.inspection if base is not None else None
    if inspection is None or inspection.status != InspectionStatus.DONE.value:
        return None  # nothing inspected to compare with
    return inspection.report


async def _apply(
    session: AsyncSession, version: PluginVersion, row: PluginInspection, report: RunReport
) -> None:
    missing = judgement.undeclared(report.observed.to_json(), version.manifest)
    row.status = report.status
    row.error = report.error
    row.finished_at = utcnow()
    row.lease_token = None
    row.lease_until = None
    row.report = stored_report(report, list(missing))
    findings = judgement.undeclared_findings(missing)
    if report.status == InspectionStatus.FAILED.value:
        findings.append(judgement.failed_finding(report.error))
    base = await _base_report(session, version) if report.status == "done" else None
    if base is not None:
        findings += judgement.change_findings(row.report, base)
    if report.status == InspectionStatus.DONE.value:
        findings += server_text_findings(row.report)
    await _record(session, version, findings)


def server_text_findings(stored: dict[str, Any]) -> list[Finding]:
    """What the server tells a model (CONTRACT 14), as the stored report keeps it: its
    instructions, its tools' descriptions and those in their input schemas, its prompts'
    descriptions; each judged with what is known of its server."""
    server = stored.get("server")
    listing = {
        **stored,
        "instructions": server.get("instructions") if isinstance(server, dict) else None,
    }
    findings: list[Finding] = []
    for text, context in inspection_texts(listing):
        findings += model_text_findings([text], context)
    return findings


async def _record(session: AsyncSession, version: PluginVersion, findings: list[Finding]) -> None:
    """Keep the findings with the version; an error moves it (module doc)."""
    kept = [
        Finding(Code(f["code"]), cast(Severity, f["severity"]), f["path"], f["message"])
        for f in version.findings
        if not is_inspection_finding(f)
    ]
    # Within the caps every version's findings keep (count, message and path lengths).
    version.findings = as_stored(finalize([*kept, *findings]))
    await session.flush()
    errors = [note_line(finding) for finding in findings if finding.severity == "error"]
    if not errors:
        return
    plugin = await lock_item(session, PLUGINS, version.plugin_id)
    if version.review_status == ReviewStatus.PENDING:
        await review.auto_reject(session, PLUGINS, plugin, version, errors)
    elif version.review_status == ReviewStatus.APPROVED:
        note = review.auto_rejection_note(errors).replace(
            "Automatic validation failed:", "Inspection found undeclared capabilities:", 1
        )
        # The revocation list's reason has CONTRACT 11's bound.
        reason = note if len(note) <= REASON_MAX_CHARS else note[: REASON_MAX_CHARS - 1] + "…"
        await take_down_version(
            session,
            PLUGINS,
            plugin,
            version,
            actor_id=None,
            reason=reason,
            trigger=Trigger.AUTO_VALIDATION,
        )


async def finish(
    sessions: async_sessionmaker[AsyncSession], version_id: str, token: str, report: RunReport
) -> bool:
    """Keep the attempt's report if its claim still holds; False if it was lost."""
    async with sessions.begin() as session:
        version = await _locked_version(session, version_id)
        if version is None:
            return False  # deleted meanwhile (the row went with it)
        row = await ledger.holds(session, version_id, token)
        if row is None:
            return False
        await _apply(session, version, row, report)
        return True


async def _locked_version(session: AsyncSession, version_id: str) -> PluginVersion | None:
    """The version, read again after its plugin's lock (item first: the one lock order), so
    a review that committed meanwhile is what the verdict sees (PostgreSQL; SQLite's write
    transactions are serial anyway)."""
    try:
        return (await locked_version_with_item(session, PLUGINS, version_id))[1]
    except VersionNotFound:
        return None


async def give_up(sessions: async_sessionmaker[AsyncSession], version_id: str) -> None:
    """Attempts ran out (every worker was killed): the inspection failed."""
    async with sessions.begin() as session:
        version = await _locked_version(session, version_id)
        if version is None:
            return
        row = await ledger.expired(session, version_id)
        if row is None:
            return  # finished, or a live attempt after all
        report = RunReport(
            status="failed",
            error=f"the inspection was interrupted {row.attempts} times and was given up",
        )
        await _apply(session, version, row, report)
