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

from marketplace.cli.api import ApiError
from marketplace.cli.config import resolve_credentials
from marketplace.cli.context import get_runtime
from marketplace.cli.errors import CliError
from marketplace.cli.groups import PluginGroup, RemotePlugin, open_group
from marketplace.cli.manifest_check import (
    PluginManifest,
    load_checked_manifest,
    manifest_bytes,
    safe_relative,
)
from marketplace.cli.options import BackendOption, JsonOption, TokenOption
from marketplace.cli.output import Output, reporting_errors
from marketplace.cli.pack import PackResult, collect, pack, total_size
from marketplace.rules.limits import KIB, MIB

VERSION_EXISTS = "PLUGIN_VERSION_EXISTS"
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
        }


@dataclass(frozen=True)
class PublishOptions:
    version: str | None = None
    changelog: str | None = None
    direct: bool = False
    dry_run: bool = False
    recreate_on_type_change: bool = False


def package_name(manifest: PluginManifest) -> str:
    return f"{manifest.id}-{manifest.version}.tar.gz"


def pack_plugin(plugin_dir: Path, manifest: PluginManifest, dest: Path, out: Output) -> PackResult:
    """Pack the folder; the packaged manifest.json is rewritten when --version changed it."""
    entries = collect(plugin_dir)
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


def format_size(size: int) -> str:
    if size < KIB:
        return f"{size} B"
    if size < MIB:
        return f"{size / KIB:.1f} KiB"
    return f"{size / MIB:.1f} MiB"


class Publisher:
    """Publishes plugin folders through one group with one set of options."""

    def __init__(
        self,
        group: PluginGroup,
        categories: Iterable[str],
        out: Output,
        options: PublishOptions,
    ) -> None:
        self.group = group
        self.categories = sorted(set(categories))
        self.out = out
        self.options = options

    def publish(self, plugin_dir: Path, manifest: PluginManifest | None = None) -> Outcome:
        """Publish one folder; `manifest` when the caller already checked it."""
        if manifest is None:
            manifest = load_checked_manifest(plugin_dir, self.options.version)
        self._check_category(manifest)
        outcome = Outcome(manifest.id, manifest.version, group=self.group.name)
        remote = self.group.find(manifest.id)
        if self.options.dry_run:
            return self._plan(plugin_dir, manifest, remote, outcome)
        plugin_id = self._ensure_record(manifest, remote, outcome)
        outcome.plugin_id = plugin_id
        self._release(plugin_dir, manifest, plugin_id, outcome)
        if manifest.local_icon is not None:
            self.group.upload_icon(plugin_id, plugin_dir / manifest.local_icon)
            self._did(outcome, f"uploaded icon {manifest.local_icon}")
        return outcome

    def _did(self, outcome: Outcome, action: str) -> None:
        outcome.actions.append(action)
        self.out.step(f"{outcome.plugin_key}: {action}")

    def _check_category(self, manifest: PluginManifest) -> None:
        if manifest.category not in self.categories:
            raise CliError(
                "PLUGIN_INVALID_CATEGORY",
                f'Invalid category "{manifest.category}" '
                f"(the service knows: {', '.join(self.categories) or 'none'})",
                details={"category": manifest.category, "allowed": self.categories},
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
        if not self.options.recreate_on_type_change:
            raise CliError(
                "PLUGIN_TYPE_CHANGED",
                f"{change}: a plugin's type cannot change in place; "
                "pass --allow-recreate to delete and recreate it",
            )
        return change

    def _ensure_record(
        self, manifest: PluginManifest, remote: RemotePlugin | None, outcome: Outcome
    ) -> str:
        if remote is None:
            created = self.group.create(manifest)
            self._did(outcome, f"created plugin ({self.group.name} group)")
            return created.id
        change = self._type_change(manifest, remote)
        if change is not None:
            self.group.delete(remote.id)
            created = self.group.create(manifest)
            self._did(outcome, f"deleted and recreated plugin ({change})")
            return created.id
        self.group.update(remote.id, manifest)
        self._did(outcome, "updated plugin")
        return remote.id

    def _release(
        self, plugin_dir: Path, manifest: PluginManifest, plugin_id: str, outcome: Outcome
    ) -> None:
        try:
            outcome.distribution = self._create_version(plugin_dir, manifest, plugin_id, outcome)
        except ApiError as exc:
            if exc.code != VERSION_EXISTS:
                raise
            outcome.status = SKIPPED
            outcome.detail = f"version {manifest.version} already exists (up to date)"
            self.out.step(f"{manifest.id}: {outcome.detail}")
            return
        outcome.status = PUBLISHED
        outcome.detail = f"version {manifest.version} ({outcome.distribution})"
        if self.group.reviewed:
            outcome.detail += ", waiting for review"

    def _create_version(
        self, plugin_dir: Path, manifest: PluginManifest, plugin_id: str, outcome: Outcome
    ) -> str:
        if manifest.config_only:
            created = self.group.create_version(
                plugin_id, manifest.version, self.options.changelog, manifest.raw
            )
            refuse_rejected(created, manifest.version)
            self._did(outcome, f"created configuration-only version {manifest.version}")
            return "config_only"
        if self.options.direct:
            return self._create_inline(plugin_dir, manifest, plugin_id, outcome)
        return self._upload_package(plugin_dir, manifest, plugin_id, outcome)

    def _create_inline(
        self, plugin_dir: Path, manifest: PluginManifest, plugin_id: str, outcome: Outcome
    ) -> str:
        body = inline_manifest(plugin_dir, manifest)
        created = self.group.create_version(
            plugin_id, manifest.version, self.options.changelog, body
        )
        refuse_rejected(created, manifest.version)
        self._did(outcome, f"created inline-code version {manifest.version}")
        return "inline"

    def _upload_package(
        self, plugin_dir: Path, manifest: PluginManifest, plugin_id: str, outcome: Outcome
    ) -> str:
        with tempfile.TemporaryDirectory(prefix="marketplace-publish-") as temp:
            dest = Path(temp) / package_name(manifest)
            package = pack_plugin(plugin_dir, manifest, dest, self.out)
            outcome.sha256, outcome.size = package.sha256, package.size
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
        self._did(outcome, "package upload failed; falling back to inline code")
        return self._create_inline(plugin_dir, manifest, plugin_id, outcome)

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
        plugin_dir: Path,
        manifest: PluginManifest,
        remote: RemotePlugin | None,
        outcome: Outcome,
    ) -> Outcome:
        outcome.status = PLANNED
        existing: tuple[str, ...] = ()
        if remote is None:
            self._did(outcome, f"would create plugin ({self.group.name} group)")
        elif (change := self._type_change(manifest, remote)) is not None:
            self._did(outcome, f"would delete and recreate plugin ({change})")
        else:
            outcome.plugin_id = remote.id
            existing = self.group.remote_versions(remote)
            self._did(outcome, "would update plugin")
        if manifest.version in existing:
            outcome.status = SKIPPED
            outcome.detail = f"version {manifest.version} already exists (up to date)"
        else:
            outcome.distribution = self._plan_version(plugin_dir, manifest, outcome)
            outcome.detail = f"would publish {manifest.version} ({outcome.distribution})"
        if manifest.local_icon is not None:
            self._did(outcome, f"would upload icon {manifest.local_icon}")
        return outcome

    def _plan_version(self, plugin_dir: Path, manifest: PluginManifest, outcome: Outcome) -> str:
        if manifest.config_only:
            self._did(outcome, "would create a configuration-only version")
            return "config_only"
        if self.options.direct:
            inline_manifest(plugin_dir, manifest)  # proves the code can be read
            self._did(outcome, "would create an inline-code version")
            return "inline"
        with tempfile.TemporaryDirectory(prefix="marketplace-dry-run-") as temp:
            package = pack_plugin(
                plugin_dir, manifest, Path(temp) / package_name(manifest), self.out
            )
        outcome.sha256, outcome.size = package.sha256, package.size
        self._did(outcome, f"would upload package ({format_size(package.size)})")
        return "tarball"


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
        SKIPPED: "Up to date",
        PLANNED: "Dry run",
    }
    # The actions were printed on stderr as they happened.
    label = labels.get(outcome.status, outcome.status)
    out.out.print(f"{label}: {title}: {outcome.detail}", markup=False)


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
    json_output: JsonOption = False,
) -> None:
    """Check, pack and publish one plugin folder."""
    out = Output(json_mode=json_output)
    runtime = get_runtime(ctx)
    with reporting_errors(out):
        if skip_upload:
            outcome = pack_only(plugin_dir, version, output, out)
        else:
            # Local checks first: a broken manifest is reported without any request.
            manifest = load_checked_manifest(plugin_dir, version)
            credentials = resolve_credentials(backend, token)
            credentials.require_token()
            options = PublishOptions(version, changelog, direct, False, allow_recreate)
            with runtime.client(credentials.backend, credentials.token) as api:
                group = open_group(api)
                publisher = Publisher(group, group.categories(), out, options)
                outcome = publisher.publish(plugin_dir, manifest)
    out.result(outcome.to_json(), lambda: print_outcome(out, outcome))


def register(app: typer.Typer) -> None:
    app.command("publish")(publish_command)
