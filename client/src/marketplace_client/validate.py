"""`marketplace validate DIR`: every finding the service would store on a version of this
plugin folder, at once, without sending anything.

The rules are the service's (`marketplace_rules`): what publishing needs and automatic
validation rejects (errors), and what a reviewer is shown (warnings and infos: the files,
and with `--base` the changes against another folder, the last approved version's).
Exit status: 0 without errors, 1 with any, 2 when the folders cannot be checked at all.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer

from marketplace_client.errors import CliError
from marketplace_client.manifest_check import problem_line, read_manifest
from marketplace_client.options import JsonOption
from marketplace_client.output import Output
from marketplace_client.pack import PackError, listing
from marketplace_rules.changes import change_findings
from marketplace_rules.files import file_findings
from marketplace_rules.findings import SEVERITIES, Finding
from marketplace_rules.manifest import UnreadableManifest, load_manifest, plugin_manifest_findings
from marketplace_rules.review import ordered, package_secret_findings
from marketplace_rules.text import display
from marketplace_rules.vocabulary import MANIFEST_NAME

USAGE_EXIT = 2
_PLURAL = {"error": "errors", "warning": "warnings", "info": "infos"}


class UsageProblem(CliError):
    """The folders cannot be checked at all (exit status 2)."""

    def __init__(self, message: str) -> None:
        super().__init__("USAGE", message)


def folder_findings(plugin_dir: Path, base_dir: Path | None = None) -> list[Finding]:
    """Every finding for the plugin folder, errors first; with base_dir, the changes
    against that folder's manifest too. UsageProblem when a folder cannot be read."""
    base = _base_manifest(base_dir) if base_dir is not None else None
    raw = _manifest_bytes(plugin_dir)
    try:
        manifest = load_manifest(raw)
    except UnreadableManifest as exc:
        return [exc.finding]  # nothing else can be judged without the document
    try:
        package = listing(plugin_dir, with_traits=True)
    except PackError as exc:  # an unreadable .marketplaceignore
        raise UsageProblem(exc.message) from exc
    findings = [
        *plugin_manifest_findings(manifest, package),
        *package_secret_findings(manifest, package),
        *file_findings(package),
    ]
    if base is not None:
        findings += change_findings(manifest, base)
    return ordered(findings)


def _folder(path: Path, what: str) -> Path:
    if not path.is_dir():
        raise UsageProblem(f"{what} {path} is not a folder")
    if not (path / MANIFEST_NAME).is_file():
        raise UsageProblem(f"{what} {path} has no {MANIFEST_NAME}")
    return path


def _manifest_bytes(plugin_dir: Path) -> bytes:
    path = _folder(plugin_dir, "plugin folder") / MANIFEST_NAME
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageProblem(f"{path} is not readable ({exc})") from exc


def _base_manifest(base_dir: Path) -> dict[str, Any]:
    folder = _folder(base_dir, "--base folder")
    try:
        return read_manifest(folder)
    except CliError as exc:
        raise UsageProblem(f"--base: {exc.one_line()}") from exc


def summary(findings: list[Finding]) -> dict[str, Any]:
    """The --json document's data: every finding and the count per severity."""
    counts = Counter(finding.severity for finding in findings)
    return {
        "findings": [finding.to_json() for finding in findings],
        **{_PLURAL[severity]: counts[severity] for severity in SEVERITIES},
    }


def print_findings(out: Output, plugin_dir: Path, findings: list[Finding]) -> None:
    """Findings grouped by severity, one `path: message` line each, hidden characters
    escaped; then the counts."""
    for severity in SEVERITIES:
        group = [finding for finding in findings if finding.severity == severity]
        if group:
            out.out.print(f"{_PLURAL[severity]} ({len(group)}):", markup=False)
            for finding in group:
                line = problem_line(finding)
                out.out.print(f"  {display(line, len(line))}", markup=False)
    counts = Counter(finding.severity for finding in findings)
    totals = ", ".join(
        f"{counts[severity]} {severity if counts[severity] == 1 else _PLURAL[severity]}"
        for severity in SEVERITIES
    )
    verdict = "fails" if counts["error"] else "passes"
    out.out.print(f"{display(str(plugin_dir))} {verdict}: {totals}", markup=False)


def validate_command(
    plugin_dir: Annotated[
        Path, typer.Argument(help="Plugin folder containing manifest.json.", show_default=False)
    ],
    base: Annotated[
        Path | None,
        typer.Option(
            "--base",
            help="Folder of the last approved version: also report new permissions, a "
            "changed MCP launch and new secret or required settings.",
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Check a plugin folder with the service's rules and list every finding at once."""
    out = Output(json_mode=json_output)
    try:
        findings = folder_findings(plugin_dir, base)
    except UsageProblem as exc:
        out.error(exc)
        raise typer.Exit(USAGE_EXIT) from None
    out.result(summary(findings), lambda: print_findings(out, plugin_dir, findings))
    if any(finding.severity == "error" for finding in findings):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate_command)
