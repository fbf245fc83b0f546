"""`marketplace list`, `update [KEY|--all]` and `uninstall KEY`: the installs of one install
folder (`--dir`) after `marketplace install`.

`list` shows what the update check offers each install (`offers.py`, one request for all of
them), checks each installed version against the signed revocation list (verified as
`audit` does), and marks an install whose version now shows more than the user accepted
(`capabilities.py`); `update` follows the update check's offers (CONTRACT 16): it is
`install` of the offered version, keeping the saved configuration, after the user's consent
when that version has more than they accepted (CONTRACT 13), and the offered version may be
older than the installed one (a halted rollout, a version taken down). Nothing is offered
for a plugin no longer listed: it is left as it is. `--channel prerelease` asks for
prereleases too. `uninstall` removes the plugin's folder, its registry entry and its saved
secrets, then, with a login, reports the uninstall (`POST /api/v1/plugins/uninstall/KEY
{version}`: the service counts uninstalls, and enough of them halt a rolling version). The
report is best effort: the files are gone whatever the service answers, so a failure is a
warning, and without a login nothing is sent.

When `list` cannot reach the service (or the service cannot answer: 5xx), it still lists the
installs, with their offers and revocations unknown; an update check that fails on its own
(an older service without it, say) leaves only the offers unknown.

How `list` learns the installed versions' capabilities: one public read per installed
plugin (`GET /api/v1/plugins/capabilities/KEY/VERSION`), one after another on one
connection, each bounded (`capabilities.TIMEOUT`, no waiting out a rate limit) and all of
them within `LIST_CAPABILITIES_BUDGET`: a plugin not reached in time is listed without a
mark, and a warning says how many were not checked. A read that fails (unreachable, the
version taken down, a service without inspection) gives no mark and no error. `--offline`
reads nothing. `list` reads the registry once and writes no `accepted` record (installs
replace the file atomically, so one running beside it is seen whole, before or after); the
reads are sequential, one client, nothing shared between threads.

Exit status 4 (`CONSENT_EXIT`) is an update left undone for want of consent: refused
without a terminal (`CONSENT_REQUIRED`, unless `--yes`) or declined at the prompt
(`UPDATE_DECLINED`). Exit status 3 (`TRUST_EXIT`) is an update refused because what the
service sent could not be proven (a signature, the transparency log; CONTRACT 11 and 15), as
for `install`. Any other failure of an update is 1 and wins over 3 and 4.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from marketplace_client.api import ApiClient, ApiError, expect_object
from marketplace_client.audit import REVOCATIONS, parse_revocations, verified_payload
from marketplace_client.capabilities import (
    Accepted,
    Beyond,
    Capabilities,
    beyond,
    capabilities_client,
    fetch_capabilities,
    read_capabilities,
    unknown_reason,
    warning_lines,
)
from marketplace_client.config import plugins_dir, resolve_backend, resolve_credentials
from marketplace_client.context import Runtime, get_runtime
from marketplace_client.errors import CliError
from marketplace_client.install import (
    InstallRequest,
    InstallResult,
    install,
    is_install_of,
    print_install,
    redact,
)
from marketplace_client.install_id import install_id
from marketplace_client.manifest_check import check_plugin_key, problem_line
from marketplace_client.next_steps import Subject, explain
from marketplace_client.offers import (
    NOT_LISTED,
    REVOKED,
    ROLLING_NOT_SELECTED,
    Channel,
    ChannelOption,
    Offer,
    check_updates,
    checkable,
)
from marketplace_client.options import BackendOption, JsonOption, TokenOption
from marketplace_client.output import Output, reporting_errors
from marketplace_client.registry import (
    installed_plugins,
    registry_locked,
    registry_path,
    unregister_plugin,
)
from marketplace_client.trust import TRUST_EXIT, TrustError

CONSENT_EXIT = 4  # CONTRACT 13: an update needing consent it did not get
UNINSTALL_REPORT = "/api/v1/plugins/uninstall/{key}"
# `list`: the time all capability reads together may take (each is bounded by its timeout).
LIST_CAPABILITIES_BUDGET = 30.0

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        help="Install folder holding registry.json (default: $MARKETPLACE_PLUGINS_DIR, "
        "else $XDG_DATA_HOME/marketplace/plugins).",
    ),
]


def install_root(directory: Path | None) -> Path:
    return (directory or plugins_dir()).resolve()


def not_installed(key: str, root: Path) -> CliError:
    """Printed with the folder looked in and how to point elsewhere (`next_steps`)."""
    details = {"pluginKey": key, "dir": str(root)}
    return CliError("NOT_INSTALLED", f"{key} is not installed in {root}", details=details)


def checked_key(key: str) -> str:
    problems = check_plugin_key(key, "PLUGIN_KEY")
    if problems:
        raise CliError("BAD_OPTION", "; ".join(problem_line(p) for p in problems))
    return key


def installed_versions(installed: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {key: str(entry.get("version")) for key, entry in installed.items()}


# --- list ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Listed:
    key: str
    version: str
    path: str
    offer: Offer | None  # None: unknown (offline, not reached, not answered)
    revoked: str | None  # the revocation's reason
    checked: bool  # False with --offline
    # The installed version's capabilities (None: not read) and what they have beyond
    # what was accepted (None: not read or unknown).
    capabilities: Capabilities | None = None
    beyond: Beyond | None = None

    @property
    def marked(self) -> bool:
        return bool(self.beyond)

    @property
    def status(self) -> str:
        return self._state() + (f"; {_mark(self.beyond)}" if self.beyond else "")

    def _state(self) -> str:
        if not self.checked:
            return "not checked (--offline)"
        if self.revoked is not None:
            move = self.offer.move() if self.offer is not None else ""
            return f"REVOKED: {self.revoked}" + (f"; {move}" if move else "")
        return self.offer.status() if self.offer is not None else "offers unknown"

    def to_json(self) -> dict[str, Any]:
        offered = self.offer.offered if self.offer is not None and self.offer.moves else None
        return {
            "pluginKey": self.key,
            "version": self.version,
            "path": self.path,
            "offered": offered,
            "offerReason": self.offer.reason if self.offer is not None else None,
            # The version `update` would install, under the name scripts read before the
            # update check (it was the current version then).
            "latestVersion": offered,
            "updateAvailable": offered is not None,
            "rollback": self.offer is not None and self.offer.rollback,
            "revoked": self.revoked is not None,
            "revokedReason": self.revoked,
            "status": self.status,
            "inspection": self.capabilities.status if self.capabilities else None,
            "beyondAccepted": self.beyond.to_json() if self.beyond else None,
        }


def _mark(extra: Beyond) -> str:
    recorded = "nothing recorded as accepted; " if extra.nothing_recorded else ""
    return f"has more than you accepted ({recorded}{extra.summary()})"


def with_capabilities(
    runtime: Runtime,
    backend: str,
    items: list[Listed],
    installed: dict[str, dict[str, Any]],
    out: Output,
) -> list[Listed]:
    """`items` with their installed version's capabilities compared with what was accepted
    (module doc: one bounded read each, all within LIST_CAPABILITIES_BUDGET)."""
    deadline = time.monotonic() + LIST_CAPABILITIES_BUDGET
    marked: list[Listed] = []
    skipped = 0
    with capabilities_client(runtime, backend) as public:
        for item in items:
            if time.monotonic() >= deadline:
                skipped += 1
                marked.append(item)
                continue
            shown = read_capabilities(public, item.key, item.version)
            extra = beyond(Accepted.from_entry(installed.get(item.key)), shown)
            marked.append(replace(item, capabilities=shown, beyond=extra if extra else None))
    if skipped:
        out.warn(
            f"what {skipped} plugin(s) do now was not compared with what you accepted: "
            f"the service took longer than {LIST_CAPABILITIES_BUDGET:.0f} s"
        )
    return marked


def revoked_versions(public: ApiClient) -> dict[tuple[str, str], str]:
    """(pluginKey, version) -> reason, from the signed revocation list."""
    signed = expect_object(public.get(REVOCATIONS), "revocation list")
    _, revocations = parse_revocations(verified_payload(public, signed))
    return {(r.key, r.version): r.reason for r in revocations if r.kind == "plugin"}


def listed_offers(
    public: ApiClient, versions: dict[str, str], channel: Channel, out: Output
) -> dict[str, Offer]:
    """The update check's offers; none (and a warning) when it fails: the list is of what
    is installed, and stands without them."""
    try:
        return check_updates(public, versions, channel, install_id())
    except CliError as exc:
        headline = exc.headline()
    out.warn(f"the update check failed, so what is offered is unknown: {headline}")
    return {}


def list_installs(
    runtime: Runtime,
    root: Path,
    backend: str | None,
    out: Output,
    channel: Channel = Channel.stable,
) -> list[Listed]:
    installed = installed_plugins(root)
    entries = sorted(installed.items())
    if backend is None or not installed:
        return [
            Listed(k, str(v.get("version")), str(v.get("path")), None, None, False)
            for k, v in entries
        ]
    versions = installed_versions(installed)
    # Public reads only: a stale stored token cannot turn them into a 401.
    with runtime.client(backend, None) as public:
        try:
            reasons = revoked_versions(public)
        except ApiError as exc:
            if not exc.server_side:
                raise
            out.warn(
                "the service could not be reached, so what is offered and what is revoked "
                f"are unknown: {exc.headline()}"
            )
            unknown = (None, None, True)
            return [Listed(k, versions[k], str(v.get("path")), *unknown) for k, v in entries]
        offers = listed_offers(public, versions, channel, out)
    items = [
        Listed(
            key,
            versions[key],
            str(entry.get("path")),
            offers.get(key),
            reasons.get((key, versions[key])),
            True,
        )
        for key, entry in entries
    ]
    return with_capabilities(runtime, backend, items, installed, out)


def print_list(out: Output, root: Path, items: list[Listed]) -> None:
    if not items:
        out.out.print(f"No plugins installed in {root}.", markup=False)
        return
    rows = [("PLUGIN", "VERSION", "STATUS")] + [(i.key, i.version, i.status) for i in items]
    widths = [max(len(row[col]) for row in rows) for col in range(2)]
    for key, version, status in rows:
        out.out.print(f"{key:<{widths[0]}}  {version:<{widths[1]}}  {status}", markup=False)
    for item in items:
        if item.marked:
            out.err.print(
                f"{item.key} {item.version} has tools or permissions you did not accept (its "
                "inspection ended after you installed it, or an older client installed it): "
                f"`marketplace install {item.key} --version {item.version}` shows them and "
                f"records them as accepted; `marketplace uninstall {item.key}` removes it",
                markup=False,
            )


def list_command(
    ctx: typer.Context,
    directory: DirOption = None,
    offline: Annotated[
        bool,
        typer.Option("--offline", help="Only read the registry: no update or revocation check."),
    ] = False,
    channel: ChannelOption = Channel.stable,
    backend: BackendOption = None,
    json_output: JsonOption = False,
) -> None:
    """List installed plugins: version, the update or rollback offered, revoked (signed
    list)."""
    out = Output(json_mode=json_output)
    root = install_root(directory)
    runtime = get_runtime(ctx)
    with reporting_errors(out):
        server = None if offline else resolve_backend(backend)
        items = list_installs(runtime, root, server, out, channel)
    data = {"root": str(root), "channel": channel.value, "items": [i.to_json() for i in items]}
    out.result(data, lambda: print_list(out, root, items))


# --- update -------------------------------------------------------------------------------


class ConsentMissing(CliError):
    """An update whose new version has more than was accepted, and no consent to it."""

    exit_code = CONSENT_EXIT


@dataclass
class Updated:
    key: str
    before: str
    after: str | None = None  # the version offered (None: none)
    offer: Offer | None = None
    result: InstallResult | None = None
    error: CliError | None = None
    capabilities: Capabilities | None = None  # the new version's, read before installing
    changes: Beyond | None = None  # what it has beyond what was accepted (None: nothing)

    def to_json(self) -> dict[str, Any]:
        return {
            "pluginKey": self.key,
            "from": self.before,
            "to": self.after,
            "reason": self.offer.reason if self.offer is not None else None,
            "rollback": self.offer is not None and self.offer.rollback,
            "updated": self.result is not None,
            "install": self.result.to_json() if self.result is not None else None,
            "error": self.error.to_json() if self.error is not None else None,
            "connectError": self.result.connect_error.to_json()
            if self.result is not None and self.result.connect_error is not None
            else None,
            "capabilities": self.capabilities.to_json() if self.capabilities else None,
            "changes": self.changes.to_json() if self.changes else None,
        }


def consent(
    out: Output, runtime: Runtime, entry: Updated, changes: Beyond, *, assume_yes: bool
) -> None:
    """Show what the new version has beyond what was accepted and get the user's consent
    (y/N); --yes gives it. Without a terminal (and without --yes) or when declined, raise
    ConsentMissing: nothing is installed and the registry is left as it is."""
    key, before, after = entry.key, entry.before, entry.after
    details = {"pluginKey": key, "from": before, "to": after, "changes": changes.to_json()}
    if not assume_yes and not runtime.is_interactive():
        raise ConsentMissing(
            "CONSENT_REQUIRED",
            f"{key} {after} {changes.summary()}, beyond what you accepted, and there is no "
            f"terminal to ask on; run `marketplace update {key}` on a terminal to review it, "
            "or pass --yes to accept it",
            details=details,
        )
    out.step(f"{key} {after} has more than you accepted with {key} {before}:")
    for line in changes.lines():
        out.step(line)
    # Warnings never ask for consent themselves, but whoever is asked should see them.
    for line in warning_lines(entry.capabilities) if entry.capabilities else []:
        out.step(line)
    if assume_yes:
        out.step("Accepted with --yes.")
        return
    if not typer.confirm(f"Update {key} to {after} and accept this?", default=False, err=True):
        raise ConsentMissing(
            "UPDATE_DECLINED", f"the update to {after} was declined", details=details
        )


def no_offer(key: str, version: str) -> CliError:
    """No answer about an install: its registry entry could not be asked about, or the
    service left it out."""
    if not checkable(key, version):
        return CliError(
            "REGISTRY_UNREADABLE",
            f"the registry records no valid version of {key} ({version!r}): "
            f"`marketplace install {key}` installs it again",
        )
    return CliError("BAD_RESPONSE", f"the update check did not answer about {key} {version}")


def update_one(
    api: ApiClient,
    runtime: Runtime,
    out: Output,
    root: Path,
    key: str,
    installed: dict[str, Any],
    offer: Offer | None,
    *,
    assume_yes: bool = False,
) -> Updated:
    """Follow the update check's `offer`: install the version offered, higher or lower
    than the installed one; nothing when none is offered."""
    entry = Updated(key, str(installed.get("version")))
    try:
        if offer is None:
            raise no_offer(key, entry.before)
        entry.offer, entry.after = offer, offer.offered
        offered = offer.offered
        if offered is None or not offer.moves:
            return entry
        # An inspection not done shows only permissions: the update compares those and
        # says so; `list` marks the install once the service shows more. Capabilities that
        # cannot be read at all compare nothing: the update asks (or needs --yes), as the
        # new version may ask for anything.
        shown = fetch_capabilities(runtime, api.backend, key, offered)
        entry.capabilities = shown
        if shown.known:
            changes = beyond(Accepted.from_entry(installed), shown)
        else:
            changes = Beyond(nothing_recorded=False, unknown=unknown_reason(shown))
        if changes:
            entry.changes = changes
            consent(out, runtime, entry, changes, assume_yes=assume_yes)
        request = InstallRequest(key, offered, root, {}, capabilities=shown)
        entry.result = install(api, runtime, out, request)
    except CliError as exc:
        entry.error = exc
    return entry


def _compared(shown: Capabilities | None) -> str:
    """What the update could compare with what was accepted, when not everything."""
    if shown is None or shown.complete:
        return ""
    if not shown.known:
        return " Its capabilities are unknown: nothing was compared with what you accepted."
    return (
        f" Its inspection is {shown.status}: only its permissions were compared with what "
        "you accepted (`marketplace list` marks it if its tools turn out to be more)."
    )


def _done(entry: Updated) -> str:
    """The line of an update that went through."""
    offer = entry.offer
    why = offer.why() if offer is not None else ""
    verb = "Rolled back" if offer is not None and offer.rollback else "Updated"
    line = f"{verb} {entry.key} {entry.before} -> {entry.after}"
    return line + (f" ({why})." if why else ".") + _compared(entry.capabilities)


def _stayed(entry: Updated, offer: Offer) -> str:
    """The line of a plugin the offer leaves as it is."""
    key, before = entry.key, entry.before
    if offer.reason == NOT_LISTED:
        return f"{key} {before} is no longer listed on the service: it is left as it is."
    why = offer.why()
    if not why:
        return f"{key} is up to date ({before})."
    if offer.offered is None and offer.reason != ROLLING_NOT_SELECTED:
        # Halted or taken down with nothing older to go back to.
        line = f"{key} {before} stays installed: {why} and no other version is offered."
        if offer.reason == REVOKED:
            line += f" `marketplace uninstall {key}` removes it."
        return line
    return f"{key} is up to date ({before}): {why}."


def print_updates(out: Output, updates: list[Updated]) -> None:
    for entry in updates:
        if entry.result is not None:
            print_install(out, entry.result)
            out.out.print(_done(entry), markup=False)
        elif entry.error is None and entry.offer is not None:
            out.out.print(_stayed(entry, entry.offer), markup=False)
        elif entry.error is not None and entry.error.code == "UPDATE_DECLINED":
            out.out.print(
                f"{entry.key} {entry.before} stays installed: the update to {entry.after} was "
                "declined.",
                markup=False,
            )
    for entry in updates:
        if entry.error is not None and entry.error.code == "UPDATE_DECLINED":
            continue
        if entry.error is not None:
            error = explain(entry.error, Subject(plugin_key=entry.key))
            message = f"error: {entry.key}: {error.headline()} ({entry.key} {entry.before} "
            out.err.print(message + "stays installed)", style="red", markup=False)
        elif entry.result is not None and entry.result.connect_error is not None:
            headline = redact(entry.result.connect_error.headline(), entry.result.secrets)
            message = f"error: {entry.key}: {headline} ({entry.key} {entry.after} is installed)"
            out.err.print(message, style="red", markup=False)


def failed(entry: Updated) -> bool:
    """The update failed, or the updated plugin's autoConnect check did."""
    return entry.error is not None or (
        entry.result is not None and entry.result.connect_error is not None
    )


def update_exit(updates: list[Updated]) -> int:
    """0 when all went well; 4 when only consent was missing; 3 when only trust refused
    (and, with --all, consent was missing for others); 1 for any other failure."""
    failures = [entry for entry in updates if failed(entry)]
    if not failures:
        return 0
    if all(isinstance(entry.error, ConsentMissing) for entry in failures):
        return CONSENT_EXIT
    if all(isinstance(entry.error, ConsentMissing | TrustError) for entry in failures):
        return TRUST_EXIT
    return 1


def update_command(
    ctx: typer.Context,
    plugin_key: Annotated[
        str | None,
        typer.Argument(
            help="The installed plugin to update.", metavar="PLUGIN_KEY", show_default=False
        ),
    ] = None,
    all_plugins: Annotated[
        bool, typer.Option("--all", help="Update every installed plugin.")
    ] = False,
    assume_yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            "-y",
            help="Accept new tools, changed tools or prompts and new permissions without "
            "asking (without a terminal such an update is refused otherwise, exit 4).",
        ),
    ] = False,
    channel: ChannelOption = Channel.stable,
    directory: DirOption = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Install the version the service offers each installed plugin (a newer one, or an
    older one when its version was halted or taken down), keeping their configuration; ask
    first when that version has more than you accepted."""
    out = Output(json_mode=json_output, subject=Subject(plugin_key=plugin_key))
    runtime = get_runtime(ctx)
    root = install_root(directory)
    with reporting_errors(out):
        if (plugin_key is None) == (not all_plugins):
            raise CliError("BAD_OPTION", "name one installed plugin or pass --all (not both)")
        installed = installed_plugins(root)
        if plugin_key is not None:
            if checked_key(plugin_key) not in installed:
                raise not_installed(plugin_key, root)
            keys = [plugin_key]
        else:
            keys = sorted(installed)
        credentials = resolve_credentials(backend, token)
        credentials.require_token()
        versions = installed_versions(installed)
        with runtime.client(credentials.backend, credentials.token) as api:
            # One check for all of them: the service's answer is the plan.
            asked = {key: versions[key] for key in keys}
            offers = check_updates(api, asked, channel, install_id()) if keys else {}
            updates = [
                update_one(
                    api,
                    runtime,
                    out,
                    root,
                    key,
                    installed[key],
                    offers.get(key),
                    assume_yes=assume_yes,
                )
                for key in keys
            ]
    data = {
        "root": str(root),
        "channel": channel.value,
        "items": [entry.to_json() for entry in updates],
    }
    if not keys and not json_output:
        out.out.print(f"No plugins installed in {root}.", markup=False)
    out.result(data, lambda: print_updates(out, updates))
    code = update_exit(updates)
    if code:
        raise typer.Exit(code)


# --- uninstall ----------------------------------------------------------------------------


def uninstall(root: Path, key: str) -> dict[str, Any]:
    """Remove what `install` made for `key`: its version folders (only folders that are
    installs of it), the plugin folder once empty, the registry entry and the secrets."""
    if not registry_path(root).exists():
        raise not_installed(key, root)
    folder = root / key
    with registry_locked(root):
        entry = installed_plugins(root).get(key)
        if entry is None:
            # Without a registry entry nothing says the folder is ours: never deleted.
            raise not_installed(key, root)
        try:
            if folder.is_dir() and not folder.is_symlink():
                for child in sorted(folder.iterdir()):
                    if is_install_of(child, key):
                        shutil.rmtree(child)
                if not any(folder.iterdir()):
                    folder.rmdir()
        except OSError as exc:
            raise CliError("UNINSTALL_FAILED", f"cannot remove {folder}: {exc}") from exc
        unregister_plugin(registry_path(root), key)
    return {
        "pluginKey": key,
        "version": entry.get("version"),
        "removed": str(folder),
        "kept": folder.exists(),  # it holds files that are no install of the plugin
    }


def report_uninstall(
    runtime: Runtime,
    out: Output,
    key: str,
    version: object,
    backend: str | None,
    token: str | None,
) -> tuple[bool, dict[str, Any] | None]:
    """Tell the service that `version` of `key` was uninstalled, when there is a login;
    (reported, the error when it failed). Never raises: the files are gone already, so a
    failure is a warning; no login means nothing to send, silently."""
    try:
        credentials = resolve_credentials(backend, token)
        if not credentials.token:
            return False, None
        if not checkable(key, version):
            recorded = f"the registry recorded no valid version of {key}"
            raise CliError("REGISTRY_UNREADABLE", recorded)
        with runtime.client(credentials.backend, credentials.token) as api:
            api.post(UNINSTALL_REPORT.format(key=key), json={"version": version})
    except (CliError, OSError) as exc:
        error = exc if isinstance(exc, CliError) else CliError("IO_ERROR", str(exc))
        out.warn(f"the uninstall could not be reported: {error.headline()}")
        return False, error.to_json()
    return True, None


def uninstall_command(
    ctx: typer.Context,
    plugin_key: Annotated[str, typer.Argument(help="The installed plugin to remove.")],
    directory: DirOption = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Remove an installed plugin: its files, its registry entry and its saved secrets;
    with a login, report the uninstall to the service."""
    out = Output(json_mode=json_output, subject=Subject(plugin_key=plugin_key))
    root = install_root(directory)
    with reporting_errors(out):
        data = uninstall(root, checked_key(plugin_key))
    reported, report_error = report_uninstall(
        get_runtime(ctx), out, plugin_key, data["version"], backend, token
    )
    data |= {"reported": reported, "reportError": report_error}

    def human() -> None:
        version = f" {data['version']}" if data["version"] else ""
        out.out.print(
            f"Uninstalled {plugin_key}{version}: removed {data['removed']}, its registry entry "
            "and its saved configuration.",
            markup=False,
        )
        if reported:
            out.out.print("Reported the uninstall.", markup=False)
        if data["kept"]:
            out.warn(
                f"{data['removed']} still holds files that are not an install of "
                f"{plugin_key}; they were left as they are"
            )

    out.result(data, human)


def register(app: typer.Typer) -> None:
    app.command("list")(list_command)
    app.command("update")(update_command)
    app.command("uninstall")(uninstall_command)
