"""`marketplace audit [--dir D] [--fix] [--json]`: installed plugins against the signed
revocation list (CONTRACT 11).

Fetch `GET /api/v1/plugins/revocations`, verify its signature with a key of
`GET /api/v1/keys`, compare (kind, key, version) with `<dir>/registry.json`, print every
revoked install with its reason. With `--fix`, a revoked install is replaced by the plugin's
current approved version (through `marketplace install`'s own flow) or, when there is none
or that fails, removed (folder and registry entry).

Exit codes: 0 nothing revoked is installed (any more, after --fix); 1 a revoked version is
installed; 2 the list could not be fetched or read, or its signature was refused: then
nothing on disk is touched.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer

from marketplace_client.api import ApiClient, ApiError, expect_list, expect_object, expect_str
from marketplace_client.config import plugins_dir, resolve_credentials
from marketplace_client.context import Runtime, get_runtime
from marketplace_client.errors import CliError
from marketplace_client.install import InstallRequest, install
from marketplace_client.options import BackendOption, JsonOption, TokenOption
from marketplace_client.output import Output
from marketplace_client.registry import (
    installed_plugins,
    registry_locked,
    registry_path,
    unregister_plugin,
)
from marketplace_client.trust import TrustError, verify_signed_record

REVOCATIONS = "/api/v1/plugins/revocations"
EXIT_REVOKED = 1
EXIT_PROBLEM = 2
# The service reissues the list every hour: one much older may be a replayed old copy that
# hides newer revocations. A warning, not a refusal: the client's clock may be wrong.
STALE_AFTER = timedelta(days=1)


# --- the signed list ----------------------------------------------------------------------


def _signature_refused(message: str) -> CliError:
    return CliError("REVOCATIONS_SIGNATURE_INVALID", f"{message}; nothing was changed")


def verified_payload(api: ApiClient, signed: dict[str, Any]) -> bytes:
    """The payload bytes of the signed revocation list, verified as the install client
    verifies a release (`cli.trust`: a listed key, keys pinned on first use); a refusal is
    exit 2 with nothing changed."""
    try:
        return verify_signed_record(api, signed, what="the revocation list")
    except TrustError as exc:
        raise _signature_refused(exc.message) from None


@dataclass(frozen=True)
class Revoked:
    kind: str
    key: str
    version: str
    sha256: str | None
    reason: str
    revoked_at: str
    # Where the takedown is in the transparency log (CONTRACT 15); None from older services.
    log_index: int | None = None


def _log_index(item: dict[str, Any]) -> int | None:
    value = item.get("logIndex")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise CliError("BAD_RESPONSE", "revocation: `logIndex` is not an index")
    return value


def parse_revocations(payload: bytes) -> tuple[str, list[Revoked]]:
    """(issuedAt, items) of a verified payload."""
    try:
        document = json.loads(payload)
    except ValueError as exc:
        raise CliError("BAD_RESPONSE", "the revocation list's payload is not JSON") from exc
    document = expect_object(document, "revocation list payload")
    items: list[Revoked] = []
    for raw in expect_list(document.get("items"), "revocation list items"):
        item = expect_object(raw, "revocation")
        sha256 = item.get("sha256")
        items.append(
            Revoked(
                kind=expect_str(item, "kind", "revocation"),
                key=expect_str(item, "key", "revocation"),
                version=expect_str(item, "version", "revocation"),
                sha256=sha256 if isinstance(sha256, str) else None,
                reason=expect_str(item, "reason", "revocation"),
                revoked_at=expect_str(item, "revokedAt", "revocation"),
                log_index=_log_index(item),
            )
        )
    return expect_str(document, "issuedAt", "revocation list payload"), items


# --- what is installed --------------------------------------------------------------------


@dataclass
class Finding:
    """An installed version that is revoked, and what --fix did about it."""

    revoked: Revoked
    path: str | None
    action: str | None = None  # "updated" | "removed" | None (not fixed / not asked)
    to_version: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def fixed(self) -> bool:
        return self.action is not None

    def to_json(self) -> dict[str, Any]:
        r = self.revoked
        return {
            "kind": r.kind,
            "key": r.key,
            "version": r.version,
            "sha256": r.sha256,
            "reason": r.reason,
            "revokedAt": r.revoked_at,
            "logIndex": r.log_index,
            "path": self.path,
            "fix": None
            if self.action is None and not self.notes
            else {"action": self.action, "version": self.to_version, "notes": self.notes},
        }


def revoked_installs(
    installed: dict[str, dict[str, Any]], revocations: list[Revoked]
) -> list[Finding]:
    """Installs whose (plugin, key, version) the list names; the client installs plugins only."""
    by_version = {(r.key, r.version): r for r in revocations if r.kind == "plugin"}
    findings = []
    for key in sorted(installed):
        entry = installed[key]
        revoked = by_version.get((key, str(entry.get("version"))))
        if revoked is not None:
            path = entry.get("path")
            findings.append(Finding(revoked, path if isinstance(path, str) else None))
    return findings


# --- --fix --------------------------------------------------------------------------------


def _inside(root: Path, path: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve()) and path.resolve() != root.resolve()


def remove_install(root: Path, finding: Finding) -> None:
    """Delete the version's folder (only inside the install folder) and its registry entry."""
    key = finding.revoked.key
    if finding.path is not None:
        folder = Path(finding.path)
        if not _inside(root, folder):
            raise CliError("UNSAFE_PATH", f"{folder} is outside {root}; not deleted")
        shutil.rmtree(folder, ignore_errors=True)
        parent = folder.parent
        if (
            parent != root
            and _inside(root, parent)
            and parent.is_dir()
            and not any(parent.iterdir())
        ):
            parent.rmdir()
    with registry_locked(root):
        unregister_plugin(registry_path(root), key)


def current_version(api: ApiClient, key: str, revoked: set[tuple[str, str]]) -> str | None:
    """The plugin's current approved version when it is not revoked itself; None otherwise."""
    try:
        detail = expect_object(api.get(f"/api/v1/plugins/detail/{key}"), "plugin")
    except ApiError as exc:
        if exc.status == 404:
            return None  # no longer listed
        raise
    latest = detail.get("latestVersion")
    if not isinstance(latest, str) or (key, latest) in revoked:
        return None
    return latest


def fix_one(
    public: ApiClient,
    authorised: ApiClient,
    runtime: Runtime,
    out: Output,
    root: Path,
    finding: Finding,
    revoked: set[tuple[str, str]],
) -> None:
    r = finding.revoked
    try:
        target = current_version(public, r.key, revoked)
    except CliError as exc:
        finding.notes.append(f"could not read the current version: {exc.headline()}")
        target = None
    if target is not None:
        # The install keeps the saved configuration (secrets included) and removes the
        # revoked version's folder once the new one is in place.
        try:
            install(authorised, runtime, out, InstallRequest(r.key, target, root, {}))
        except CliError as exc:
            finding.notes.append(f"could not install {target}: {exc.headline()}")
        else:
            finding.action, finding.to_version = "updated", target
            return
    try:
        remove_install(root, finding)
    except (CliError, OSError) as exc:
        text = exc.headline() if isinstance(exc, CliError) else str(exc)
        finding.notes.append(f"could not remove it: {text}")
        return
    finding.action = "removed"


# --- the command --------------------------------------------------------------------------


@dataclass
class AuditReport:
    root: Path
    issued_at: str
    checked: int
    revocations: int
    findings: list[Finding]
    fix: bool

    @property
    def remaining(self) -> list[Finding]:
        return [f for f in self.findings if not f.fixed]

    def to_json(self) -> dict[str, Any]:
        return {
            "dir": str(self.root),
            "issuedAt": self.issued_at,
            "checked": self.checked,
            "revocations": self.revocations,
            "revoked": [f.to_json() for f in self.findings],
            "remaining": len(self.remaining),
        }


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def print_report(out: Output, report: AuditReport) -> None:
    def say(text: str) -> None:
        out.out.print(text, markup=False)

    if not report.findings:
        say(
            f"No revoked versions installed ({_plural(report.checked, 'plugin')} in "
            f"{report.root} checked against {_plural(report.revocations, 'revocation')}, "
            f"list issued {report.issued_at})."
        )
        return
    for finding in report.findings:
        r = finding.revoked
        say(f"REVOKED {r.key} {r.version}: {r.reason} (revoked {r.revoked_at})")
        if finding.action == "updated":
            say(f"  fixed: updated to {finding.to_version}")
        elif finding.action == "removed":
            say("  fixed: removed")
        for note in finding.notes:
            say(f"  note: {note}")
    count = len(report.findings)
    if report.fix:
        fixed = count - len(report.remaining)
        say(f"Fixed {fixed} of {_plural(count, 'revoked install')}.")
    else:
        noun = "installed version is" if count == 1 else "installed versions are"
        say(f"{count} {noun} revoked; run `marketplace audit --fix` to update or remove them.")


def warn_if_stale(out: Output, issued_at: str, now: datetime | None = None) -> None:
    try:
        issued = datetime.fromisoformat(issued_at)
    except ValueError:
        out.warn(f"the revocation list's issuedAt {issued_at!r} is not a time")
        return
    if issued.tzinfo is None:
        issued = issued.replace(tzinfo=UTC)
    if (now or datetime.now(UTC)) - issued > STALE_AFTER:
        out.warn(
            f"the revocation list was issued at {issued_at}, more than a day ago: "
            "it may be an old copy (check the service and your clock)"
        )


def run_audit(
    runtime: Runtime, out: Output, root: Path, backend: str, token: str | None, fix: bool
) -> AuditReport:
    # The list and the keys are public: read anonymously, so a stale stored token cannot
    # turn them into a 401. Only --fix's reinstall needs the token.
    with runtime.client(backend, None) as public:
        signed = expect_object(public.get(REVOCATIONS), "revocation list")
        issued_at, revocations = parse_revocations(verified_payload(public, signed))
        warn_if_stale(out, issued_at)
        installed = installed_plugins(root)
        findings = revoked_installs(installed, revocations)
        if fix and findings:
            revoked = {(r.key, r.version) for r in revocations if r.kind == "plugin"}
            with runtime.client(backend, token) as authorised:
                for finding in findings:
                    fix_one(public, authorised, runtime, out, root, finding, revoked)
    return AuditReport(root, issued_at, len(installed), len(revocations), findings, fix)


def audit_command(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Install folder holding registry.json (default: $MARKETPLACE_PLUGINS_DIR, "
            "else $XDG_DATA_HOME/marketplace/plugins).",
        ),
    ] = None,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Update each revoked install to the plugin's current version, or remove it "
            "when there is none.",
        ),
    ] = False,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Check installed plugins against the signed revocation list (exit 1: a revoked version
    is installed; 2: the list could not be fetched or verified)."""
    out = Output(json_mode=json_output)
    runtime = get_runtime(ctx)
    root = (directory or plugins_dir()).resolve()
    try:
        credentials = resolve_credentials(backend, token)
        report = run_audit(runtime, out, root, credentials.backend, credentials.token, fix)
    except CliError as exc:
        out.error(exc)
        raise typer.Exit(EXIT_PROBLEM) from None
    out.result(report.to_json(), lambda: print_report(out, report))
    if report.remaining:
        raise typer.Exit(EXIT_REVOKED)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_command)
