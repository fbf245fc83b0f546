"""`marketplace search` and `marketplace info`: the public catalogue from a terminal.

Both read the public group (CONTRACT 6) without a token, so they work without a login and
a stale stored login cannot turn them into a 401. `info` adds what inspection found the
plugin's current version does (CONTRACT 13, `GET /api/v1/plugins/capabilities/KEY/latest`)
when the service has that endpoint; until then it says the tools are not inspected yet.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from marketplace_client.api import ApiClient, ApiError, expect_list, expect_object
from marketplace_client.config import resolve_backend
from marketplace_client.context import get_runtime
from marketplace_client.lifecycle import checked_key
from marketplace_client.next_steps import Subject
from marketplace_client.options import BackendOption, JsonOption
from marketplace_client.output import Output, reporting_errors
from marketplace_client.review_view import columns
from marketplace_rules.vocabulary import PLUGIN_TYPES

PUBLIC = "/api/v1/plugins"
PAGE_SIZE = 20
NOT_INSPECTED = "not inspected yet"


class Sort(StrEnum):
    popular = "popular"
    newest = "newest"
    rating = "rating"
    name = "name"
    updated = "updated"


def _plugin_type(value: str | None) -> str | None:
    if value is not None and value not in PLUGIN_TYPES:
        raise typer.BadParameter(f"must be one of {', '.join(PLUGIN_TYPES)}")
    return value


# --- search -------------------------------------------------------------------------------


def rating(plugin: dict[str, Any]) -> str:
    average, count = plugin.get("ratingAverage"), plugin.get("ratingCount") or 0
    if average is None or not count:
        return "-"
    return f"{float(average):.1f} ({count})"


def search_lines(items: list[Any]) -> list[str]:
    rows = [["PLUGIN", "NAME", "VERSION", "RATING", "DOWNLOADS"]]
    for item in items:
        plugin = item if isinstance(item, dict) else {}
        rows.append(
            [
                str(plugin.get("pluginKey")),
                str(plugin.get("name") or ""),
                str(plugin.get("latestVersion") or "-"),
                rating(plugin),
                str(plugin.get("downloadCount", 0)),
            ]
        )
    return columns(rows)


def _criteria(query: str | None, category: str | None, plugin_type: str | None) -> str:
    parts = [f'"{query}"'] if query else []
    parts += [f"category {category}"] if category else []
    parts += [f"type {plugin_type}"] if plugin_type else []
    return " and ".join(parts)


def search_command(
    ctx: typer.Context,
    query: Annotated[
        str | None,
        typer.Argument(
            help="Words to find in the key, names, descriptions and tags (none: every plugin).",
            metavar="QUERY",
            show_default=False,
        ),
    ] = None,
    category: Annotated[
        str | None, typer.Option("--category", help="Only this category (its key).")
    ] = None,
    plugin_type: Annotated[
        str | None,
        typer.Option(
            "--type", callback=_plugin_type, help=f"Only this type: {', '.join(PLUGIN_TYPES)}."
        ),
    ] = None,
    sort: Annotated[
        Sort, typer.Option("--sort", case_sensitive=False, help="Order of the results.")
    ] = Sort.popular,
    page: Annotated[int, typer.Option("--page", min=1, help=f"Page of {PAGE_SIZE}.")] = 1,
    backend: BackendOption = None,
    json_output: JsonOption = False,
) -> None:
    """Find listed plugins: key, name, current version, rating and downloads (no login)."""
    out = Output(json_mode=json_output)
    params: dict[str, str | int] = {"sort": sort.value, "page": page, "pageSize": PAGE_SIZE}
    for name, value in (("q", query), ("category", category), ("type", plugin_type)):
        if value:
            params[name] = value
    with reporting_errors(out):
        server = resolve_backend(backend)
        with get_runtime(ctx).client(server, None) as api:
            data = expect_object(api.get(f"{PUBLIC}/browse", params=params), "browse")
    items = expect_list(data.get("items"), "browse items")
    total = int(data.get("total") or 0)

    def human() -> None:
        criteria = _criteria(query, category, plugin_type)
        if not total:
            matching = f" matches {criteria}" if criteria else " is listed"
            out.out.print(f"No plugin{matching} on {server}.", markup=False)
            return
        if not items:
            last = -(-total // PAGE_SIZE)
            out.out.print(f"Page {page} is past the end ({last} pages).", markup=False)
            return
        for line in search_lines(items):
            out.out.print(line, markup=False)
        first = (page - 1) * PAGE_SIZE + 1
        shown = f"{first}-{first + len(items) - 1} of {total}"
        more = ""
        if first + len(items) - 1 < total:
            more = f"; next page: --page {page + 1}"
        out.err.print(
            f"{shown}{more}. One plugin: marketplace info PLUGIN_KEY; install it: marketplace "
            "install PLUGIN_KEY",
            markup=False,
        )

    out.result(data, human)


# --- info ---------------------------------------------------------------------------------


def read_capabilities(api: ApiClient, key: str) -> dict[str, Any] | None:
    """CONTRACT 13's public capabilities of the current version; None when the service has
    no inspection (the route is unknown: 404 NOT_FOUND) or no approved version to show."""
    try:
        return expect_object(api.get(f"{PUBLIC}/capabilities/{key}/latest"), "capabilities")
    except ApiError as exc:
        if exc.server_side:
            raise
        return None


def _price(plugin: dict[str, Any]) -> str:
    if plugin.get("isFree", True):
        return "free"
    days = plugin.get("validityDays")
    return f"{plugin.get('price')} ({f'{days} days' if days else 'permanent'})"


def _joined(values: Any) -> str:
    return ", ".join(str(v) for v in values) if isinstance(values, list) and values else "-"


def _first_line(text: Any) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0] if lines else ""


def capability_lines(capabilities: dict[str, Any] | None) -> list[str]:
    """Tools, prompts and permissions of the current version (CONTRACT 13's shape)."""
    if capabilities is None:
        return [f"Tools: {NOT_INSPECTED}"]
    status = capabilities.get("status")
    if status != "done":
        why = "not applicable (no MCP server to run)" if status == "not_applicable" else status
        return [f"Tools: {NOT_INSPECTED} (inspection {why})"]
    lines: list[str] = []
    for label, key in (("Tools", "tools"), ("Prompts", "prompts")):
        entries = [e for e in capabilities.get(key) or [] if isinstance(e, dict)]
        lines.append(f"{label}: {len(entries)}" if entries else f"{label}: none")
        lines += columns(
            [["  " + str(e.get("name")), _first_line(e.get("description"))] for e in entries]
        )
    lines.append(f"Permissions declared: {_joined(capabilities.get('declared'))}")
    undeclared = capabilities.get("undeclared")
    if isinstance(undeclared, list) and undeclared:
        lines.append(f"Observed but not declared: {_joined(undeclared)}")
    return lines


def info_lines(
    plugin: dict[str, Any], versions: list[Any], capabilities: dict[str, Any] | None
) -> list[str]:
    key = plugin.get("pluginKey")
    title = f"{key}: {plugin.get('name')}"
    lines = [title]
    if plugin.get("description"):
        lines.append(f"  {plugin['description']}")
    developer = plugin.get("developer") or {}
    count = plugin.get("ratingCount") or 0
    fields = [
        ("Developer", str(developer.get("name") or developer.get("id") or "-")),
        ("Type", str(plugin.get("type"))),
        ("Category", str(plugin.get("category"))),
        ("Price", _price(plugin)),
        ("Current", str(plugin.get("latestVersion") or "no approved version")),
        ("Rating", f"{rating(plugin)} ratings" if count else "no ratings yet"),
        ("Downloads", str(plugin.get("downloadCount", 0))),
        ("Tags", _joined(plugin.get("tags"))),
        ("Platforms", _joined(plugin.get("platforms")) if plugin.get("platforms") else "any"),
    ]
    fields += [
        (label, str(plugin[name]))
        for label, name in (("License", "license"), ("Homepage", "homepage"))
        if plugin.get(name)
    ]
    if plugin.get("repository"):
        fields.append(("Repository", str(plugin["repository"])))
    lines += [f"{label + ':':<11} {value}" for label, value in fields]
    lines.append(f"Versions: {len(versions)}" if versions else "Versions: none approved")
    rows = []
    for item in versions:
        version = item if isinstance(item, dict) else {}
        current = "current" if version.get("isLatest") else ""
        created = str(version.get("createdAt") or "")[:10]
        rows.append(
            [
                "  " + str(version.get("version")),
                created,
                current,
                _first_line(version.get("changelog")),
            ]
        )
    lines += columns(rows) if rows else []
    lines += capability_lines(capabilities)
    if plugin.get("latestVersion"):
        lines.append(f"Install: marketplace install {key}")
    return lines


def info_command(
    ctx: typer.Context,
    plugin_key: Annotated[str, typer.Argument(help="The plugin's key.")],
    backend: BackendOption = None,
    json_output: JsonOption = False,
) -> None:
    """One listed plugin: its details, versions and tools (no login)."""
    out = Output(json_mode=json_output, subject=Subject(plugin_key=plugin_key))
    with reporting_errors(out):
        key = checked_key(plugin_key)
        server = resolve_backend(backend)
        with get_runtime(ctx).client(server, None) as api:
            plugin = expect_object(api.get(f"{PUBLIC}/detail/{key}"), "plugin")
            listing = expect_object(api.get(f"{PUBLIC}/versions/{key}"), "versions")
            versions = expect_list(listing.get("items"), "versions items")
            capabilities = read_capabilities(api, key) if plugin.get("latestVersion") else None
    data = {"plugin": plugin, "versions": versions, "capabilities": capabilities}

    def human() -> None:
        for line in info_lines(plugin, versions, capabilities):
            out.out.print(line, markup=False)

    out.result(data, human)


def register(app: typer.Typer) -> None:
    app.command("search")(search_command)
    app.command("info")(info_command)
