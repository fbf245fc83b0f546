"""Secret configuration values of installed plugins: `<install dir>/secrets.json`.

One file per install folder, next to registry.json, written with mode 0600 (atomically,
`config.write_private`), holding each secret value once. registry.json never holds them:
its MCP server entries carry `${KEY}` placeholders that `registry.resolve_server` fills in
from here when a server is started or exported. No OS keyring is used (decisions.md).

    {"version": 1, "plugins": {"<pluginKey>": {"API_KEY": "..."}}}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from marketplace_client.config import write_private
from marketplace_client.errors import CliError

SECRETS_FILE = "secrets.json"
FORMAT_VERSION = 1


class SecretStore:
    def __init__(self, install_root: Path) -> None:
        self.path = install_root / SECRETS_FILE

    def _load(self) -> dict[str, Any]:
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"version": FORMAT_VERSION, "plugins": {}}
        except (OSError, ValueError) as exc:
            raise CliError("SECRETS_UNREADABLE", f"cannot read {self.path}: {exc}") from exc
        if not isinstance(document, dict) or not isinstance(document.get("plugins"), dict):
            raise CliError("SECRETS_UNREADABLE", f"{self.path} is not a secrets file")
        return document

    def _save(self, document: dict[str, Any]) -> None:
        if not document["plugins"]:
            self.path.unlink(missing_ok=True)  # no empty file left behind by the last uninstall
            return
        text = json.dumps(document, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
        write_private(self.path, text)

    def check_readable(self) -> None:
        self._load()

    def get(self, plugin_key: str) -> dict[str, str]:
        values = self._load()["plugins"].get(plugin_key)
        if not isinstance(values, dict):
            return {}
        return {str(k): str(v) for k, v in values.items()}

    def put(self, plugin_key: str, values: dict[str, str]) -> None:
        """Replace the plugin's secrets (none: forget the plugin)."""
        document = self._load()
        if values:
            document["plugins"][plugin_key] = dict(sorted(values.items()))
        elif plugin_key not in document["plugins"]:
            return
        else:
            del document["plugins"][plugin_key]
        self._save(document)

    def remove(self, plugin_key: str) -> bool:
        document = self._load()
        if document["plugins"].pop(plugin_key, None) is None:
            return False
        self._save(document)
        return True
