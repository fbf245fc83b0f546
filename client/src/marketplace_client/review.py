"""`marketplace review`: the review queue from a terminal, for ADMIN and SUPER_ADMIN.

list (new plugins, plugin and scenario versions, developer identities waiting, oldest
first), show, diff (against the last approved version), approve and reject a version,
approve-plugin and reject-plugin for a new plugin, approve-identity and reject-identity for
a developer. A version id is looked up among plugin versions, then scenario versions,
unless `--kind` says which.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

import typer

from marketplace_client.api import ApiClient, ApiError, expect_list, expect_object
from marketplace_client.config import resolve_credentials
from marketplace_client.context import get_runtime
from marketplace_client.errors import CliError
from marketplace_client.next_steps import ADMIN_ROLE, Subject
from marketplace_client.options import BackendOption, JsonOption, TokenOption
from marketplace_client.output import Output, reporting_errors
from marketplace_client.review_view import (
    QueueRow,
    diff_lines,
    parse_time,
    queue_lines,
    utcnow,
    version_lines,
)

app = typer.Typer(
    name="review",
    help="Review plugins and scenarios (ADMIN and SUPER_ADMIN).",
    no_args_is_help=True,
)

ADMIN = "/api/v1/admin"
# The service pages admin lists by at most 100; the queue is read whole (up to this many
# pages per list) so that "oldest first" holds across the lists.
API_PAGE = 100
MAX_API_PAGES = 20
PAGE_SIZE = 50
NOTE_REQUIRED_EXIT = 2  # a usage error, as for any missing required option
_NEVER = datetime.min.replace(tzinfo=UTC)  # sorts an unreadable time first


class Kind(StrEnum):
    plugins = "plugins"
    scenarios = "scenarios"


class ListKind(StrEnum):
    plugins = "plugins"
    scenarios = "scenarios"
    identities = "identities"
    all = "all"


@dataclass(frozen=True)
class KindInfo:
    word: str
    parent: str  # the version field naming its item
    not_found: str  # the code of the kind's 404 for a version id

    def versions(self, kind: Kind) -> str:
        return f"{ADMIN}/{kind.value}/versions"


KINDS = {
    Kind.plugins: KindInfo("plugin", "pluginId", "PLUGIN_VERSION_NOT_FOUND"),
    Kind.scenarios: KindInfo("scenario", "scenarioId", "SCENARIO_NOT_FOUND"),
}

KindOption = Annotated[
    Kind | None,
    typer.Option(
        "--kind",
        case_sensitive=False,
        help="plugins or scenarios (default: tried in that order).",
    ),
]
NoteOption = Annotated[
    str | None, typer.Option("--note", help="Review note (the developer reads it).")
]


# --------------------------------------------------------------------------- the service


def _pages(api: ApiClient, path: str, params: dict[str, str | int]) -> Iterator[dict[str, Any]]:
    """Every item of an admin list, page by page; CliError when it is longer than we read."""
    for page in range(1, MAX_API_PAGES + 1):
        query = {**params, "page": page, "limit": API_PAGE}
        data = expect_object(api.get(path, params=query), path)
        items = expect_list(data.get("items"), path)
        yield from (expect_object(item, path) for item in items)
        if len(items) < API_PAGE or page * API_PAGE >= int(data.get("total") or 0):
            return
    raise CliError(
        "QUEUE_TOO_LONG",
        f"{path} has more than {MAX_API_PAGES * API_PAGE} entries; narrow it with --search",
    )


def _queue(api: ApiClient, kind: ListKind, search: str | None) -> list[QueueRow]:
    params: dict[str, str | int] = {"search": search} if search else {}
    rows: list[QueueRow] = []
    if kind in (ListKind.plugins, ListKind.all):
        for p in _pages(api, f"{ADMIN}/plugins", {**params, "reviewStatus": "pending"}):
            rows.append(
                QueueRow(
                    type="plugin",
                    id=p["id"],
                    key=p["pluginKey"],
                    name=p.get("name") or "",
                    version=None,
                    created_at=p["createdAt"],
                    parent_id=p["id"],
                    owner_id=p.get("ownerId"),
                    findings=None,
                )
            )
        for v in _pages(api, f"{ADMIN}/plugins/versions/pending", params):
            rows.append(_version_row("plugin-version", v, v["pluginId"], v["pluginKey"]))
    if kind in (ListKind.scenarios, ListKind.all):
        for v in _pages(api, f"{ADMIN}/scenarios/versions/pending", params):
            rows.append(_version_row("scenario-version", v, v["scenarioId"], v["scenarioId"]))
    if kind in (ListKind.identities, ListKind.all):
        for d in _pages(api, f"{ADMIN}/developers", {**params, "identityStatus": "pending"}):
            if d.get("identityStatus") != "pending":
                continue  # a service that ignored the filter: only pending ones wait
            rows.append(
                QueueRow(
                    type="identity",
                    id=d["id"],
                    key=d.get("email") or "",
                    name=d.get("realName") or d.get("displayName") or d.get("name") or "",
                    version=None,
                    # Waiting since the identity was submitted, not since the account began.
                    created_at=d.get("submittedAt") or d.get("createdAt") or "",
                    parent_id=d["id"],
                    owner_id=d["id"],
                    findings=None,
                )
            )
    rows.sort(key=lambda row: (parse_time(row.created_at) or _NEVER, row.id))
    return rows


def _version_row(type_: str, version: dict[str, Any], parent_id: str, key: str) -> QueueRow:
    return QueueRow(
        type=type_,
        id=version["id"],
        key=key,
        name=version.get("pluginName") or version.get("scenarioName") or version.get("name") or "",
        version=version["version"],
        created_at=version["createdAt"],
        parent_id=parent_id,
        owner_id=None,
        findings=_findings(version),
    )


def _findings(version: dict[str, Any]) -> int:
    # Versions carry `findings` (CONTRACT 12) once the service has them; none until then.
    return len(version.get("findings") or [])


def _item(api: ApiClient, kind: Kind, item_id: str) -> dict[str, Any] | None:
    """The admin view of a plugin or scenario; None when it is gone (deleted meanwhile)."""
    try:
        return expect_object(api.get(f"{ADMIN}/{kind.value}/{item_id}"), "item")
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


def _owner_of(api: ApiClient, kind: Kind, item_id: str) -> str | None:
    owner = (_item(api, kind, item_id) or {}).get("ownerId")
    return owner if isinstance(owner, str) else None


def _developer_names(api: ApiClient, owner_ids: Iterable[str]) -> dict[str, str]:
    """Developer display names by user id, from the admin developer list (read only as far
    as needed); ids not found there (an administrator's own items) stay unnamed."""
    wanted = set(owner_ids)
    names: dict[str, str] = {}
    if not wanted:
        return names
    for page in range(1, MAX_API_PAGES + 1):
        data = expect_object(
            api.get(f"{ADMIN}/developers", params={"page": page, "limit": API_PAGE}), "developers"
        )
        items = expect_list(data.get("items"), "developers")
        for developer in items:
            if isinstance(developer, dict) and developer.get("id") in wanted:
                label = developer.get("displayName") or developer.get("name")
                names[developer["id"]] = str(label or developer.get("email") or developer["id"])
        if wanted <= names.keys() or len(items) < API_PAGE:
            break
    return names


def _developers(api: ApiClient, rows: list[QueueRow]) -> dict[str, dict[str, str]]:
    """The developer of each row, by row id: `{id, name}`."""
    owners: dict[str, str] = {}
    parents: dict[tuple[Kind, str], str | None] = {}
    for row in rows:
        owner = row.owner_id
        if owner is None:
            kind = Kind.scenarios if row.type == "scenario-version" else Kind.plugins
            if (kind, row.parent_id) not in parents:
                parents[kind, row.parent_id] = _owner_of(api, kind, row.parent_id)
            owner = parents[kind, row.parent_id]
        if owner is not None:
            owners[row.id] = owner
    names = _developer_names(api, owners.values())
    return {rid: {"id": owner, "name": names.get(owner, owner)} for rid, owner in owners.items()}


def _find_version(
    api: ApiClient, version_id: str, kind: Kind | None, suffix: str = ""
) -> tuple[Kind, dict[str, Any]]:
    """GET .../versions/{id}{suffix} of the given kind, or of the first kind that has it."""
    kinds = [kind] if kind else list(Kind)
    for candidate in kinds:
        info = KINDS[candidate]
        try:
            data = api.get(f"{info.versions(candidate)}/{version_id}{suffix}")
        except ApiError as exc:
            if exc.status == 404 and exc.code == info.not_found and len(kinds) > 1:
                continue
            raise
        return candidate, expect_object(data, "version")
    raise ApiError(404, "VERSION_NOT_FOUND", f"No plugin or scenario version has id {version_id}")


def _output(json_output: bool, plugin_id: str | None = None) -> Output:
    """Every review call needs an administrator: a refusal says so (`next_steps`)."""
    subject = Subject(
        plugin_key=plugin_id,
        required_role=ADMIN_ROLE,
        find_hint="`marketplace review list` shows the plugins waiting for review",
    )
    return Output(json_mode=json_output, subject=subject)


def _require_note(note: str | None, out: Output, what: str) -> str:
    if note is None or not note.strip():
        out.error(CliError("NOTE_REQUIRED", f'{what} needs a note: add --note "why"'))
        raise typer.Exit(NOTE_REQUIRED_EXIT)
    return note


def _run(
    ctx: typer.Context,
    out: Output,
    backend: str | None,
    token: str | None,
    work: Callable[[ApiClient], tuple[dict[str, Any], Callable[[], None]]],
) -> None:
    """Call the service with the stored or given admin token; print the result or the error."""
    runtime = get_runtime(ctx)
    with reporting_errors(out):
        credentials = resolve_credentials(backend, token)
        credentials.require_token()
        with runtime.client(credentials.backend, credentials.token) as api:
            data, human = work(api)
    out.result(data, human)


def _print(out: Output, lines: Iterable[str]) -> None:
    for line in lines:
        out.out.print(line, markup=False)


# ----------------------------------------------------------------------------- commands


@app.command("list")
def list_command(
    ctx: typer.Context,
    kind: Annotated[
        ListKind,
        typer.Option("--kind", case_sensitive=False, help="plugins, scenarios, identities or all."),
    ] = ListKind.all,
    search: Annotated[
        str | None, typer.Option("--search", help="Only items whose key or name contains S.")
    ] = None,
    page: Annotated[int, typer.Option("--page", min=1, help=f"Page of {PAGE_SIZE}.")] = 1,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """What waits for review, oldest first: new plugins, plugin versions, scenario versions,
    developer identities."""
    out = _output(json_output)

    def work(api: ApiClient) -> tuple[dict[str, Any], Callable[[], None]]:
        rows = _queue(api, kind, search)
        shown = rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        developers = _developers(api, shown)
        now = utcnow()
        items = [row.to_json(now, developers.get(row.id)) for row in shown]
        data = {"items": items, "total": len(rows), "page": page, "pageSize": PAGE_SIZE}

        def human() -> None:
            last = max(1, -(-len(rows) // PAGE_SIZE))
            if not rows:
                out.out.print("Nothing waits for review.", markup=False)
                return
            if not items:
                out.out.print(f"Page {page} is past the end ({last} pages).", markup=False)
                return
            _print(out, queue_lines(items))
            out.err.print(
                f"{len(rows)} waiting; page {page} of {last}. A version: marketplace review "
                "approve|reject ID; a new plugin: marketplace review approve-plugin ID; "
                "an identity: marketplace review approve-identity ID",
                markup=False,
            )

        return data, human

    _run(ctx, out, backend, token, work)


@app.command("show")
def show_command(
    ctx: typer.Context,
    version_id: Annotated[str, typer.Argument(help="The version's id.")],
    kind: KindOption = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """A version: its item, developer, state, findings and manifest or metadata."""
    out = _output(json_output)

    def work(api: ApiClient) -> tuple[dict[str, Any], Callable[[], None]]:
        found, version = _find_version(api, version_id, kind)
        info = KINDS[found]
        item = _item(api, found, str(version.get(info.parent))) or {}
        owner = item.get("ownerId")
        names = _developer_names(api, [owner] if isinstance(owner, str) else [])
        developer = {"id": owner, "name": names.get(owner, owner)} if owner else None
        summary = {k: item.get(k) for k in ("id", "pluginKey", "name", "reviewStatus") if k in item}
        data = {"kind": found.value, "version": version, "item": summary, "developer": developer}
        label = developer["name"] if developer else None
        return data, lambda: _print(out, version_lines(info.word, version, item, label, utcnow()))

    _run(ctx, out, backend, token, work)


@app.command("diff")
def diff_command(
    ctx: typer.Context,
    version_id: Annotated[str, typer.Argument(help="The version's id.")],
    kind: KindOption = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """What a version changes against the last approved version of its item."""
    out = _output(json_output)

    def work(api: ApiClient) -> tuple[dict[str, Any], Callable[[], None]]:
        found, diff = _find_version(api, version_id, kind, suffix="/diff")
        data = {"kind": found.value, "versionId": version_id, "diff": diff}
        return data, lambda: _print(out, diff_lines(diff))

    _run(ctx, out, backend, token, work)


def _decide(
    ctx: typer.Context,
    out: Output,
    version_id: str,
    kind: Kind | None,
    *,
    approved: bool,
    note: str | None,
    backend: str | None,
    token: str | None,
) -> None:
    def work(api: ApiClient) -> tuple[dict[str, Any], Callable[[], None]]:
        found, _ = _find_version(api, version_id, kind)
        body: dict[str, Any] = {"approved": approved}
        if note is not None:
            body["reviewNote"] = note
        path = f"{KINDS[found].versions(found)}/{version_id}/review"
        version = expect_object(api.post(path, json=body), "review")
        info = KINDS[found]
        parent = str(version.get(info.parent))
        item = _item(api, found, parent) or {}
        key = item.get("pluginKey") or item.get("id") or parent
        verb = "Approved" if approved else "Rejected"
        message = f"{verb} {info.word} version {version.get('version')} of {key}" + (
            " (now current)" if version.get("isLatest") else ""
        )
        data = {"kind": found.value, "version": version}
        return data, lambda: out.out.print(message, markup=False)

    _run(ctx, out, backend, token, work)


@app.command("approve")
def approve_command(
    ctx: typer.Context,
    version_id: Annotated[str, typer.Argument(help="The version's id.")],
    note: NoteOption = None,
    kind: KindOption = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Approve a pending version: it becomes its item's current version."""
    out = _output(json_output)
    _decide(ctx, out, version_id, kind, approved=True, note=note, backend=backend, token=token)


@app.command("reject")
def reject_command(
    ctx: typer.Context,
    version_id: Annotated[str, typer.Argument(help="The version's id.")],
    note: NoteOption = None,
    kind: KindOption = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Reject a pending version; --note is required (it tells the developer why)."""
    out = _output(json_output)
    note = _require_note(note, out, "A rejection")
    _decide(ctx, out, version_id, kind, approved=False, note=note, backend=backend, token=token)


def _review_plugin(
    ctx: typer.Context,
    out: Output,
    plugin_id: str,
    body: dict[str, Any],
    backend: str | None,
    token: str | None,
) -> None:
    def work(api: ApiClient) -> tuple[dict[str, Any], Callable[[], None]]:
        plugin = expect_object(api.post(f"{ADMIN}/plugins/{plugin_id}/review", json=body), "plugin")
        verb = "Approved" if body["approved"] else "Rejected"
        listed = "listed" if plugin.get("enabled") else "not listed"
        latest = plugin.get("latestVersion")
        message = f"{verb} plugin {plugin.get('pluginKey')}: {plugin.get('reviewStatus')}, {listed}"
        message += f", current version {latest}" if latest else ", no current version"
        return {"plugin": plugin}, lambda: out.out.print(message, markup=False)

    _run(ctx, out, backend, token, work)


@app.command("approve-plugin")
def approve_plugin_command(
    ctx: typer.Context,
    plugin_id: Annotated[str, typer.Argument(help="The plugin's id or pluginKey.")],
    approve_pending_version: Annotated[
        bool | None,
        typer.Option(
            "--approve-pending-version/--no-approve-pending-version",
            help="Also release the newest pending version when none is approved yet "
            "(the service does unless told not to).",
            show_default=False,
        ),
    ] = None,
    note: NoteOption = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Approve a plugin: it is listed; a first publication's pending version is released."""
    out = _output(json_output, plugin_id)
    body: dict[str, Any] = {"approved": True}
    if note is not None:
        body["reviewNote"] = note
    if approve_pending_version is not None:
        body["approvePendingVersion"] = approve_pending_version
    _review_plugin(ctx, out, plugin_id, body, backend, token)


@app.command("reject-plugin")
def reject_plugin_command(
    ctx: typer.Context,
    plugin_id: Annotated[str, typer.Argument(help="The plugin's id or pluginKey.")],
    note: NoteOption = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Reject a plugin (it is not listed); --note is required."""
    out = _output(json_output, plugin_id)
    note = _require_note(note, out, "A rejection")
    _review_plugin(ctx, out, plugin_id, {"approved": False, "reviewNote": note}, backend, token)


def _review_identity(
    ctx: typer.Context,
    out: Output,
    user_id: str,
    body: dict[str, Any],
    backend: str | None,
    token: str | None,
) -> None:
    def work(api: ApiClient) -> tuple[dict[str, Any], Callable[[], None]]:
        path = f"{ADMIN}/developers/{user_id}/identity/review"
        identity = expect_object(api.post(path, json=body), "identity")
        message = f"Identity of developer {user_id}: {identity.get('status')}"
        return {"identity": identity}, lambda: out.out.print(message, markup=False)

    _run(ctx, out, backend, token, work)


@app.command("approve-identity")
def approve_identity_command(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="The developer's user id.")],
    note: NoteOption = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Verify a developer's identity: their plugins can then be published."""
    out = _output(json_output)
    body: dict[str, Any] = {"approved": True}
    if note is not None:
        body["reviewNote"] = note
    _review_identity(ctx, out, user_id, body, backend, token)


@app.command("reject-identity")
def reject_identity_command(
    ctx: typer.Context,
    user_id: Annotated[str, typer.Argument(help="The developer's user id.")],
    note: NoteOption = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Reject (or revoke) a developer's identity; --note is required."""
    out = _output(json_output)
    note = _require_note(note, out, "A rejection")
    _review_identity(ctx, out, user_id, {"approved": False, "reviewNote": note}, backend, token)


def register(root: typer.Typer) -> None:
    root.add_typer(app)
