"""The local registry of installed plugins and their MCP servers: `<install dir>/registry.json`.

It sits next to the plugins it describes, so each `--dir` is self-contained. Its
`mcpServers` object uses the layout MCP clients commonly read (`command`, `args`, `env`
per server, plus `type` and `cwd`); `plugins` records what was installed. Configuration
values, secrets included, are stored in it, so it is written with mode 0600.

    {
      "version": 1,
      "mcpServers": {"<pluginKey>": {"type": "stdio", "command": "...", "args": [],
                                     "env": {...}, "cwd": "<install path>"}},
      "plugins": {"<pluginKey>": {"version", "path", "distribution", "installedAt",
                                   "config": {...}, "autoConnect"}}
    }
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from marketplace.cli.config import write_private
from marketplace.cli.errors import CliError

REGISTRY_FILE = "registry.json"
FORMAT_VERSION = 1
PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


def registry_path(install_root: Path) -> Path:
    return install_root / REGISTRY_FILE


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Replace `${KEY}` with configuration values; unknown placeholders stay as written."""
    return PLACEHOLDER.sub(lambda match: values.get(match.group(1), match.group(0)), text)


def server_entry(mcp: Mapping[str, Any], config: Mapping[str, str], cwd: Path) -> dict[str, Any]:
    """How to start (stdio) or reach (remote) the plugin's MCP server, configuration injected.

    For a stdio server the configuration becomes environment variables (over the
    manifest's own `env`), and `${KEY}` in args and env values is replaced.
    """
    transport = str(mcp.get("transport", "stdio"))
    if transport != "stdio":
        return {"type": transport, "url": substitute(str(mcp["url"]), config)}
    declared_env = mcp.get("env") or {}
    env = {key: substitute(str(value), config) for key, value in declared_env.items()}
    env.update(config)
    return {
        "type": "stdio",
        "command": str(mcp["command"]),
        "args": [substitute(str(arg), config) for arg in mcp.get("args") or []],
        "env": env,
        "cwd": str(cwd),
    }


def load_registry(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"version": FORMAT_VERSION, "mcpServers": {}, "plugins": {}}
    except (OSError, ValueError) as exc:
        raise CliError("REGISTRY_UNREADABLE", f"cannot read {path}: {exc}") from exc
    if not isinstance(document, dict):
        raise CliError("REGISTRY_UNREADABLE", f"{path} is not a registry file")
    for key in ("mcpServers", "plugins"):
        if not isinstance(document.get(key), dict):
            document[key] = {}
    return document


def register_plugin(
    path: Path, plugin_key: str, plugin: dict[str, Any], server: dict[str, Any] | None
) -> None:
    """Record an install (replacing any earlier one of the same plugin)."""
    document = load_registry(path)
    document["version"] = FORMAT_VERSION
    document["plugins"][plugin_key] = plugin
    if server is None:
        document["mcpServers"].pop(plugin_key, None)
    else:
        document["mcpServers"][plugin_key] = server
    write_private(path, json.dumps(document, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def unregister_plugin(path: Path, plugin_key: str) -> bool:
    """Forget an install (its plugin record and MCP server); False when it was not there."""
    document = load_registry(path)
    found = document["plugins"].pop(plugin_key, None) is not None
    document["mcpServers"].pop(plugin_key, None)
    if found:
        text = json.dumps(document, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
        write_private(path, text)
    return found
