"""Plain helpers of the CLI tests: the fake service's answers and plugin folders."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import Result

from tests.cli.fake_api import FakeApi

BACKEND = "http://market.test"
TOKEN = "test-token"
CATEGORIES = ["productivity", "development", "utility"]
LIMITS_PATH = "/api/v1/limits"
LIMITS = ("GET", LIMITS_PATH)


def serve_limits(fake: FakeApi, package: int = 100 * 1024 * 1024, icon: int = 256 * 1024) -> None:
    """The service's GET /api/v1/limits."""
    data = {
        "pluginPackageMaxBytes": package,
        "scenarioPackageMaxBytes": 50 * 1024 * 1024,
        "iconMaxBytes": icon,
        "iconMediaTypes": ["image/jpeg", "image/png", "image/svg+xml", "image/webp"],
    }
    fake.ok("GET", LIMITS_PATH, data)


Invoke = Callable[..., Result]


def as_admin(fake: FakeApi, role: str = "ADMIN") -> None:
    fake.ok("GET", "/api/v1/auth/me", {"user": {"id": "u1", "email": "a@x", "role": role}})
    fake.ok("GET", "/api/v1/admin/plugins/categories", {"items": [{"key": k} for k in CATEGORIES]})
    serve_limits(fake)


def as_developer(fake: FakeApi) -> None:
    fake.ok("GET", "/api/v1/auth/me", {"user": {"id": "u2", "email": "d@x", "role": "DEVELOPER"}})
    fake.ok("GET", "/api/v1/plugins/categories", {"items": [{"key": k} for k in CATEGORIES]})
    serve_limits(fake)


def base_manifest(plugin_id: str = "demo-plugin", **overrides: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "id": plugin_id,
        "version": "1.0.0",
        "name": "Demo Plugin",
        "nameZh": "演示插件",
        "description": "A demo plugin",
        "type": "tool",
        "main": "index.js",
        "category": "productivity",
    }
    manifest.update(overrides)
    return {k: v for k, v in manifest.items() if v is not None}


def make_plugin(
    root: Path,
    plugin_id: str = "demo-plugin",
    files: dict[str, str | bytes] | None = None,
    folder: str | None = None,
    **overrides: Any,
) -> Path:
    """A plugin folder with manifest.json (overrides set to None drop a key) and files."""
    directory = root / (folder or plugin_id)
    directory.mkdir(parents=True)
    manifest = base_manifest(plugin_id, **overrides)
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False))
    contents: dict[str, str | bytes] = {"index.js": "export default () => 42;\n"}
    contents.update(files or {})
    for name, content in contents.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return directory


def stdout_json(result: Result) -> Any:
    return json.loads(result.stdout)


def file_mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777
