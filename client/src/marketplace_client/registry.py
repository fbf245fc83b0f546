"""The local registry of installed plugins and their MCP servers: `<install dir>/registry.json`.

It sits next to the plugins it describes, so each `--dir` is self-contained. Its
`mcpServers` object uses the layout MCP clients commonly read (`command`, `args`, `env`
per server, plus `type` and `cwd`); `plugins` records what was installed. Secret
configuration values are not in it: they live once in `secrets.json` (`secret_store.py`)
and the server entries carry `${KEY}` placeholders for them, filled in by
`resolve_server` when a server is started or exported. A format-1 registry that still
holds secrets in plain text is migrated the first time it is read.

    {
      "version": 2,
      "mcpServers": {"<pluginKey>": {"type": "stdio", "command": "...", "args": [],
                                     "env": {"API_KEY": "${API_KEY}", ...},
                                     "cwd": "<install path>"}},
      "plugins": {"<pluginKey>": {"version", "path", "distribution", "installedAt",
                                   "config": {...not secret...}, "secretKeys": [...],
                                   "autoConnect"}}
    }
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from marketplace_client.config import file_lock, write_private
from marketplace_client.errors import CliError
from marketplace_client.secret_store import SecretStore
from marketplace_rules.vocabulary import MANIFEST_NAME

REGISTRY_FILE = "registry.json"
FORMAT_VERSION = 2
PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
# Shorter secret values are only replaced where they are a whole value: as substrings they
# would match unrelated text.
MIN_SUBSTRING_SECRET = 4


def registry_path(install_root: Path) -> Path:
    return install_root / REGISTRY_FILE


@contextmanager
def registry_locked(install_root: Path) -> Iterator[None]:
    """One change of an install folder's registry and secrets at a time: each is a
    read-modify-write of whole files, and two installs at once must not lose one."""
    install_root.mkdir(parents=True, exist_ok=True)
    with file_lock(install_root / (REGISTRY_FILE + ".lock")):
        yield


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Replace `${KEY}` with configuration values; unknown placeholders stay as written."""
    return PLACEHOLDER.sub(lambda match: values.get(match.group(1), match.group(0)), text)


def placeholders(keys: frozenset[str] | set[str]) -> dict[str, str]:
    return {key: "${" + key + "}" for key in keys}


def server_entry(mcp: Mapping[str, Any], config: Mapping[str, str], cwd: Path) -> dict[str, Any]:
    """How to start (stdio) or reach (remote) the plugin's MCP server, configuration injected.

    For a stdio server the configuration becomes environment variables (over the
    manifest's own `env`), and `${KEY}` in args and env values is replaced. Callers pass
    secret keys as their own placeholder (`placeholders`), so secrets stay out of it.
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


def resolve_server(server: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
    """A registered server entry with its secret placeholders filled in (to start it or to
    hand it to an MCP host); other placeholders stay as written."""
    resolved = dict(server)
    if "url" in resolved:
        resolved["url"] = substitute(str(resolved["url"]), secrets)
    if "args" in resolved:
        resolved["args"] = [substitute(str(arg), secrets) for arg in resolved["args"]]
    if "env" in resolved:
        env = resolved["env"]
        resolved["env"] = {k: substitute(str(v), secrets) for k, v in env.items()}
    return resolved


def _write(path: Path, document: dict[str, Any]) -> None:
    document["version"] = FORMAT_VERSION
    write_private(path, json.dumps(document, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def load_registry(path: Path) -> dict[str, Any]:
    """The registry (an empty one when there is none), migrated to this format."""
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
    if _migrate_secrets(document, SecretStore(path.parent)):
        _write(path, document)
    return document


def _manifest_secret_keys(plugin: Mapping[str, Any]) -> set[str]:
    """The secret configuration keys of an installed plugin, read from its manifest."""
    try:
        manifest = json.loads((Path(str(plugin.get("path"))) / MANIFEST_NAME).read_text("utf-8"))
    except (OSError, ValueError):
        return set()
    items = manifest.get("config") if isinstance(manifest, dict) else None
    return {
        item["key"]
        for item in items or []
        if isinstance(item, dict) and isinstance(item.get("key"), str) and item.get("secret")
    }


def _config(plugin: Mapping[str, Any]) -> dict[str, Any]:
    config = plugin.get("config")
    return config if isinstance(config, dict) else {}


def _hide(text: str, secrets: Mapping[str, str]) -> str:
    for key, value in secrets.items():
        if text == value or (len(value) >= MIN_SUBSTRING_SECRET and value in text):
            text = text.replace(value, "${" + key + "}")
    return text


def _migrate_secrets(document: dict[str, Any], store: SecretStore) -> bool:
    """Move secrets a format-1 registry holds in plain text (plugin config and server entry)
    into the secret store; True when the registry changed. The secrets are written first, so
    an interruption leaves them in both places for the next read, never in none."""
    changed = False
    for key, plugin in document["plugins"].items():
        if not isinstance(plugin, dict) or "secretKeys" in plugin:
            continue
        config = _config(plugin)
        secret_keys = _manifest_secret_keys(plugin)
        secrets = {k: str(v) for k, v in config.items() if k in secret_keys}
        if secrets:
            store.put(key, {**store.get(key), **secrets})
        plugin["config"] = {k: v for k, v in config.items() if k not in secret_keys}
        plugin["secretKeys"] = sorted(secret_keys)
        server = document["mcpServers"].get(key)
        if isinstance(server, dict) and secrets:
            if "url" in server:
                server["url"] = _hide(str(server["url"]), secrets)
            if isinstance(server.get("args"), list):
                server["args"] = [_hide(str(arg), secrets) for arg in server["args"]]
            if isinstance(server.get("env"), dict):
                server["env"] = {k: _hide(str(v), secrets) for k, v in server["env"].items()}
        changed = True
    return changed


def installed_plugins(install_root: Path) -> dict[str, dict[str, Any]]:
    plugins = load_registry(registry_path(install_root))["plugins"]
    return {k: v for k, v in plugins.items() if isinstance(v, dict)}


def saved_config(install_root: Path, plugin_key: str) -> dict[str, str]:
    """The configuration an earlier install saved: the registry's values and the secrets."""
    plugin = installed_plugins(install_root).get(plugin_key) or {}
    config = _config(plugin)
    values = {str(k): str(v) for k, v in config.items()}
    values.update(SecretStore(install_root).get(plugin_key))
    return values


def register_plugin(
    path: Path, plugin_key: str, plugin: dict[str, Any], server: dict[str, Any] | None
) -> None:
    """Record an install (replacing any earlier one of the same plugin)."""
    document = load_registry(path)
    document["plugins"][plugin_key] = plugin
    if server is None:
        document["mcpServers"].pop(plugin_key, None)
    else:
        document["mcpServers"][plugin_key] = server
    _write(path, document)


def unregister_plugin(path: Path, plugin_key: str) -> bool:
    """Forget an install (its plugin record, MCP server and saved secrets); False when it was
    not there."""
    document = load_registry(path)
    found = document["plugins"].pop(plugin_key, None) is not None
    document["mcpServers"].pop(plugin_key, None)
    if found:
        _write(path, document)
    SecretStore(path.parent).remove(plugin_key)
    return found
