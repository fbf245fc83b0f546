"""`marketplace export --format claude-desktop|mcp-servers [--output FILE]`: the MCP servers
of an install folder as a host's configuration.

Both formats are `{"mcpServers": {name: server}}`. `claude-desktop` is the file Claude
Desktop reads (`claude_desktop_config.json`): stdio servers only, as `command`, `args` and
`env`, and no working folder, so every path must be absolute. `mcp-servers` is the generic
layout other hosts read: the same for stdio servers plus `type` and `cwd`, and
`{type, url}` for remote ones. Secrets are filled in from `secrets.json` (a host needs
them), so a file written with `--output` has mode 0600. An existing `--output` file keeps
its other settings and servers: only this folder's servers are replaced.
"""

from __future__ import annotations

import json
import shutil
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from marketplace_client.config import write_private
from marketplace_client.errors import CliError
from marketplace_client.lifecycle import DirOption, install_root
from marketplace_client.output import Output, reporting_errors
from marketplace_client.registry import load_registry, registry_path, resolve_server
from marketplace_client.secret_store import SecretStore


class ExportFormat(StrEnum):
    CLAUDE_DESKTOP = "claude-desktop"
    MCP_SERVERS = "mcp-servers"


def absolute_command(command: str, cwd: Path) -> str:
    """A path relative to the plugin's folder becomes absolute; a bare name is looked up on
    PATH (hosts start servers with a PATH of their own), else kept as written."""
    if "/" in command or "\\" in command:
        return str((cwd / command).resolve()) if not Path(command).is_absolute() else command
    return shutil.which(command) or command


def absolute_arg(arg: str, cwd: Path) -> str:
    """An argument naming a file or folder of the plugin becomes its absolute path."""
    if not arg or arg.startswith("-") or Path(arg).is_absolute():
        return arg
    candidate = cwd / arg
    try:
        inside = candidate.resolve().is_relative_to(cwd.resolve())
        return str(candidate.resolve()) if inside and candidate.exists() else arg
    except (OSError, ValueError):
        return arg


def host_server(server: dict[str, Any], fmt: ExportFormat) -> dict[str, Any] | None:
    """One registered (secrets filled in) server in the host's layout; None when the host
    cannot start it."""
    if server.get("type") != "stdio":
        if fmt is ExportFormat.CLAUDE_DESKTOP:
            return None
        return {"type": server.get("type"), "url": server.get("url")}
    cwd = Path(str(server.get("cwd") or ".")).resolve()
    entry: dict[str, Any] = {
        "command": absolute_command(str(server["command"]), cwd),
        "args": [absolute_arg(str(arg), cwd) for arg in server.get("args") or []],
        "env": dict(server.get("env") or {}),
    }
    if fmt is ExportFormat.MCP_SERVERS:
        entry = {"type": "stdio", **entry, "cwd": str(cwd)}
    return entry


def export_servers(root: Path, fmt: ExportFormat) -> tuple[dict[str, Any], list[str]]:
    """(servers by plugin key, notes about the servers left out)."""
    document = load_registry(registry_path(root))
    store = SecretStore(root)
    servers: dict[str, Any] = {}
    notes: list[str] = []
    for key, server in sorted(document["mcpServers"].items()):
        try:
            if not isinstance(server, dict):
                raise TypeError(server)
            entry = host_server(resolve_server(server, store.get(key)), fmt)
        except (KeyError, TypeError, AttributeError, ValueError):
            # A hand-edited or damaged registry entry: named, not a traceback.
            notes.append(f"{key} left out: its registry entry is not a server description")
            continue
        if entry is None:
            notes.append(
                f"{key} left out: Claude Desktop's configuration starts stdio servers only "
                f"({key} is {server.get('type')} at {server.get('url')})"
            )
            continue
        servers[key] = entry
    return servers, notes


def merged(output: Path, servers: dict[str, Any]) -> dict[str, Any]:
    """The existing host file with this folder's servers put in (its other content kept)."""
    try:
        existing = json.loads(output.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"mcpServers": servers}
    except (OSError, ValueError) as exc:
        raise CliError(
            "OUTPUT_UNREADABLE", f"{output} exists and is not a JSON file ({exc}); not changed"
        ) from exc
    if not isinstance(existing, dict) or not isinstance(existing.get("mcpServers", {}), dict):
        raise CliError(
            "OUTPUT_UNREADABLE", f"{output} exists and is not a host configuration; not changed"
        )
    return {**existing, "mcpServers": {**existing.get("mcpServers", {}), **servers}}


def export_command(
    fmt: Annotated[
        ExportFormat,
        typer.Option("--format", help="The host's configuration layout.", show_default=False),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            help="Write (or update) this file, mode 0600; default: print to stdout.",
            show_default=False,
        ),
    ] = None,
    directory: DirOption = None,
) -> None:
    """Write the installed MCP servers as a host configuration (absolute paths, secrets)."""
    out = Output()
    root = install_root(directory)
    with reporting_errors(out):
        servers, notes = export_servers(root, fmt)
        for note in notes:
            out.warn(note)
        if output is None:
            typer.echo(json.dumps({"mcpServers": servers}, ensure_ascii=False, indent=2))
            return
        target = output.expanduser().resolve()
        text = json.dumps(merged(target, servers), ensure_ascii=False, indent=2) + "\n"
        try:
            write_private(target, text)
        except OSError as exc:
            raise CliError("OUTPUT_UNWRITABLE", f"cannot write {target}: {exc}") from exc
    count = len(servers)
    noun = "server" if count == 1 else "servers"
    out.out.print(f"Wrote {count} MCP {noun} ({fmt.value}) to {target}.", markup=False)


def register(app: typer.Typer) -> None:
    app.command("export")(export_command)
