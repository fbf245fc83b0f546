"""`marketplace publish DIR`: check, pack, create or update the record, release a version.

The Publisher below is shared with `publish-batch`; it raises CliError on a failure and
returns an Outcome otherwise (published, skipped because the version exists, or planned
in a dry run).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from marketplace_client.api import ApiClient, ApiError
from marketplace_client.config import resolve_credentials
from marketplace_client.context import get_runtime
from marketplace_client.errors import CliError, ManifestInvalid
from marketplace_client.groups import PluginGroup, RemotePlugin, open_group
from marketplace_client.limits import ServiceLimits, fetch_limits, format_size
from marketplace_client.manifest_check import (
    PluginManifest,
    load_checked_manifest,
    manifest_bytes,
    safe_relative,
)
from marketplace_client.next_steps import Subject, explain
from marketplace_client.options import BackendOption, JsonOption, TokenOption
from marketplace_client.output import Output, reporting_errors
from marketplace_client.pack import (
    IGNORE_FILE,
    PackEntry,
    PackResult,
    listing,
    pack,
    select,
    total_size,
)
from marketplace_rules.limits import ICON_MAX_BYTES
from marketplace_rules.vocabulary import MANIFEST_NAME

VERSION_EXISTS = "PLUGIN_VERSION_EXISTS"
IDENTICAL = "already published, identical"
PUBLISHED, SKIPPED, FAILED, PLANNED, PACKED = "published", "skipped", "failed", "planned", "packed"


@dataclass
class Outcome:
    """What happened to one plugin folder."""

    plugin_key: str
    version: str | None = None
    status: str = FAILED
    detail: str = ""
    group: str | None = None
    distribution: str | None = None
    plugin_id: str | None = None
    actions: list[str] = field(default_factory=list)
    sha256: str | None = None
    size: int | None = None
    path: str | None = None
    error: dict[str, Any] | None = None
    # (archive name, size) of every file the package holds (a dry run lists them).
    files: list[tuple[str, int]] = field(default_factory=list)

    @classmethod
    def failure(cls, plugin_key: str, error: CliError, version: str | None = None) -> Outcome:
        return cls(plugin_key, version, FAILED, error.one_line(), error=error.to_json())

    def to_json(self) -> dict[str, Any]:
        return {
            "pluginKey": self.plugin_key,
            "version": self.version,
            "status": self.status,
            "detail": self.detail,
            "group": self.group,
            "distribution": self.distribution,
            "pluginId": self.plugin_id,
            "actions": self.actions,
            "sha256": self.sha256,
            "size": self.size,
            "path": self.path,
            "error": self.error,
            "files": [{"path": name, "size": size} for name, size in self.files],
        }


@dataclass(frozen=True)
class PublishOptions:
    version: str | None = None
    changelog: str | None = None
    direct: bool = False
    dry_run: bool = False
    recreate_on_type_change: bool = False
    skip_existing: bool = False
    # The organization a new plugin is published into (CONTRACT 17; the developer group).
    org: str | None = None


def package_name(manifest: PluginManifest) -> str:
    return f"{manifest.id}-{manifest.version}.tar.gz"


def pack_plugin(
    plugin_dir: Path,
    manifest: PluginManifest,
    dest: Path,
    out: Output,
    entries: list[PackEntry] | None = None,
) -> PackResult:
    """Pack the folder; the packaged manifest.json is rewritten when --version changed it."""
    if entries is None:
        selection = select(plugin_dir)
        warn_left_out(out, manifest.id, selection.secrets_left_out)
        entries = selection.entries
    override = manifest_bytes(manifest.raw) if manifest.version_overridden else None
    with out.progress(f"Packing {dest.name}", total_size(entries)) as progress:
        return pack(
            plugin_dir, dest, manifest_override=override, entries=entries, on_progress=progress
        )


def _read_code(plugin_dir: Path, name: str) -> str:
    if not safe_relative(name):
        raise CliError("INLINE_UNAVAILABLE", f"{name!r} is not a path inside the plugin folder")
    try:
        return (plugin_dir / name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError("INLINE_UNAVAILABLE", f"cannot read {name} as UTF-8 text: {exc}") from exc


def inline_manifest(plugin_dir: Path, manifest: PluginManifest) -> dict[str, Any]:
    """The manifest carrying the code of `main` (and of the UI entry) for inline mode."""
    inline = dict(manifest.raw)
    inline["inlineCode"] = _read_code(plugin_dir, manifest.main)
    if manifest.ui_entry is not None:
        inline["inlineUiCode"] = _read_code(plugin_dir, manifest.ui_entry)
    return inline


def refuse_rejected(created: Any, version: str) -> None:
    """A version the service's automatic validation rejected on arrival is a failure.

    The service answers 201 with reviewStatus `rejected` and the findings in reviewNote
    (CONTRACT 4, "Automatic validation"): the version exists but will never be released.
    """
    if not isinstance(created, dict) or created.get("reviewStatus") != "rejected":
        return
    note = created.get("reviewNote")
    # The note is a heading and one "- finding" per line: keep it on one line.
    lines = [line.strip().removeprefix("- ") for line in str(note or "").splitlines()]
    head, *findings = [line for line in lines if line] or ["no reason given"]
    reason = f"{head} {'; '.join(findings)}".rstrip()
    raise CliError(
        "VERSION_REJECTED",
        f"the service rejected version {version} on arrival: {reason}",
        details={"versionId": created.get("id"), "reviewNote": note},
    )


@dataclass
class Prepared:
    """What a version of the folder will be, made before any write: the package or the
    create-version manifest, and the files the package holds."""

    distribution: str
    files: list[tuple[str, int]]
    package: PackResult | None = None
    body: dict[str, Any] | None = None
    # The files the inline form would leave out (the inline-code fallback refuses then).
    inline_drops: list[str] = field(default_factory=list)

    @property
    def sha256(self) -> str | None:
        return self.package.sha256 if self.package is not None else None


def inline_drops(manifest: PluginManifest, files: Iterable[str]) -> list[str]:
    """The packed files an inline-code version would not carry: it holds the manifest, the
    code of `main` and of the UI entry; a local icon goes up through the icon endpoint."""
    carried = {MANIFEST_NAME, manifest.main, manifest.ui_entry, manifest.local_icon}
    return sorted(name for name in files if name not in carried)


def refuse_drops(manifest: PluginManifest, drops: list[str], why: str) -> None:
    if not drops:
        return
    carried = ", ".join(n for n in (MANIFEST_NAME, manifest.main, manifest.ui_entry) if n)
    noun = "file" if len(drops) == 1 else "files"
    raise CliError(
        "INLINE_WOULD_DROP_FILES",
        f"{why}: an inline-code version carries only {carried}; it would drop "
        f"{len(drops)} {noun}: {', '.join(drops)}",
        details={"dropped": drops},
    )


class Publisher:
    """Publishes plugin folders through one group with one set of options.

    Everything is checked before the first write: the manifest (with the category), the
    type change and whose plugin it is, an existing version (compared by content), the
    icon and the package against the service's limits. Then the record, the version and
    the icon are written."""

    def __init__(
        self,
        group: PluginGroup,
        categories: Iterable[str],
        out: Output,
        options: PublishOptions,
        limits: ServiceLimits | None = None,
    ) -> None:
        self.group = group
        self.categories = sorted(set(categories))
        self.out = out
        self.options = options
        self.limits = limits or ServiceLimits(None, ICON_MAX_BYTES)

    def publish(self, plugin_dir: Path, manifest: PluginManifest | None = None) -> Outcome:
        """Publish one folder; `manifest` when the caller already checked it."""
        if manifest is None:
            manifest = load_checked_manifest(
                plugin_dir, self.options.version, categories=self.categories
            )
        try:
            return self._publish(plugin_dir, manifest)
        except CliError as exc:  # the service's refusals name the plugin and what to do
            raise explain(exc, Subject(plugin_key=manifest.id)) from exc

    def _publish(self, plugin_dir: Path, manifest: PluginManifest) -> Outcome:
        outcome = Outcome(manifest.id, manifest.version, group=self.group.name)
        remote = self.group.find(manifest.id)
        if remote is not None:
            self._check_org(remote)
        change = self._type_change(manifest, remote) if remote is not None else None
        existing = None
        if remote is not None and change is None:
            outcome.plugin_id = remote.id
            existing = self.group.remote_version(remote, manifest.version)
        with tempfile.TemporaryDirectory(prefix="marketplace-publish-") as temp:
            prepared = self._prepare(plugin_dir, manifest, Path(temp))
            outcome.sha256 = prepared.sha256
            outcome.size = prepared.package.size if prepared.package is not None else None
            outcome.files = prepared.files
            if existing is not None:
                return self._existing(plugin_dir, manifest, existing, prepared, outcome)
            # What will be sent, against the service's limits.
            if prepared.package is not None:
                self.limits.check_package(prepared.package.size)
            if manifest.local_icon is not None:
                self.limits.check_icon(plugin_dir, manifest.local_icon)
            if self.options.dry_run:
                return self._plan(manifest, remote, change, prepared, outcome)
            plugin_id = self._ensure_record(manifest, remote, change, outcome)
            outcome.plugin_id = plugin_id
            self._release(plugin_dir, manifest, plugin_id, prepared, outcome)
        if outcome.status == PUBLISHED and manifest.local_icon is not None:
            self.group.upload_icon(plugin_id, plugin_dir / manifest.local_icon)
            self._did(outcome, f"uploaded icon {manifest.local_icon}")
        return outcome

    def _where(self) -> str:
        where = f"{self.group.name} group"
        return where if self.options.org is None else f"{where}, organization {self.options.org}"

    def _did(self, outcome: Outcome, action: str) -> None:
        outcome.actions.append(action)
        self.out.step(f"{outcome.plugin_key}: {action}")

    def _check_org(self, remote: RemotePlugin) -> None:
        """--org names where a new plugin goes; an existing one elsewhere is refused before
        any write (moving a personal plugin in is `POST .../transfer`, by an owner)."""
        wanted = self.options.org
        if wanted is None or remote.org == wanted:
            return
        where = f'organization "{remote.org}"' if remote.org else "you personally"
        raise CliError(
            "ORG_MISMATCH",
            f"{remote.plugin_key} exists and belongs to {where}, not to organization "
            f'"{wanted}": --org applies when a plugin is created; nothing was changed',
            details={"org": remote.org, "requested": wanted},
        )

    def _type_change(self, manifest: PluginManifest, remote: RemotePlugin) -> str | None:
        """A description of the type change, after checking it may be done."""
        if remote.type is None or remote.type == manifest.type:
            return None
        change = f"type {remote.type} -> {manifest.type}"
        if not self.group.can_delete:
            raise CliError(
                "PLUGIN_TYPE_CHANGED",
                f"{change}: a plugin's type cannot change in place, and only an "
                "administrator can delete and recreate it",
            )
        if self.group.owned_by_another(remote):
            raise CliError(
                "PLUGIN_NOT_OWNED",
                f"{change}: the plugin belongs to another account (owner {remote.owner_id}); "
                "it is not deleted and recreated: nothing was changed",
                details={"ownerId": remote.owner_id, "pluginId": remote.id},
            )
        if not self.options.recreate_on_type_change:
            raise CliError(
                "PLUGIN_TYPE_CHANGED",
                f"{change}: a plugin's type cannot change in place; "
                "pass --allow-recreate to delete and recreate it",
            )
        return change

    def _prepare(self, plugin_dir: Path, manifest: PluginManifest, temp: Path) -> Prepared:
        if manifest.config_only:
            warn_not_sent(self.out, manifest, plugin_dir)
            return Prepared("config_only", [], body=manifest.raw)
        selection = select(plugin_dir)
        warn_left_out(self.out, manifest.id, selection.secrets_left_out)
        files = [(entry.arcname, entry.size) for entry in selection.entries]
        drops = inline_drops(manifest, [name for name, _size in files])
        if self.options.direct:
            refuse_drops(manifest, drops, "--direct")
            return Prepared("inline", files, body=inline_manifest(plugin_dir, manifest))
        package = pack_plugin(
            plugin_dir, manifest, temp / package_name(manifest), self.out, selection.entries
        )
        return Prepared("tarball", files, package=package, inline_drops=drops)

    def _existing(
        self,
        plugin_dir: Path,
        manifest: PluginManifest,
        remote: dict[str, Any],
        prepared: Prepared,
        outcome: Outcome,
    ) -> Outcome:
        """The version exists: identical is done, different content is refused (or skipped
        with --skip-existing); nothing is written either way."""
        version = manifest.version
        difference = content_difference(remote, prepared)
        if difference is not None and fallback_made(remote, prepared):
            # Made by the inline fallback from a folder the inline form holds whole: the
            # same content if the same inline manifest.
            inline = Prepared("inline", prepared.files, body=inline_manifest(plugin_dir, manifest))
            if content_difference(remote, inline) is None:
                difference = None
        outcome.distribution = str(remote.get("distribution") or prepared.distribution)
        status = remote.get("reviewStatus")
        if status in ("rejected", "taken_down"):
            # Identical or not, this version will never be served: a re-run must not turn
            # the rejection into "up to date".
            word = "was rejected" if status == "rejected" else "was taken down"
            note = " ".join(str(remote.get("reviewNote") or "").split())
            raise CliError(
                VERSION_EXISTS,
                f"version {version} exists and {word}"
                + (f" ({note[:300]})" if note else "")
                + ": raise the version",
                details={"version": version, "reviewStatus": status},
            )
        if difference is None:
            outcome.status = SKIPPED
            outcome.detail = IDENTICAL
            if prepared.sha256 is not None:
                outcome.detail += f" (sha256 {prepared.sha256})"
            if status == "pending":
                outcome.detail += ", waiting for review"
            self.out.step(f"{manifest.id}: version {version} {outcome.detail}")
            return outcome
        refusal = CliError(
            VERSION_EXISTS,
            f"version {version} exists with different content: raise the version ({difference})",
            details={
                "version": version,
                "remoteSha256": remote.get("sha256"),
                "localSha256": prepared.sha256,
            },
        )
        if not self.options.skip_existing:
            raise refusal
        outcome.status = SKIPPED
        outcome.detail = (
            f"version {version} exists with different content: raise the version (skipped)"
        )
        self.out.warn(f"{manifest.id}: {refusal.message}")
        return outcome

    def _ensure_record(
        self,
        manifest: PluginManifest,
        remote: RemotePlugin | None,
        change: str | None,
        outcome: Outcome,
    ) -> str:
        if remote is None:
            created = self.group.create(manifest, self.options.org)
            self._did(outcome, f"created plugin ({self._where()})")
            return created.id
        if change is not None:
            self.group.delete(remote.id)
            created = self.group.create(manifest, self.options.org)
            self._did(outcome, f"deleted and recreated plugin ({change})")
            return created.id
        self.group.update(remote.id, manifest)
        self._did(outcome, "updated plugin")
        return remote.id

    def _release(
        self,
        plugin_dir: Path,
        manifest: PluginManifest,
        plugin_id: str,
        prepared: Prepared,
        outcome: Outcome,
    ) -> None:
        try:
            outcome.distribution = self._create_version(
                plugin_dir, manifest, plugin_id, prepared, outcome
            )
        except ApiError as exc:
            if exc.code != VERSION_EXISTS:
                raise
            # Created meanwhile by someone else: judge it as any existing version.
            remote = self.group.find(manifest.id)
            found = self.group.remote_version(remote, manifest.version) if remote else None
            if found is None:
                raise
            self._existing(plugin_dir, manifest, found, prepared, outcome)
            return
        outcome.status = PUBLISHED
        outcome.detail = f"version {manifest.version} ({outcome.distribution})"
        if self.group.reviewed:
            outcome.detail += ", waiting for review"

    def _create_version(
        self,
        plugin_dir: Path,
        manifest: PluginManifest,
        plugin_id: str,
        prepared: Prepared,
        outcome: Outcome,
    ) -> str:
        if prepared.package is None:
            created = self.group.create_version(
                plugin_id, manifest.version, self.options.changelog, prepared.body or {}
            )
            refuse_rejected(created, manifest.version)
            what = "configuration-only" if prepared.distribution == "config_only" else "inline-code"
            self._did(outcome, f"created {what} version {manifest.version}")
            return prepared.distribution
        return self._upload_package(plugin_dir, manifest, plugin_id, prepared, outcome)

    def _upload_package(
        self,
        plugin_dir: Path,
        manifest: PluginManifest,
        plugin_id: str,
        prepared: Prepared,
        outcome: Outcome,
    ) -> str:
        package = prepared.package
        assert package is not None  # noqa: S101 - _create_version sends only packages here
        created, failure = self._try_upload(package, manifest, plugin_id)
        if failure is None:
            refuse_rejected(created, manifest.version)
            size = format_size(package.size)
            self._did(
                outcome,
                f"uploaded package {manifest.version} ({size}, sha256 {package.sha256})",
            )
            return "tarball"
        self.out.warn(f"{manifest.id}: package upload failed ({failure.headline()})")
        refuse_drops(
            manifest,
            prepared.inline_drops,
            f"package upload failed ({failure.headline()}) and the inline-code fallback "
            "would lose files; nothing was published",
        )
        self._did(outcome, "package upload failed; falling back to inline code")
        body = inline_manifest(plugin_dir, manifest)
        created = self.group.create_version(
            plugin_id, manifest.version, self.options.changelog, body
        )
        refuse_rejected(created, manifest.version)
        self._did(outcome, f"created inline-code version {manifest.version}")
        return "inline"

    def _try_upload(
        self, package: PackResult, manifest: PluginManifest, plugin_id: str
    ) -> tuple[Any, ApiError | None]:
        """(the created version, None), or (None, the error) when the service could not
        take the package (5xx, network); a refusal (4xx) is raised."""
        try:
            with self.out.progress(f"Uploading {package.path.name}", package.size) as progress:
                created = self.group.upload_version(
                    plugin_id, package.path, manifest.version, self.options.changelog, progress
                )
        except ApiError as exc:
            if not exc.server_side:
                raise
            return None, exc
        return created, None

    def _plan(
        self,
        manifest: PluginManifest,
        remote: RemotePlugin | None,
        change: str | None,
        prepared: Prepared,
        outcome: Outcome,
    ) -> Outcome:
        outcome.status = PLANNED
        outcome.distribution = prepared.distribution
        publish = f"would publish {manifest.version} ({prepared.distribution})"
        if remote is None:
            self._did(outcome, f"would create plugin ({self._where()})")
            outcome.detail = publish
        elif change is not None:
            self._did(outcome, f"would delete and recreate plugin ({change})")
            outcome.detail = f"would delete and recreate ({change}), then {publish}"
        else:
            self._did(outcome, "would update plugin")
            outcome.detail = publish
        if prepared.package is not None:
            self._did(outcome, f"would upload package ({format_size(prepared.package.size)})")
        elif prepared.distribution == "config_only":
            self._did(outcome, "would create a configuration-only version")
        else:
            self._did(outcome, "would create an inline-code version")
        if manifest.local_icon is not None:
            self._did(outcome, f"would upload icon {manifest.local_icon}")
        return outcome


def fallback_made(remote: dict[str, Any], prepared: Prepared) -> bool:
    """The service's version may be the inline fallback of this local package."""
    return (
        remote.get("distribution") == "inline"
        and prepared.package is not None
        and not prepared.inline_drops
    )


def content_difference(remote: dict[str, Any], prepared: Prepared) -> str | None:
    """How the service's version differs from the local one; None when identical (the
    same package bytes, or the same create-version manifest)."""
    if prepared.package is not None:
        theirs = remote.get("sha256")
        if theirs == prepared.package.sha256:
            return None
        if theirs is None:
            return (
                f"the service's version is {remote.get('distribution')}, without a package; "
                f"the local package is {prepared.package.sha256}"
            )
        return f"the service has sha256 {theirs}, the local package is {prepared.package.sha256}"
    if (
        remote.get("distribution") == prepared.distribution
        and remote.get("manifest") == prepared.body
    ):
        return None
    return (
        f"the service's {remote.get('distribution')} version differs from the local "
        f"{prepared.distribution} manifest"
    )


def warn_not_sent(out: Output, manifest: PluginManifest, plugin_dir: Path) -> None:
    """A configuration-only version is its manifest: say which files of the folder it
    does not carry (a local icon goes up through the icon endpoint)."""
    kept = {MANIFEST_NAME, manifest.local_icon}
    others = sorted(name for name in listing(plugin_dir).files if name not in kept)
    if others:
        out.warn(
            f"{manifest.id}: a configuration-only version is its manifest; not sent: "
            f"{', '.join(others)}"
        )


def warn_left_out(out: Output, plugin_key: str, left_out: list[str]) -> None:
    if left_out:
        out.warn(
            f"{plugin_key}: not packed, as they usually hold secrets: {', '.join(left_out)} "
            f"(re-include one with a `!name` line in {IGNORE_FILE})"
        )


def pack_only(plugin_dir: Path, version: str | None, output: Path | None, out: Output) -> Outcome:
    """`--skip-upload`: check and pack, keep the file, contact nobody."""
    manifest = load_checked_manifest(plugin_dir, version, for_publish=False)
    dest = output if output is not None else Path.cwd() / package_name(manifest)
    package = pack_plugin(plugin_dir, manifest, dest, out)
    return Outcome(
        manifest.id,
        manifest.version,
        PACKED,
        f"packed {len(package.members)} files",
        distribution="tarball",
        sha256=package.sha256,
        size=package.size,
        path=str(package.path),
    )


def print_outcome(out: Output, outcome: Outcome) -> None:
    title = f"{outcome.plugin_key} {outcome.version}"
    if outcome.status == PACKED:
        out.out.print(f"Packed {title}: {outcome.path}", markup=False)
        out.out.print(f"size    {format_size(outcome.size or 0)}", markup=False)
        out.out.print(f"sha256  {outcome.sha256}", markup=False)
        return
    labels = {
        PUBLISHED: "Submitted for review" if outcome.group == "developer" else "Published",
        SKIPPED: "Up to date" if outcome.detail.startswith(IDENTICAL) else "Skipped",
        PLANNED: "Dry run",
    }
    # The actions were printed on stderr as they happened.
    label = labels.get(outcome.status, outcome.status)
    out.out.print(f"{label}: {title}: {outcome.detail}", markup=False)
    if outcome.status == PLANNED and outcome.distribution != "config_only":
        print_files(out, outcome.files)


def print_files(out: Output, files: list[tuple[str, int]]) -> None:
    """Every file the package would hold with its size, then the total."""
    width = max((len(format_size(size)) for _name, size in files), default=0)
    for name, size in files:
        out.out.print(f"  {format_size(size):>{width}}  {name}", markup=False)
    total = sum(size for _name, size in files)
    noun = "file" if len(files) == 1 else "files"
    out.out.print(f"  {len(files)} {noun}, {format_size(total)} ({total} bytes)", markup=False)


def open_publisher(api: ApiClient, out: Output, options: PublishOptions) -> Publisher:
    """The group the token publishes through, with the service's categories and limits
    (`--org`: the developer group, whatever the role)."""
    group = open_group(api, developer=options.org is not None)
    return Publisher(group, group.categories(), out, options, fetch_limits(api))


def local_problems(plugin_dir: Path, version: str | None) -> ManifestInvalid | None:
    """The manifest's problems found without the service (the category needs its list)."""
    try:
        load_checked_manifest(plugin_dir, version)
    except ManifestInvalid as exc:
        return exc
    return None


SkipExistingOption = Annotated[
    bool,
    typer.Option(
        "--skip-existing",
        help="When the version exists with different content, skip it (reported) instead "
        "of failing. An identical existing version is never an error.",
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Check everything and say what would be done (with every file and its size); "
        "change nothing.",
    ),
]

PluginDirArgument = Annotated[
    Path,
    typer.Argument(
        exists=True,
        file_okay=False,
        dir_okay=True,
        resolve_path=True,
        help="Plugin folder containing manifest.json.",
    ),
]


def publish_command(
    ctx: typer.Context,
    plugin_dir: PluginDirArgument,
    backend: BackendOption = None,
    token: TokenOption = None,
    version: Annotated[
        str | None,
        typer.Option(
            "--version", help="Publish as this version (rewrites manifest.json in the package)."
        ),
    ] = None,
    changelog: Annotated[str | None, typer.Option("--changelog", help="Version changelog.")] = None,
    skip_upload: Annotated[
        bool, typer.Option("--skip-upload", help="Only pack: print the package path and SHA256.")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="With --skip-upload: where to write the package."),
    ] = None,
    direct: Annotated[
        bool,
        typer.Option("--direct", help="Create the version with inline code, no package upload."),
    ] = False,
    allow_recreate: Annotated[
        bool,
        typer.Option(
            "--allow-recreate",
            help="Admin: when the remote plugin has another type, delete and recreate it.",
        ),
    ] = False,
    dry_run: DryRunOption = False,
    skip_existing: SkipExistingOption = False,
    org: Annotated[
        str | None,
        typer.Option(
            "--org",
            metavar="SLUG",
            help="Publish a new plugin into this organization (you must be a member); "
            "its members may then operate it.",
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Check, pack and publish one plugin folder."""
    out = Output(json_mode=json_output)
    runtime = get_runtime(ctx)
    with reporting_errors(out):
        if skip_upload:
            outcome = pack_only(plugin_dir, version, output, out)
        else:
            # The category is judged against the service's list, with every other problem;
            # when the service cannot be asked, the problems found locally are still told.
            problems = local_problems(plugin_dir, version)
            credentials = resolve_credentials(backend, token)
            if problems is not None and not credentials.token:
                raise problems
            credentials.require_token()
            options = PublishOptions(
                version, changelog, direct, dry_run, allow_recreate, skip_existing, org
            )
            with runtime.client(credentials.backend, credentials.token) as api:
                try:
                    publisher = open_publisher(api, out, options)
                except ApiError:
                    if problems is not None:
                        raise problems from None
                    raise
                outcome = publisher.publish(plugin_dir)
    out.result(outcome.to_json(), lambda: print_outcome(out, outcome))


def register(app: typer.Typer) -> None:
    app.command("publish")(publish_command)
