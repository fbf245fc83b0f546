"""`marketplace publish-batch ROOT`: publish every plugin folder under ROOT.

A folder is a plugin folder when it holds a manifest.json. One plugin's failure does not
stop the others; the summary lists each result and the exit status is 1 when any failed.
When a remote plugin's type differs from its manifest, it is deleted and recreated (admin),
never when it belongs to another account: that plugin fails, nothing is deleted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from marketplace_client.config import resolve_credentials
from marketplace_client.context import get_runtime
from marketplace_client.errors import CliError
from marketplace_client.options import BackendOption, JsonOption, TokenOption
from marketplace_client.output import Output, reporting_errors
from marketplace_client.publish import (
    FAILED,
    PLANNED,
    PUBLISHED,
    SKIPPED,
    DryRunOption,
    Outcome,
    Publisher,
    PublishOptions,
    open_publisher,
)
from marketplace_rules.manifest import UnreadableManifest, load_manifest
from marketplace_rules.vocabulary import MANIFEST_NAME

STATUS_STYLES = {PUBLISHED: "green", SKIPPED: "cyan", PLANNED: "blue", FAILED: "red"}


@dataclass(frozen=True)
class Candidate:
    folder: Path
    plugin_key: str
    version: str | None = None  # as declared, for the summary of a failure

    def matches(self, names: set[str]) -> bool:
        return self.plugin_key in names or self.folder.name in names


def _declared(folder: Path) -> Candidate:
    """The manifest id (else the folder name) and version when readable (the manifest is
    checked later)."""
    try:
        document = load_manifest((folder / MANIFEST_NAME).read_bytes())
    except (OSError, UnreadableManifest):
        return Candidate(folder, folder.name)
    key, version = document.get("id"), document.get("version")
    return Candidate(
        folder,
        key if isinstance(key, str) and key else folder.name,
        version if isinstance(version, str) and version else None,
    )


def discover(root: Path) -> list[Candidate]:
    """Every direct subfolder of `root` holding a manifest.json, sorted by name."""
    folders = sorted(
        child for child in root.iterdir() if child.is_dir() and (child / MANIFEST_NAME).is_file()
    )
    return [_declared(folder) for folder in folders]


def parse_names(value: str | None) -> set[str]:
    if not value:
        return set()
    return {name.strip() for name in value.split(",") if name.strip()}


def select(
    candidates: list[Candidate], only: set[str], skip: set[str]
) -> tuple[list[Candidate], list[str]]:
    """The candidates to publish, and the --only names that matched no folder."""
    chosen = [c for c in candidates if (not only or c.matches(only)) and not c.matches(skip)]
    known = {c.plugin_key for c in candidates} | {c.folder.name for c in candidates}
    return chosen, sorted(only - known)


def publish_all(publisher: Publisher, candidates: list[Candidate]) -> list[Outcome]:
    outcomes: list[Outcome] = []
    for candidate in candidates:
        try:
            outcomes.append(publisher.publish(candidate.folder))
        except CliError as exc:
            publisher.out.step(f"{candidate.plugin_key}: failed: {exc.one_line()}")
            outcomes.append(Outcome.failure(candidate.plugin_key, exc, candidate.version))
        except OSError as exc:
            error = CliError("IO_ERROR", str(exc))
            outcomes.append(Outcome.failure(candidate.plugin_key, error, candidate.version))
    return outcomes


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    tally = Counter(outcome.status for outcome in outcomes)
    return {status: tally.get(status, 0) for status in (PUBLISHED, SKIPPED, PLANNED, FAILED)}


def print_summary(out: Output, outcomes: list[Outcome]) -> None:
    table = Table(title="publish-batch summary")
    for column in ("Plugin", "Version", "Result", "Detail"):
        table.add_column(column, overflow="fold")
    for outcome in outcomes:
        style = STATUS_STYLES.get(outcome.status, "")
        table.add_row(
            outcome.plugin_key,
            outcome.version or "-",
            f"[{style}]{outcome.status}[/{style}]" if style else outcome.status,
            outcome.detail,
        )
    out.out.print(table)
    shown = [f"{n} {status}" for status, n in counts(outcomes).items() if n or status == FAILED]
    out.out.print(", ".join(shown), markup=False)


def batch_document(outcomes: list[Outcome]) -> dict[str, Any]:
    tally = counts(outcomes)
    document: dict[str, Any] = {
        "success": tally[FAILED] == 0,
        "data": {"results": [outcome.to_json() for outcome in outcomes], "counts": tally},
    }
    if tally[FAILED]:
        document["error"] = {
            "code": "BATCH_FAILED",
            "message": f"{tally[FAILED]} of {len(outcomes)} plugins failed",
            "details": {},
        }
    return document


# The seed (batch behaviour): a version that already exists is not an error in a batch. It
# is still compared and a changed one is named in the summary; CI that wants it to fail
# passes --no-skip-existing.
BatchSkipExistingOption = Annotated[
    bool,
    typer.Option(
        "--skip-existing/--no-skip-existing",
        help="A version that exists with different content is skipped and named in the "
        "summary (the default: the seed's batch rule), or with --no-skip-existing fails that "
        "plugin. An identical existing version is never an error.",
    ),
]


def publish_batch_command(
    ctx: typer.Context,
    root: Annotated[
        Path,
        typer.Argument(
            exists=True,
            file_okay=False,
            dir_okay=True,
            resolve_path=True,
            help="Folder whose subfolders are plugin folders.",
        ),
    ],
    backend: BackendOption = None,
    token: TokenOption = None,
    only: Annotated[
        str | None,
        typer.Option("--only", help="Only these plugins (ids or folder names, comma separated)."),
    ] = None,
    skip: Annotated[
        str | None, typer.Option("--skip", help="Skip these plugins (comma separated).")
    ] = None,
    dry_run: DryRunOption = False,
    direct: Annotated[
        bool,
        typer.Option("--direct", help="Create versions with inline code, without object storage."),
    ] = False,
    changelog: Annotated[
        str | None, typer.Option("--changelog", help="Changelog for every version.")
    ] = None,
    skip_existing: BatchSkipExistingOption = True,
    json_output: JsonOption = False,
) -> None:
    """Publish every plugin folder under ROOT, then print a summary."""
    out = Output(json_mode=json_output)
    runtime = get_runtime(ctx)
    with reporting_errors(out):
        chosen, unknown = select(discover(root), parse_names(only), parse_names(skip))
        credentials = resolve_credentials(backend, token)
        credentials.require_token()
        options = PublishOptions(
            None, changelog, direct, dry_run, recreate_on_type_change=True,
            skip_existing=skip_existing,
        )  # fmt: skip
        with runtime.client(credentials.backend, credentials.token) as api:
            outcomes = publish_all(open_publisher(api, out, options), chosen)
    missing = CliError("PLUGIN_FOLDER_NOT_FOUND", f"no plugin folder under {root}")
    outcomes += [Outcome.failure(name, missing) for name in unknown]
    if json_output:
        out.emit_json(batch_document(outcomes))
    else:
        print_summary(out, outcomes)
    if any(outcome.status == FAILED for outcome in outcomes):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("publish-batch")(publish_batch_command)
