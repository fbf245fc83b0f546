"""`marketplace status [PLUGIN_KEY]`: the caller's plugins as the developer group sees them.

Each plugin's review status and reviewer's note, its current version, and its versions with
their own status, note and rollout: the version representation's `rollout` (CONTRACT 16),
shown as `full`, `10% rolling` or `halted at 30%: REASON`; `-` for a version without one (a
service older than staged rollout).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from marketplace_client.api import ApiClient, expect_list, expect_object
from marketplace_client.config import resolve_credentials
from marketplace_client.context import get_runtime
from marketplace_client.errors import CliError
from marketplace_client.lifecycle import checked_key
from marketplace_client.next_steps import Subject
from marketplace_client.options import BackendOption, JsonOption, TokenOption
from marketplace_client.output import Output, reporting_errors
from marketplace_client.review_view import columns

DEVELOPER = "/api/v1/developer/plugins"
API_PAGE = 100  # the most the developer list gives a page
MAX_API_PAGES = 20
NOTE_WIDTH = 60  # a note is cut here in the table; `status KEY` prints it whole


def rollout_text(rollout: Any) -> str:
    """CONTRACT 16's `{percent, state, haltedReason}`; `-` when the service sends none."""
    if not isinstance(rollout, dict):
        return "-"
    state, percent = rollout.get("state"), rollout.get("percent")
    if state == "halted":
        reason = rollout.get("haltedReason")
        return f"halted at {percent}%" + (f": {reason}" if reason else "")
    if state == "full":
        return "full"
    return f"{percent}% {state}"


def version_json(version: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": version.get("version"),
        "reviewStatus": version.get("reviewStatus"),
        "reviewNote": version.get("reviewNote"),
        "isLatest": bool(version.get("isLatest")),
        "createdAt": version.get("createdAt"),
        "rollout": version.get("rollout"),
    }


def plugin_json(detail: dict[str, Any]) -> dict[str, Any]:
    versions = [v for v in detail.get("versions") or [] if isinstance(v, dict)]
    return {
        "pluginKey": detail.get("pluginKey"),
        "name": detail.get("name"),
        "reviewStatus": detail.get("reviewStatus"),
        "reviewNote": detail.get("reviewNote"),
        "listed": detail.get("reviewStatus") == "approved" and bool(detail.get("enabled")),
        # CONTRACT 17: the organization it belongs to, or None for a personal plugin.
        "org": org.get("slug") if isinstance(org := detail.get("org"), dict) else None,
        "latestVersion": detail.get("latestVersion"),
        "versions": [version_json(v) for v in versions],  # newest first, as the service sends
    }


def own_plugins(api: ApiClient) -> list[dict[str, Any]]:
    """Every plugin of the caller (all pages), each with its versions."""
    found: list[dict[str, Any]] = []
    for page in range(1, MAX_API_PAGES + 1):
        data = expect_object(
            api.get(DEVELOPER, params={"page": page, "pageSize": API_PAGE}), "plugins"
        )
        items = [i for i in expect_list(data.get("items"), "plugins items") if isinstance(i, dict)]
        found += items
        if len(items) < API_PAGE or len(found) >= int(data.get("total") or 0):
            break
    else:
        raise CliError(
            "TOO_MANY_PLUGINS",
            f"more than {MAX_API_PAGES * API_PAGE} plugins: name one (marketplace status "
            "PLUGIN_KEY)",
        )
    return [plugin_detail(api, str(item.get("id"))) for item in found]


def plugin_detail(api: ApiClient, plugin: str) -> dict[str, Any]:
    return plugin_json(expect_object(api.get(f"{DEVELOPER}/{plugin}"), "plugin"))


def _one_line(text: Any, width: int | None = None) -> str:
    flat = " ".join(str(text or "").split()) or "-"
    if width is not None and len(flat) > width:
        return flat[: width - 1] + "…"
    return flat


def _newest(plugin: dict[str, Any]) -> dict[str, Any] | None:
    versions: list[dict[str, Any]] = plugin["versions"]
    return versions[0] if versions else None


def list_lines(plugins: list[dict[str, Any]]) -> list[str]:
    rows = [["PLUGIN", "STATUS", "LISTED", "CURRENT", "NEWEST VERSION", "ROLLOUT", "NOTE"]]
    for plugin in plugins:
        newest = _newest(plugin)
        note = (newest or {}).get("reviewNote") or plugin["reviewNote"]
        rows.append(
            [
                str(plugin["pluginKey"]),
                str(plugin["reviewStatus"]),
                "yes" if plugin["listed"] else "no",
                str(plugin["latestVersion"] or "-"),
                f"{newest['version']} ({newest['reviewStatus']})" if newest else "none",
                rollout_text((newest or {}).get("rollout")),
                _one_line(note, NOTE_WIDTH),
            ]
        )
    return columns(rows)


def detail_lines(plugin: dict[str, Any]) -> list[str]:
    listed = "listed" if plugin["listed"] else "not listed"
    current = plugin["latestVersion"]
    lines = [
        f"{plugin['pluginKey']} ({plugin['name']}): {plugin['reviewStatus']}, {listed}, "
        + (f"current version {current}" if current else "no current version"),
        f"Reviewer's note: {_one_line(plugin['reviewNote'])}",
    ]
    if plugin["org"]:
        lines.insert(1, f"Organization: {plugin['org']}")
    if not plugin["versions"]:
        return [*lines, "Versions: none yet (marketplace publish DIR sends one)"]
    rows = [["VERSION", "STATUS", "CURRENT", "ROLLOUT", "CREATED", "NOTE"]]
    for version in plugin["versions"]:
        rows.append(
            [
                str(version["version"]),
                str(version["reviewStatus"]),
                "yes" if version["isLatest"] else "",
                rollout_text(version["rollout"]),
                str(version["createdAt"] or "")[:16].replace("T", " "),
                _one_line(version["reviewNote"]),
            ]
        )
    return lines + columns(rows)


def status_command(
    ctx: typer.Context,
    plugin_key: Annotated[
        str | None,
        typer.Argument(
            help="One of your plugins, with every version (none: all your plugins).",
            metavar="PLUGIN_KEY",
            show_default=False,
        ),
    ] = None,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Your plugins: review status, reviewer's note, versions and rollout."""
    subject = Subject(
        plugin_key=plugin_key, find_hint="`marketplace status` lists the plugins of this login"
    )
    out = Output(json_mode=json_output, subject=subject)
    with reporting_errors(out):
        credentials = resolve_credentials(backend, token)
        credentials.require_token()
        with get_runtime(ctx).client(credentials.backend, credentials.token) as api:
            if plugin_key is not None:
                plugins = [plugin_detail(api, checked_key(plugin_key))]
            else:
                plugins = own_plugins(api)
    data = {"backend": credentials.backend, "items": plugins}

    def human() -> None:
        if plugin_key is not None:
            lines = detail_lines(plugins[0])
        elif not plugins:
            lines = [
                f"No plugins of yours on {credentials.backend} yet; marketplace publish DIR "
                "sends one."
            ]
        else:
            lines = list_lines(plugins)
        for line in lines:
            out.out.print(line, markup=False)
        if plugin_key is None and plugins:
            out.err.print("Every version of one: marketplace status PLUGIN_KEY", markup=False)

    out.result(data, human)


def register(app: typer.Typer) -> None:
    app.command("status")(status_command)
