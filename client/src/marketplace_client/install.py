"""`marketplace install PLUGIN_KEY`: the seed's client install flow (4.4) as a reference client.

The version: `--version`'s, else the one the update check offers a new install (CONTRACT 16,
so a staged rollout reaches new installs as it reaches updates), else `latest` → download
information → verify its signed release record (signature by a key the service
lists, fields equal to the download info; `trust.py`) and its approval in the service's
transparency log (`transparency.py`) → (tarball: download outside the
install folder, check size and SHA256 against the signed record, unpack safely | config only:
write the manifest | inline: restore the code files; both after checking the manifest's
canonical JSON against the record) → read manifest.json → ask for
required configuration (the values an earlier install saved are kept) → move into
`<dir>/<pluginKey>/<version>` → read the version's capabilities (CONTRACT 13; unknown when
the service cannot say, which never stops the install) → save the secrets (`secrets.json`)
and register in `<dir>/registry.json`, with what the user accepted (`capabilities.py`) →
remove the earlier version's folder → report the install → connect when the manifest says
autoConnect. Everything is prepared in a staging folder that is
removed whatever happens, so a failure (checksum, missing configuration, ...) leaves
nothing behind: no folder the install created, no registry entry, the earlier install as
it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from marketplace_client.api import ApiClient, ApiError, expect_object, expect_str
from marketplace_client.capabilities import (
    Accepted,
    Capabilities,
    accepted_after,
    capability_lines,
    fetch_capabilities,
)
from marketplace_client.config import plugins_dir, resolve_credentials
from marketplace_client.context import Runtime, get_runtime
from marketplace_client.errors import CliError
from marketplace_client.install_id import install_id
from marketplace_client.manifest_check import (
    check_mcp_declaration,
    check_plugin_key,
    check_version,
    problem_line,
    safe_relative,
    ui_entry,
)
from marketplace_client.mcp_client import McpError, McpServerInfo, probe_stdio
from marketplace_client.next_steps import Subject
from marketplace_client.offers import NEW_INSTALL, Channel, ChannelOption, check_updates
from marketplace_client.options import BackendOption, JsonOption, TokenOption
from marketplace_client.output import Output, reporting_errors
from marketplace_client.registry import (
    installed_plugins,
    placeholders,
    register_plugin,
    registry_locked,
    registry_path,
    resolve_server,
    saved_config,
    server_entry,
)
from marketplace_client.secret_store import SecretStore
from marketplace_client.transparency import remember, verify_release_logged
from marketplace_client.trust import (
    TrustError,
    check_bytes,
    check_release,
    verify_release,
)
from marketplace_rules.canonical import canonical_json
from marketplace_rules.content import is_icon_path
from marketplace_rules.limits import ARCHIVE_MAX_MEMBERS, ARCHIVE_MAX_UNPACKED_BYTES, GIB
from marketplace_rules.manifest import UnreadableManifest, load_manifest
from marketplace_rules.versions import version_problem
from marketplace_rules.vocabulary import MANIFEST_NAME

MAX_MEMBERS = ARCHIVE_MAX_MEMBERS
MAX_UNPACKED_BYTES = ARCHIVE_MAX_UNPACKED_BYTES
DEFAULT_MAIN = "index.js"
DEFAULT_UI_ENTRY = "ui.js"
MASK = "********"
MIN_REDACTED_LENGTH = 4  # shorter secrets would mask unrelated text


# --- configuration -----------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigItem:
    key: str
    label: str | None = None
    description: str | None = None
    required: bool = False
    secret: bool = False
    default: str | None = None


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def config_items(manifest: Mapping[str, Any]) -> list[ConfigItem]:
    """The manifest's `config` items (malformed entries are ignored)."""
    items = manifest.get("config")
    if not isinstance(items, list):
        return []
    found: list[ConfigItem] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            continue
        found.append(
            ConfigItem(
                key=item["key"],
                label=item.get("label") if isinstance(item.get("label"), str) else None,
                description=_as_text(item.get("description")),
                required=item.get("required") is True,
                secret=item.get("secret") is True,
                default=_as_text(item.get("default")),
            )
        )
    return found


def parse_config_args(values: list[str]) -> dict[str, str]:
    """`--config KEY=VALUE` options as a dict (the value may itself contain '=')."""
    given: dict[str, str] = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key.strip():
            raise CliError("BAD_OPTION", f"--config expects KEY=VALUE, got {value!r}")
        given[key.strip()] = rest
    return given


def prompt_item(item: ConfigItem) -> str:
    text = item.label or item.key
    if item.description:
        text = f"{text} ({item.description})"
    value: str = typer.prompt(
        text,
        default=item.default,
        hide_input=item.secret,
        show_default=not item.secret,
    )
    return value


def resolve_config(
    items: list[ConfigItem],
    given: Mapping[str, str],
    *,
    interactive: bool,
    ask: Callable[[ConfigItem], str] = prompt_item,
) -> dict[str, str]:
    """Values for the configuration: given ones, then defaults, then asked (required only).

    Without a terminal a missing required item is an error naming every missing key.
    """
    values = dict(given)
    missing: list[ConfigItem] = []
    for item in items:
        if item.key in values:
            continue
        if item.required and interactive:
            values[item.key] = ask(item)
        elif item.default is not None:
            values[item.key] = item.default
        elif item.required:
            missing.append(item)
    if missing:
        keys = ", ".join(item.key for item in missing)
        raise CliError(
            "CONFIG_MISSING",
            f"missing required configuration: {keys} (pass --config KEY=VALUE)",
            details={"keys": [item.key for item in missing]},
        )
    return values


# --- materialising the plugin -------------------------------------------------------------


def unpack_safely(archive: Path, target: Path, undated: float | None = None) -> Path:
    """Extract with the `data` filter and caps; return the folder holding manifest.json.

    Files keep the archive's times; members dated 0 (the publishing tool packs reproducibly,
    every mtime 0) get `undated` instead (the version's approval time) rather than 1970."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members: list[tarfile.TarInfo] = []
            unpacked = 0
            for member in tar:
                # The data filter would only strip the slash; the service refuses these.
                if member.name.startswith(("/", "\\")):
                    raise CliError("PACKAGE_INVALID", f"absolute path {member.name!r}")
                members.append(member)
                unpacked += member.size
                if len(members) > MAX_MEMBERS:
                    raise CliError("PACKAGE_INVALID", f"more than {MAX_MEMBERS} members")
                if unpacked > MAX_UNPACKED_BYTES:
                    too_big = f"unpacked size is over {MAX_UNPACKED_BYTES // GIB} GiB"
                    raise CliError("PACKAGE_INVALID", too_big)
            tar.extractall(target, members=members, filter="data")
            if undated is not None:
                date_undated(target, members, undated)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise CliError("PACKAGE_INVALID", f"cannot unpack the package: {exc}") from exc
    return content_root(target)


def date_undated(target: Path, members: list[tarfile.TarInfo], when: float) -> None:
    """Give members without a time `when`, and folders the archive has no entry for too
    (extraction made them, dated now); deepest first, so dating what a folder holds does
    not change the folder's time afterwards."""
    for member in sorted(members, key=lambda m: m.name.count("/"), reverse=True):
        path = target / member.name
        if member.mtime <= 0 and member.isfile() and path.exists():
            os.utime(path, (when, when))
    dated = {member.name.strip("/") for member in members if member.mtime > 0}
    for folder, _dirs, _files in os.walk(target, topdown=False):
        relative = Path(folder).relative_to(target).as_posix()
        if relative != "." and relative not in dated:
            os.utime(folder, (when, when))


def content_root(folder: Path) -> Path:
    """`folder`, or its only subfolder when the package wraps everything in one folder."""
    if (folder / MANIFEST_NAME).is_file():
        return folder
    children = list(folder.iterdir())
    if len(children) == 1 and children[0].is_dir() and (children[0] / MANIFEST_NAME).is_file():
        return children[0]
    raise CliError("PACKAGE_INVALID", "the package has no manifest.json")


def download_package(
    api: ApiClient, url: str, release: Mapping[str, Any], scratch: Path, out: Output, what: str
) -> Path:
    """Download into `scratch` (outside the install folder) and check the bytes against the
    signed release: size first (never more than it says), then SHA256."""
    expected_size = release["size"]
    if not isinstance(expected_size, int) or isinstance(expected_size, bool) or expected_size < 0:
        raise TrustError("RECORD_INVALID", f"the signed release of {what} has no package size")
    archive = scratch / "package.tar.gz"
    with archive.open("wb") as sink, out.progress(f"Downloading {what}", expected_size) as bar:
        try:
            actual, received = api.download(url, sink, max_bytes=expected_size, on_progress=bar)
        except CliError as exc:
            if exc.code != "DOWNLOAD_TOO_LARGE":
                raise
            raise TrustError(
                "SIZE_MISMATCH",
                f"the download of {what} is larger than the {expected_size} bytes its signed "
                "release says",
            ) from None
    check_bytes(release, actual, received, f"the download of {what}")
    return archive


@dataclass(frozen=True)
class Verified:
    """A download proven to be what the service signed, not yet in the install folder."""

    distribution: str
    version: str
    archive: Path | None  # tarball: the checked package, in a scratch folder
    manifest: dict[str, Any] | None  # config_only and inline: the checked manifest
    approved_at: float | None = None  # the signed approval time, for undated files


def _approved_at(release: Mapping[str, Any]) -> float | None:
    value = release.get("approvedAt")
    try:
        return datetime.fromisoformat(value).timestamp() if isinstance(value, str) else None
    except ValueError:
        return None


def _distribution(info: Mapping[str, Any]) -> str:
    distribution = info.get("distribution")
    if distribution is None:
        distribution = "config_only" if info.get("configOnly") else "tarball"
    if distribution not in ("tarball", "config_only", "inline"):
        raise CliError("BAD_RESPONSE", f"unknown distribution {distribution!r}")
    return str(distribution)


def verify_download(
    api: ApiClient,
    info: Mapping[str, Any],
    plugin_key: str,
    requested: str | None,
    scratch: Path,
    out: Output,
) -> Verified:
    """Everything CONTRACT 11 and 15 let a client prove, before anything is written where
    plugins live: the release record is signed by a key the service lists (and pinned keys
    still hold), it names this plugin, version and distribution and the download info's
    checksum, its approval is in the transparency log the service signed (and that log
    extends the one this client saw last), and the bytes received (or the served manifest's
    canonical JSON) are the signed ones. The log's checkpoint is stored only then."""
    what = f"{plugin_key} {requested or 'latest'}"
    distribution = _distribution(info)
    signed = verify_release(api, info.get("release"), what=what)
    release = signed.fields
    expected: dict[str, Any] = {"kind": "plugin", "key": plugin_key, "distribution": distribution}
    if requested is not None:
        expected["version"] = requested
    if distribution == "tarball":
        expected["sha256"] = expect_str(info, "sha256", "download information").lower()
        expected["size"] = info.get("size")
        check_release(release, expected, what)
        logged = verify_release_logged(api, signed, what)
        url = expect_str(info, "url", "download information")
        archive = download_package(api, url, release, scratch, out, what)
        remember(api, logged)
        return Verified(distribution, str(release["version"]), archive, None, _approved_at(release))
    manifest = expect_object(info.get("manifest"), "download information manifest")
    expected["version"] = manifest.get("version")
    check_release(release, expected, what)
    data = canonical_json(manifest)
    check_bytes(release, hashlib.sha256(data).hexdigest(), len(data), f"the manifest of {what}")
    remember(api, verify_release_logged(api, signed, what))
    return Verified(distribution, str(release["version"]), None, manifest, _approved_at(release))


def _write_text(folder: Path, name: str, text: str) -> None:
    if not safe_relative(name) or name == MANIFEST_NAME:
        raise CliError("PACKAGE_INVALID", f"refusing to write {name!r}")
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_manifest(folder: Path, manifest: Mapping[str, Any]) -> None:
    text = json.dumps(manifest, ensure_ascii=False, indent=2) + "\n"
    (folder / MANIFEST_NAME).write_text(text, encoding="utf-8")


def restore_inline(folder: Path, manifest: Mapping[str, Any]) -> None:
    """Write the code carried in the manifest back to files; keep the manifest without it."""
    main = manifest.get("main")
    entry = ui_entry(manifest)
    code = manifest.get("inlineCode")
    ui_code = manifest.get("inlineUiCode")
    if isinstance(code, str):
        _write_text(folder, main if isinstance(main, str) and main else DEFAULT_MAIN, code)
    if isinstance(ui_code, str):
        _write_text(
            folder, entry if isinstance(entry, str) and entry else DEFAULT_UI_ENTRY, ui_code
        )
    write_manifest(
        folder, {k: v for k, v in manifest.items() if k not in ("inlineCode", "inlineUiCode")}
    )


def materialise(verified: Verified, staging: Path) -> Path:
    """Put the verified plugin's files in the staging folder; return its content root."""
    content = staging / "content"
    if verified.archive is not None:
        return unpack_safely(verified.archive, content, verified.approved_at)
    manifest = verified.manifest or {}
    content.mkdir()
    if verified.distribution == "config_only":
        write_manifest(content, manifest)
    else:
        restore_inline(content, manifest)
    return content


def read_installed_manifest(
    content: Path, plugin_key: str, requested: str | None
) -> dict[str, Any]:
    try:
        manifest = load_manifest((content / MANIFEST_NAME).read_bytes())
    except OSError as exc:
        raise CliError("PACKAGE_INVALID", f"{MANIFEST_NAME} is not readable: {exc}") from exc
    except UnreadableManifest as exc:
        raise CliError("PACKAGE_INVALID", f"{MANIFEST_NAME} {exc.finding.message}") from exc
    if manifest.get("id") != plugin_key:
        raise CliError(
            "PACKAGE_INVALID", f"manifest id {manifest.get('id')!r} is not {plugin_key!r}"
        )
    problems = check_version(manifest.get("version"))
    if problems:
        raise CliError("PACKAGE_INVALID", f"manifest {problem_line(problems[0])}")
    if requested is not None and manifest["version"] != requested:
        raise CliError(
            "PACKAGE_INVALID", f"asked for {requested}, the package is {manifest['version']}"
        )
    return manifest


def drop_missing_icon(content: Path, manifest: dict[str, Any]) -> str | None:
    """An icon path naming a file the install does not have (inline and config-only installs
    carry no icon file) is removed from the installed manifest, so no host looks for it."""
    icon = manifest.get("icon")
    if not isinstance(icon, str) or not is_icon_path(icon):
        return None
    if safe_relative(icon) and (content / icon).is_file():
        return None
    del manifest["icon"]
    write_manifest(content, manifest)
    return f"icon {icon!r} is not part of this install: removed from its manifest.json"


def move_into_place(content: Path, target: Path) -> None:
    """Put the new folder in place; an earlier install of the same version is moved aside
    first and deleted only once the new one is there."""
    aside: Path | None = None
    if target.exists():
        aside = content.parent / "replaced"
        target.rename(aside)
    try:
        content.rename(target)
    except OSError:
        if aside is not None:
            aside.rename(target)
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def is_install_of(folder: Path, plugin_key: str) -> bool:
    """A version folder this client made for `plugin_key`: named by a version and holding
    that plugin's manifest.json (itself or its only subfolder). Anything else under the
    plugin's folder is the user's and is never deleted."""
    if not folder.is_dir() or folder.is_symlink() or version_problem(folder.name) is not None:
        return False
    try:
        manifest = json.loads((content_root(folder) / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (CliError, OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("id") == plugin_key


def remove_other_versions(plugin_root: Path, keep: Path, plugin_key: str) -> list[str]:
    """Delete every other version folder of the plugin (the one replaced, and any an older
    client left behind); staging folders of a concurrent install and anything that is not
    an install of this plugin are left alone."""
    removed: list[str] = []
    for child in sorted(plugin_root.iterdir()):
        if child == keep or not is_install_of(child, plugin_key):
            continue
        shutil.rmtree(child, ignore_errors=True)
        removed.append(child.name)
    return removed


# --- the flow -----------------------------------------------------------------------------


def redact(value: Any, secrets: tuple[str, ...]) -> Any:
    """`value` with every secret string in it replaced by a mask, for printing."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, MASK)
        return value
    if isinstance(value, list):
        return [redact(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: redact(item, secrets) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class InstallRequest:
    plugin_key: str
    version: str | None
    root: Path
    given: dict[str, str]
    # The version's capabilities when the caller read them already (update, for consent).
    capabilities: Capabilities | None = None
    # Without a version: the update check on this channel says what a new install gets
    # (None: `latest`, as asked).
    offer_channel: Channel | None = None


@dataclass(frozen=True)
class Unpacked:
    """A plugin moved into place, with its configuration resolved."""

    distribution: str
    manifest: dict[str, Any]
    items: list[ConfigItem]
    config: dict[str, str]
    path: Path
    notes: list[str]


@dataclass
class InstallResult:
    plugin_key: str
    version: str
    distribution: str
    path: Path
    registry: Path
    config: dict[str, str]
    secret_keys: frozenset[str]
    server: dict[str, Any] | None
    auto_connect: bool
    reported: bool = False
    report_error: dict[str, Any] | None = None
    connection: McpServerInfo | None = None
    connect_error: McpError | None = None
    notes: list[str] = field(default_factory=list)
    capabilities: Capabilities | None = None

    @property
    def secrets(self) -> tuple[str, ...]:
        """Secret values long enough to be looked for inside other text (args, URLs, logs)."""
        values = (self.config.get(key, "") for key in self.secret_keys)
        return tuple(value for value in values if len(value) >= MIN_REDACTED_LENGTH)

    def _mask_keys(self, values: Mapping[str, str]) -> dict[str, str]:
        return {k: MASK if k in self.secret_keys else v for k, v in values.items()}

    def describe_server(self) -> str:
        if self.server is None:
            return "no MCP server declared"
        if self.server["type"] == "stdio":
            return f"MCP server: stdio, command {self.server['command']}"
        return f"MCP server: {self.server['type']} {redact(self.server['url'], self.secrets)}"

    def to_json(self) -> dict[str, Any]:
        connect: dict[str, Any] | None = None
        if self.connection is not None:
            connect = {"ok": True, **self.connection.to_json()}
        elif self.connect_error is not None:
            connect = {"ok": False, "error": self.connect_error.to_json()}
        server = dict(self.server) if self.server is not None else None
        if server is not None and "env" in server:
            server["env"] = self._mask_keys(server["env"])
        document = {
            "pluginKey": self.plugin_key,
            "version": self.version,
            "distribution": self.distribution,
            "path": str(self.path),
            "registry": str(self.registry),
            "config": self._mask_keys(self.config),
            "mcpServer": server,
            "autoConnect": self.auto_connect,
            "reported": self.reported,
            "reportError": self.report_error,
            "connection": connect,
            "notes": self.notes,
            "capabilities": self.capabilities.to_json() if self.capabilities else None,
        }
        redacted: dict[str, Any] = redact(document, self.secrets)
        return redacted


def _check_request(request: InstallRequest) -> None:
    problems = check_plugin_key(request.plugin_key, "PLUGIN_KEY")
    if request.version is not None:
        problems += check_version(request.version, "--version")
    if problems:
        raise CliError("BAD_OPTION", "; ".join(problem_line(problem) for problem in problems))


def offered_to_new_install(api: ApiClient, out: Output, key: str, channel: Channel) -> str | None:
    """The version the update check offers a new install of `key` (asked as NEW_INSTALL),
    so that a staged rollout, or a halted one, decides for new installs as it does for
    existing ones. None means "install `latest`": nothing is offered, the plugin is not
    listed (the download then says so) or the check failed (an older service without it:
    a warning)."""
    try:
        offer = check_updates(api, {key: NEW_INSTALL}, channel, install_id()).get(key)
    except CliError as exc:
        out.warn(f"the update check failed, so the current version is installed: {exc.headline()}")
        return None
    return offer.offered if offer is not None else None


def _unpack(api: ApiClient, runtime: Runtime, out: Output, request: InstallRequest) -> Unpacked:
    """Verify outside the install folder; then prepare in a staging folder and move into
    place only when all went well."""
    key = request.plugin_key
    # Read (and migrate) what is saved before anything is written: an unreadable registry
    # or secrets file stops the install here, not after the files are in place.
    saved = saved_config(request.root, key)
    version = request.version
    if version is None and request.offer_channel is not None:
        version = offered_to_new_install(api, out, key, request.offer_channel)
    info = expect_object(
        api.get(f"/api/v1/plugins/download/{key}/{version or 'latest'}"),
        "download information",
    )
    with tempfile.TemporaryDirectory(prefix="marketplace-download-") as scratch:
        try:
            verified = verify_download(api, info, key, version, Path(scratch), out)
        except TrustError as exc:
            raise TrustError(
                exc.code, f"{exc.message}; nothing was installed", details=exc.details
            ) from None
        plugin_root = request.root / key
        created = _missing_parents(plugin_root)
        plugin_root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".install-", dir=plugin_root))
        try:
            content = materialise(verified, staging)
            # The signed version, when `latest` was asked for: the package must agree.
            manifest = read_installed_manifest(content, key, verified.version)
            notes = [note for note in [drop_missing_icon(content, manifest)] if note]
            items = config_items(manifest)
            known = {item.key for item in items}
            # Saved values the new version still asks for, then what was given now.
            given = {k: v for k, v in saved.items() if k in known} | request.given
            config = resolve_config(items, given, interactive=runtime.is_interactive())
            target = plugin_root / str(manifest["version"])
            move_into_place(content, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            _remove_if_empty(created)
    return Unpacked(verified.distribution, manifest, items, config, target, notes)


def _missing_parents(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist yet, deepest first."""
    missing: list[Path] = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_if_empty(created: list[Path]) -> None:
    """Remove the folders an install created when they are still empty (a failed install)."""
    for folder in created:
        try:
            folder.rmdir()
        except OSError:
            return  # not empty (the install went through) or already gone


def _registered_server(unpacked: Unpacked, notes: list[str]) -> dict[str, Any] | None:
    if "mcp" not in unpacked.manifest:
        return None
    problems = check_mcp_declaration(unpacked.manifest["mcp"])
    if problems:
        lines = "; ".join(problem_line(problem) for problem in problems)
        notes.append(f"MCP declaration not registered: {lines}")
        return None
    secret_keys = {item.key for item in unpacked.items if item.secret}
    # Secrets enter the registered entry as placeholders, filled in when it is started.
    values = {**unpacked.config, **placeholders(secret_keys & set(unpacked.config))}
    return server_entry(unpacked.manifest["mcp"], values, unpacked.path)


def _result(unpacked: Unpacked, request: InstallRequest) -> InstallResult:
    known = {item.key for item in unpacked.items}
    notes = [f"unknown configuration key {key!r}" for key in request.given if key not in known]
    notes += unpacked.notes
    return InstallResult(
        plugin_key=request.plugin_key,
        version=str(unpacked.manifest["version"]),
        distribution=unpacked.distribution,
        path=unpacked.path,
        registry=registry_path(request.root),
        config=unpacked.config,
        secret_keys=frozenset(item.key for item in unpacked.items if item.secret),
        server=_registered_server(unpacked, notes),
        auto_connect=unpacked.manifest.get("autoConnect") is True,
        notes=notes,
    )


def _registry_plugin(result: InstallResult, accepted: Accepted) -> dict[str, Any]:
    return {
        "version": result.version,
        "path": str(result.path),
        "distribution": result.distribution,
        "installedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "config": {k: v for k, v in result.config.items() if k not in result.secret_keys},
        "secretKeys": sorted(result.secret_keys),
        "autoConnect": result.auto_connect,
        "accepted": accepted.to_json(),
    }


def _report(api: ApiClient, result: InstallResult, out: Output) -> None:
    try:
        api.post(f"/api/v1/plugins/install/{result.plugin_key}", json={"version": result.version})
    except ApiError as exc:
        out.warn(f"the install could not be reported: {exc.headline()}")
        result.report_error = exc.to_json()
        return
    result.reported = True


def _auto_connect(result: InstallResult, runtime: Runtime, out: Output) -> None:
    server = result.server
    if server is None:
        result.notes.append("autoConnect is set but no MCP server is declared")
        return
    if server["type"] != "stdio":
        result.notes.append(
            f"autoConnect skipped: only stdio servers are started ({server['type']})"
        )
        return
    out.step(f"Connecting to {result.plugin_key} ({server['command']})")
    started = resolve_server(server, result.config)
    try:
        result.connection = probe_stdio(
            started["command"],
            started["args"],
            started["env"],
            result.path,
            timeout=runtime.mcp_timeout,
        )
    except McpError as exc:
        result.connect_error = exc


def install(
    api: ApiClient, runtime: Runtime, out: Output, request: InstallRequest
) -> InstallResult:
    """The whole client install flow; McpError of autoConnect is kept in the result."""
    _check_request(request)
    previous = installed_plugins(request.root).get(request.plugin_key)
    result = _result(_unpack(api, runtime, out, request), request)
    shown = request.capabilities
    if shown is None or shown.version != result.version:
        shown = fetch_capabilities(runtime, api.backend, result.plugin_key, result.version)
    result.capabilities = shown
    secrets = {k: v for k, v in result.config.items() if k in result.secret_keys}
    store = SecretStore(request.root)
    with registry_locked(request.root):
        earlier = store.get(result.plugin_key)
        try:
            # Installing is accepting what it shows (the consent of `update` came before).
            current = installed_plugins(request.root).get(result.plugin_key)
            accepted = accepted_after(Accepted.from_entry(current), shown)
            store.put(result.plugin_key, secrets)
            register_plugin(
                result.registry,
                result.plugin_key,
                _registry_plugin(result, accepted),
                result.server,
            )
        except (CliError, OSError):
            # Not registered: the new folder goes, unless it replaced the same version, and
            # the secrets are the earlier install's again (none for a first install).
            if previous is None or previous.get("version") != result.version:
                shutil.rmtree(result.path, ignore_errors=True)
                _remove_if_empty([result.path.parent])
            with contextlib.suppress(CliError, OSError):
                store.put(result.plugin_key, earlier)
            raise
        for name in remove_other_versions(result.path.parent, result.path, result.plugin_key):
            result.notes.append(f"removed the earlier version folder {name}")
    _report(api, result, out)
    if result.auto_connect:
        _auto_connect(result, runtime, out)
    return result


def print_install(out: Output, result: InstallResult) -> None:
    def say(text: str) -> None:
        out.out.print(redact(text, result.secrets), markup=False)

    say(f"Installed {result.plugin_key} {result.version} ({result.distribution}) in {result.path}")
    say(f"Registered in {result.registry} ({result.describe_server()})")
    say("Reported the install." if result.reported else "The install was not reported.")
    if result.capabilities is not None:
        for line in capability_lines(result.capabilities):
            say(line)
    for note in result.notes:
        say(f"Note: {note}")
    if result.connection is not None:
        info = result.connection
        names = ", ".join(tool.name for tool in info.tools) or "none"
        title = f"{info.name} {info.version or ''}".rstrip()
        say(f"Connected to {title}: {len(info.tools)} tools ({names})")


def install_command(
    ctx: typer.Context,
    plugin_key: Annotated[str, typer.Argument(help="The plugin's pluginKey.")],
    version: Annotated[
        str | None,
        typer.Option(
            "--version",
            help="Version to install, or `latest` for the current one (default: the version "
            "the service offers a new install, which a staged rollout decides; else latest).",
        ),
    ] = None,
    channel: ChannelOption = Channel.stable,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Install folder; plugins go to DIR/<pluginKey>/<version>, the registry to "
            "DIR/registry.json (default: $MARKETPLACE_PLUGINS_DIR, else "
            "$XDG_DATA_HOME/marketplace/plugins).",
        ),
    ] = None,
    config: Annotated[
        list[str] | None,
        typer.Option("--config", help="Configuration value KEY=VALUE (repeatable)."),
    ] = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Download, verify, unpack, configure, register and (autoConnect) start a plugin."""
    out = Output(json_mode=json_output, subject=Subject(plugin_key=plugin_key))
    runtime = get_runtime(ctx)
    with reporting_errors(out):
        request = InstallRequest(
            plugin_key,
            None if version == "latest" else version,
            (directory or plugins_dir()).resolve(),
            parse_config_args(config or []),
            # A version given (`latest` included) is the user's choice.
            offer_channel=channel if version is None else None,
        )
        credentials = resolve_credentials(backend, token)
        credentials.require_token()
        with runtime.client(credentials.backend, credentials.token) as api:
            result = install(api, runtime, out, request)
    if result.connect_error is None:
        out.result(result.to_json(), lambda: print_install(out, result))
        return
    report_connect_failure(out, result, result.connect_error)


def report_connect_failure(out: Output, result: InstallResult, error: McpError) -> NoReturn:
    """autoConnect failed: show the install as done, then the error; exit 1."""
    if out.json_mode:
        document = {"success": False, "data": result.to_json(), "error": error.to_json()}
        out.emit_json(redact(document, result.secrets))
    else:
        print_install(out, result)
    message = redact(error.headline(), result.secrets)
    out.err.print(
        f"error: {message} (the plugin stays installed and registered)", style="red", markup=False
    )
    raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("install")(install_command)
