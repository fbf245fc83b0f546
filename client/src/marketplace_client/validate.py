"""`marketplace validate DIR`: every finding the service would store on a version of this
plugin folder, at once, without sending anything.

The rules are the service's (`marketplace_rules`): what publishing needs and automatic
validation rejects (errors), and what a reviewer is shown (warnings and infos: the files,
the text a model reads in the manifest and the Markdown and text files, and with `--base`
the changes against another folder, the last approved version's). The findings a version
keeps are the service's function's (`rules.review.plugin_version_findings`), so they are
the ones the service stores, in its order.
The package is the one `publish` would send (`pack.select`: the same files left out, the
secrets among them named) and its size is judged against the same limit: the service's
(`GET /api/v1/limits`) when `--backend` names one or a login is stored, else the
contract's default; a service that cannot be reached leaves the default, with a warning.
Exit status: 0 without errors, 1 with any, 2 when the folders cannot be checked at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from marketplace_client.config import CredentialStore, normalize_backend
from marketplace_client.context import Runtime, get_runtime
from marketplace_client.errors import CliError
from marketplace_client.limits import fetch_limits, format_size
from marketplace_client.manifest_check import problem_line, read_manifest
from marketplace_client.options import JsonOption
from marketplace_client.output import Output
from marketplace_client.pack import IGNORE_FILE, PackError, listing, packed_size, select
from marketplace_rules.findings import FILE_PATH_PREFIX, SEVERITIES, Code, Finding
from marketplace_rules.limits import MIB, PLUGIN_PACKAGE_MAX_MIB
from marketplace_rules.manifest import (
    UnreadableManifest,
    load_manifest,
    record_findings,
    refusal_findings,
)
from marketplace_rules.review import ordered, plugin_version_findings
from marketplace_rules.text import display
from marketplace_rules.vocabulary import MANIFEST_NAME

USAGE_EXIT = 2
_PLURAL = {"error": "errors", "warning": "warnings", "info": "infos"}


class UsageProblem(CliError):
    """The folders cannot be checked at all (exit status 2)."""

    def __init__(self, message: str) -> None:
        super().__init__("USAGE", message)


@dataclass(frozen=True)
class PackageLimit:
    """The size a package may have, and whose limit it is (said in the finding)."""

    max_bytes: int
    whose: str


DEFAULT_LIMIT = PackageLimit(PLUGIN_PACKAGE_MAX_MIB * MIB, "the default limit")


def folder_findings(
    plugin_dir: Path, base_dir: Path | None = None, limit: PackageLimit = DEFAULT_LIMIT
) -> list[Finding]:
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
    if manifest.get("main") == "":
        # A configuration-only manifest goes up without a package: no file of the folder
        # is read by a model. (Its files are still looked at for what the tool uploads
        # itself, such as a local icon.)
        package = replace(package, model_texts=())
    return ordered(
        [
            *refusal_findings(manifest),
            # What the service stores on the version, by the service's own function.
            *plugin_version_findings(manifest, package, base=base, compared=base is not None),
            *record_findings(manifest),
            *package_findings(plugin_dir, manifest, limit),
        ]
    )


def package_findings(
    plugin_dir: Path, manifest: Mapping[str, Any], limit: PackageLimit
) -> list[Finding]:
    """The package `publish` would send: the secrets it leaves out, what stops it from
    packing the folder, a size over the limit. None for a configuration-only manifest
    (`main` is ""), which is sent without a package."""
    if manifest.get("main") == "":
        return []
    try:
        selection = select(plugin_dir)
    except PackError as exc:
        return [Finding.error(Code.PACKAGE_INVALID, "", f"publish cannot pack it: {exc.message}")]
    findings = [
        Finding.warning(
            Code.FILE_LEFT_OUT,
            FILE_PATH_PREFIX + name,
            "is not packed, as such files usually hold secrets (re-include it with a "
            f"`!name` line in {IGNORE_FILE})",
        )
        for name in selection.secrets_left_out
    ]
    size = packed_size(selection.entries)
    if size > limit.max_bytes:
        message = (
            f"the package publish would send is {_sized(size)}, over {limit.whose} of "
            f"{_sized(limit.max_bytes)}"
        )
        findings.append(Finding.error(Code.PACKAGE_TOO_LARGE, "", message))
    return findings


def _sized(size: int) -> str:
    return f"{format_size(size)} ({size} bytes)"


def package_limit(runtime: Runtime, backend: str | None, out: Output) -> PackageLimit:
    """The service's package limit when `--backend` names one or a login is stored (the
    limit publish checks against), else the contract's default. A service that cannot
    be reached, or does not say, leaves the default: validate works offline."""
    if backend is None:
        try:
            backend = CredentialStore().default_backend()
        except CliError:
            backend = None  # an unreadable credentials file: judged offline
    if backend is None:
        return DEFAULT_LIMIT
    try:
        url = normalize_backend(backend)
        with runtime.client(url, None) as api:
            limits = fetch_limits(api)
    except CliError as exc:
        out.warn(
            f"the package size is judged against the default limit: {backend} did not "
            f"say its own ({exc.one_line()})"
        )
        return DEFAULT_LIMIT
    if limits.package_max_bytes is None:
        return DEFAULT_LIMIT
    return PackageLimit(limits.package_max_bytes, f"the limit of {url}")


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
    ctx: typer.Context,
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
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            envvar="MARKETPLACE_BACKEND",
            show_envvar=True,
            help="Service whose package size limit applies (default: the last login's; "
            f"without one, the contract's {PLUGIN_PACKAGE_MAX_MIB} MiB).",
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Check a plugin folder with the service's rules and list every finding at once."""
    out = Output(json_mode=json_output)
    try:
        limit = package_limit(get_runtime(ctx), backend, out)
        findings = folder_findings(plugin_dir, base, limit)
    except UsageProblem as exc:
        out.error(exc)
        raise typer.Exit(USAGE_EXIT) from None
    out.result(summary(findings), lambda: print_findings(out, plugin_dir, findings))
    if any(finding.severity == "error" for finding in findings):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate_command)
