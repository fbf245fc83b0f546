"""The install lifecycle's finer cases against the fake service: migrating a registry that
holds secrets in plain text, refusals of list/update/uninstall/export, file times, and
installs that stop before writing anything."""

from __future__ import annotations

import io
import json
import sys
import tarfile
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from marketplace_client.registry import load_registry, registry_locked

from .fake_api import FakeApi
from .helpers import Invoke, base_manifest, file_mode, stdout_json
from .signing import APPROVED_AT
from .test_install import registry, secrets, serve_manifest, serve_tarball

KEY = "demo-plugin"
SECRET = "sk-plain-123456"
CONFIG: list[dict[str, Any]] = [
    {"key": "API_KEY", "required": True, "secret": True},
    {"key": "REGION", "default": "eu"},
]


def old_registry(root: Path, manifest_config: list[dict[str, Any]] | None = CONFIG) -> Path:
    """An install as a format-1 client left it: the secret in the plugin config and, twice
    more, in the server entry."""
    path = root / KEY / "1.0.0"
    path.mkdir(parents=True)
    manifest = base_manifest(main="", config=manifest_config)
    (path / "manifest.json").write_text(json.dumps(manifest))
    document = {
        "version": 1,
        "mcpServers": {
            KEY: {
                "type": "stdio",
                "command": "srv",
                "args": [f"--key={SECRET}", "--region", "eu"],
                "env": {"API_KEY": SECRET, "REGION": "eu"},
                "cwd": str(path),
            }
        },
        "plugins": {
            KEY: {
                "version": "1.0.0",
                "path": str(path),
                "distribution": "config_only",
                "installedAt": "2026-11-01T00:00:00Z",
                "config": {"API_KEY": SECRET, "REGION": "eu"},
                "autoConnect": False,
            }
        },
    }
    (root / "registry.json").write_text(json.dumps(document))
    return path


def test_a_registry_with_plain_text_secrets_is_migrated_when_read(
    tmp_path: Path, invoke: Invoke
) -> None:
    root = tmp_path / "plugins"
    old_registry(root)

    result = invoke(["list", "--offline", "--dir", str(root)], auth=False)

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "PLUGIN       VERSION  STATUS",
        "demo-plugin  1.0.0    not checked (--offline)",
    ]
    text = (root / "registry.json").read_text()
    assert SECRET not in text
    document = registry(root)
    assert document["version"] == 2
    assert document["plugins"][KEY]["config"] == {"REGION": "eu"}
    assert document["plugins"][KEY]["secretKeys"] == ["API_KEY"]
    server = document["mcpServers"][KEY]
    assert server["args"] == ["--key=${API_KEY}", "--region", "eu"]
    assert server["env"] == {"API_KEY": "${API_KEY}", "REGION": "eu"}
    assert secrets(root) == {"version": 1, "plugins": {KEY: {"API_KEY": SECRET}}}
    assert file_mode(root / "secrets.json") == 0o600
    assert file_mode(root / "registry.json") == 0o600
    # Read again: nothing moves twice.
    before = (root / "registry.json").read_text(), (root / "secrets.json").read_text()
    assert invoke(["list", "--offline", "--dir", str(root)], auth=False).exit_code == 0
    assert ((root / "registry.json").read_text(), (root / "secrets.json").read_text()) == before


def test_migrated_secrets_are_kept_by_the_next_install(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    root = tmp_path / "plugins"
    old_registry(root)
    mcp = {"command": "srv", "args": ["--key=${API_KEY}"]}
    serve_manifest(fake, "config_only", base_manifest(main="", mcp=mcp, config=CONFIG))

    result = invoke(["install", KEY, "--dir", str(root)])

    assert result.exit_code == 0, result.output
    assert secrets(root)["plugins"] == {KEY: {"API_KEY": SECRET}}
    assert registry(root)["mcpServers"][KEY]["args"] == ["--key=${API_KEY}"]
    assert SECRET not in (root / "registry.json").read_text()


def test_update_needs_a_plugin_or_all(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    for args in (["update"], ["update", KEY, "--all"]):
        result = invoke([*args, "--dir", str(tmp_path)])
        assert result.exit_code == 1
        assert result.stderr.strip() == (
            "error: BAD_OPTION: name one installed plugin or pass --all (not both)"
        )
    missing = invoke(["update", KEY, "--dir", str(tmp_path)])
    assert missing.exit_code == 1
    assert missing.stderr.startswith(f"error: NOT_INSTALLED: {KEY} is not installed in {tmp_path};")
    assert fake.calls() == []


def test_update_all_with_nothing_installed_says_so(tmp_path: Path, invoke: Invoke) -> None:
    result = invoke(["update", "--all", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"No plugins installed in {tmp_path}."


def test_uninstall_refuses_a_bad_key_and_an_unknown_plugin(tmp_path: Path, invoke: Invoke) -> None:
    bad = invoke(["uninstall", "../etc", "--dir", str(tmp_path)], auth=False)
    assert bad.exit_code == 1
    assert bad.stderr.startswith("error: BAD_OPTION: PLUGIN_KEY")
    unknown = invoke(["uninstall", KEY, "--dir", str(tmp_path), "--json"], auth=False)
    assert unknown.exit_code == 1
    assert stdout_json(unknown)["error"]["code"] == "NOT_INSTALLED"


def test_export_of_an_empty_folder_is_an_empty_configuration(
    tmp_path: Path, invoke: Invoke
) -> None:
    result = invoke(["export", "--format", "claude-desktop", "--dir", str(tmp_path)], auth=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"mcpServers": {}}


def test_export_does_not_overwrite_a_file_that_is_not_a_host_configuration(
    tmp_path: Path, invoke: Invoke
) -> None:
    root = tmp_path / "plugins"
    old_registry(root)
    target = tmp_path / "notes.txt"
    target.write_text("my notes")
    args = ["export", "--format", "mcp-servers", "--dir", str(root), "--output", str(target)]

    result = invoke(args, auth=False)

    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: OUTPUT_UNREADABLE: {target} exists and is not")
    assert result.stderr.strip().endswith("not changed")
    assert target.read_text() == "my notes"


def test_export_fills_in_secrets_and_makes_package_paths_absolute(
    tmp_path: Path, invoke: Invoke
) -> None:
    root = tmp_path / "plugins"
    path = old_registry(root)
    (path / "server.py").write_text("print()\n")
    document = registry_document(root)
    document["mcpServers"][KEY]["command"] = "./bin/run"
    document["mcpServers"][KEY]["args"] = ["server.py", "--key=${API_KEY}", "missing.py"]
    (root / "registry.json").write_text(json.dumps(document))

    result = invoke(["export", "--format", "claude-desktop", "--dir", str(root)], auth=False)

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["mcpServers"][KEY] == {
        "command": str(path / "bin" / "run"),
        "args": [str(path / "server.py"), f"--key={SECRET}", "missing.py"],
        "env": {"API_KEY": SECRET, "REGION": "eu"},
    }


def registry_document(root: Path) -> dict[str, Any]:
    """The registry as the CLI reads it (migrated)."""
    return load_registry(root / "registry.json")


def dated_tarball(mtimes: dict[str, int]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, mtime in mtimes.items():
            data = json.dumps(base_manifest()).encode() if name == "manifest.json" else b"x\n"
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), mtime
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_undated_archive_files_get_the_signed_approval_time(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    dated = 1_700_000_000
    serve_tarball(fake, dated_tarball({"manifest.json": 0, "index.js": 0, "lib/a.js": dated}))
    root = tmp_path / "plugins"

    result = invoke(["install", KEY, "--dir", str(root)])

    assert result.exit_code == 0, result.output
    approved = datetime.fromisoformat(APPROVED_AT).timestamp()
    path = root / KEY / "1.0.0"
    assert (path / "index.js").stat().st_mtime == approved
    assert (path / "manifest.json").stat().st_mtime == approved
    assert (path / "lib" / "a.js").stat().st_mtime == dated  # a real time is kept
    # The archive has no entry for lib/: extraction made it, it is dated like the rest.
    assert (path / "lib").stat().st_mtime == approved


def test_unreadable_registry_stops_the_install_before_anything_is_written(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    root = tmp_path / "plugins"
    root.mkdir()
    (root / "registry.json").write_text("{not json")
    serve_tarball(fake, dated_tarball({"manifest.json": 0, "index.js": 0}))

    result = invoke(["install", KEY, "--dir", str(root)])

    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: REGISTRY_UNREADABLE: cannot read {root}")
    assert sorted(p.name for p in root.iterdir()) == ["registry.json"]
    assert fake.calls() == []


def test_a_manifest_icon_that_is_a_name_or_url_is_kept(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    manifest = base_manifest(main="", icon="https://cdn.test/icon.png")
    serve_manifest(fake, "config_only", manifest)
    root = tmp_path / "plugins"

    result = invoke(["install", KEY, "--dir", str(root)])

    assert result.exit_code == 0, result.output
    installed = json.loads((root / KEY / "1.0.0" / "manifest.json").read_text())
    assert installed["icon"] == "https://cdn.test/icon.png"
    assert "Note: icon" not in result.stdout


SDK_SERVER = Path(__file__).parents[1] / "fixtures" / "plugins" / "mcp_sdk_echo" / "server.py"


def connecting(version: str, mode: str) -> dict[str, Any]:
    mcp = {"command": sys.executable, "args": [str(SDK_SERVER), mode], "env": {}}
    return base_manifest(
        main="", type="mcp", version=version, mcp=mcp, autoConnect=True, config=CONFIG
    )


def test_update_whose_auto_connect_fails_is_installed_and_exits_1(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    root = tmp_path / "plugins"
    serve_manifest(fake, "config_only", connecting("1.0.0", "ok"))
    first = invoke(["install", KEY, "--dir", str(root), "--config", f"API_KEY={SECRET}"])
    assert first.exit_code == 0, first.output
    serve_manifest(fake, "config_only", connecting("1.1.0", "exit"))
    fake.routes[("GET", f"/api/v1/plugins/download/{KEY}/1.1.0")] = fake.routes[
        ("GET", f"/api/v1/plugins/download/{KEY}/latest")
    ]
    fake.offer_latest(KEY, "1.1.0")

    # --yes: this fake service shows no capabilities, so the update would ask first.
    result = invoke(["update", KEY, "--dir", str(root), "--yes"], mcp_timeout=5.0)

    assert result.exit_code == 1
    assert f"Updated {KEY} 1.0.0 -> 1.1.0." in result.stdout
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: {KEY}: MCP_CONNECT_FAILED: the server exited before answering; stderr: "
        f"fixture: refusing to start ({KEY} 1.1.0 is installed)"
    )
    assert sorted(p.name for p in (root / KEY).iterdir()) == ["1.1.0"]
    assert registry(root)["plugins"][KEY]["version"] == "1.1.0"
    assert secrets(root)["plugins"] == {KEY: {"API_KEY": SECRET}}


def test_install_removes_version_folders_an_older_client_left_behind(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    root = tmp_path / "plugins"
    for leftover in ("0.8.0", "0.9.0"):
        (root / KEY / leftover).mkdir(parents=True)
        (root / KEY / leftover / "manifest.json").write_text(json.dumps({"id": KEY}))
    # Not installs of KEY: a staging folder, the user's own folders, another plugin's copy.
    (root / KEY / ".install-concurrent").mkdir()
    (root / KEY / "src").mkdir()
    (root / KEY / "src" / "work.js").write_text("mine\n")
    (root / KEY / "2.0.0").mkdir()
    (root / KEY / "2.0.0" / "manifest.json").write_text(json.dumps({"id": "other-plugin"}))
    serve_manifest(fake, "config_only", base_manifest(main=""))

    result = invoke(["install", KEY, "--dir", str(root)])

    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (root / KEY).iterdir()) == [
        ".install-concurrent",
        "1.0.0",
        "2.0.0",
        "src",
    ]
    assert (root / KEY / "src" / "work.js").read_text() == "mine\n"
    assert "Note: removed the earlier version folder 0.8.0" in result.stdout
    assert "Note: removed the earlier version folder 0.9.0" in result.stdout
    assert "src" not in result.stdout


def test_uninstall_never_deletes_a_folder_without_a_registry_entry(
    tmp_path: Path, invoke: Invoke
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print(1)\n")

    result = invoke(["uninstall", "src", "--dir", str(tmp_path)], auth=False)

    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: NOT_INSTALLED: src is not installed in {tmp_path};")
    assert (tmp_path / "src" / "main.py").read_text() == "print(1)\n"


def test_uninstall_keeps_files_in_the_plugin_folder_that_are_not_an_install(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    root = tmp_path / "plugins"
    serve_manifest(fake, "config_only", base_manifest(main=""))
    assert invoke(["install", KEY, "--dir", str(root)]).exit_code == 0
    (root / KEY / "notes.txt").write_text("mine\n")

    result = invoke(["uninstall", KEY, "--dir", str(root)], auth=False)

    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (root / KEY).iterdir()) == ["notes.txt"]
    assert "still holds files that are not an install" in result.stderr
    assert KEY not in registry(root)["plugins"]


def test_a_plugin_without_secrets_leaves_no_secrets_file(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    root = tmp_path / "plugins"
    config = [{"key": "REGION", "default": "eu"}]
    serve_manifest(fake, "config_only", base_manifest(main="", config=config))

    result = invoke(["install", KEY, "--dir", str(root)])

    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in root.iterdir()) == [KEY, "registry.json", "registry.json.lock"]
    assert registry(root)["plugins"][KEY]["secretKeys"] == []


def test_a_failed_registration_puts_the_earlier_secrets_back(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "plugins"
    serve_manifest(fake, "config_only", base_manifest(main="", config=CONFIG))
    first = invoke(["install", KEY, "--dir", str(root), "--config", f"API_KEY={SECRET}"])
    assert first.exit_code == 0, first.output
    registry_before = (root / "registry.json").read_text()

    def broken(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device", str(root / "registry.json"))

    monkeypatch.setattr("marketplace_client.install.register_plugin", broken)
    again = invoke(["install", KEY, "--dir", str(root), "--config", "API_KEY=sk-new-999"])

    assert again.exit_code == 1
    assert again.stderr.strip().endswith("No space left on device")
    assert secrets(root)["plugins"] == {KEY: {"API_KEY": SECRET}}
    assert (root / "registry.json").read_text() == registry_before


def test_export_names_a_damaged_registry_entry_instead_of_failing(
    tmp_path: Path, invoke: Invoke
) -> None:
    root = tmp_path / "plugins"
    old_registry(root)
    document = json.loads((root / "registry.json").read_text())
    document["mcpServers"]["broken-one"] = {"type": "stdio", "args": []}
    document["mcpServers"]["broken-two"] = {"type": "stdio", "command": "x", "env": ["a"]}
    (root / "registry.json").write_text(json.dumps(document))

    result = invoke(["export", "--format", "mcp-servers", "--dir", str(root)], auth=False)

    assert result.exit_code == 0, result.output
    assert set(json.loads(result.stdout)["mcpServers"]) == {KEY}
    assert "broken-one left out: its registry entry is not a server description" in result.stderr
    assert "broken-two left out: its registry entry is not a server description" in result.stderr


def test_registry_changes_of_one_install_folder_wait_for_each_other(tmp_path: Path) -> None:
    order: list[str] = []

    def second() -> None:
        with registry_locked(tmp_path):
            order.append("second")

    with registry_locked(tmp_path):
        waiting = threading.Thread(target=second)
        waiting.start()
        waiting.join(timeout=0.5)
        order.append("first")
    waiting.join(timeout=30)

    assert order == ["first", "second"]
