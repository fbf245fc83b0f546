from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from marketplace_client import install as install_module

from .fake_api import UPDATES_PATH, FakeApi, error
from .helpers import Invoke, base_manifest, file_mode, stdout_json
from .signing import FIRST_LOG_CHECK, KEYS, FakeSigner, manifest_digest, release_fields

DOWNLOAD = "/api/v1/plugins/download/demo-plugin/latest"
REPORT = "/api/v1/plugins/install/demo-plugin"
# A plain install asks the update check first; the fake offers nothing unless told, so the
# install downloads `latest`.
UPDATE_CHECK = ("POST", UPDATES_PATH)
BLOB_URL = "https://storage.test/blobs/ab/cd/abcd?signature=xyz"
BLOB_PATH = "/blobs/ab/cd/abcd"
CONFIG_ITEMS = [
    {"key": "API_KEY", "label": "API key", "required": True, "secret": True},
    {"key": "REGION", "required": True, "default": "eu"},
    {"key": "DEBUG", "required": False},
]


def tarball(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def package(manifest: dict[str, Any] | None = None, prefix: str = "") -> bytes:
    document = manifest or base_manifest()
    return tarball(
        {
            f"{prefix}manifest.json": json.dumps(document),
            f"{prefix}index.js": "module.exports = 1;\n",
            f"{prefix}lib/util.js": "util\n",
        }
    )


SIGNER = FakeSigner()


def serve_tarball(
    fake: FakeApi, content: bytes, sha256: str | None = None, version: str = "1.0.0"
) -> None:
    """The package with download info and a release record signed for it (when `sha256` is
    given, the service announces and signs that checksum instead of the real one)."""
    digest = sha256 or hashlib.sha256(content).hexdigest()
    release = release_fields(
        version=version, distribution="tarball", sha256=digest, size=len(content)
    )
    info = {
        "distribution": "tarball",
        "url": BLOB_URL,
        "sha256": digest,
        "size": len(content),
        "expiresAt": "2026-11-22T08:15:00Z",
        "release": SIGNER.release(release),
    }
    SIGNER.serve_keys(fake)
    SIGNER.serve_log(fake)
    fake.ok("GET", DOWNLOAD, info)
    fake.on("GET", BLOB_PATH, httpx.Response(200, content=content))
    fake.ok("POST", REPORT, {"pluginId": "p-1", "version": "1.0.0"}, status=201)


def serve_manifest(fake: FakeApi, distribution: str, manifest: dict[str, Any]) -> None:
    sha256, size = manifest_digest(manifest)
    fields = release_fields(
        version=manifest["version"], distribution=distribution, sha256=sha256, size=size
    )
    info: dict[str, Any] = {
        "distribution": distribution,
        "manifest": manifest,
        "release": SIGNER.release(fields),
    }
    if distribution == "config_only":
        info["configOnly"] = True
    SIGNER.serve_keys(fake)
    SIGNER.serve_log(fake)
    fake.ok("GET", DOWNLOAD, info)
    fake.ok("POST", REPORT, {"pluginId": "p-1", "version": manifest["version"]}, status=201)


def registry(root: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((root / "registry.json").read_text())
    return document


def secrets(root: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((root / "secrets.json").read_text())
    return document


def test_tarball_is_downloaded_verified_unpacked_registered_and_reported(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    manifest = base_manifest(mcp={"command": "node", "args": ["index.js"]})
    serve_tarball(fake, package(manifest))
    root = tmp_path / "plugins"
    result = invoke(["install", "demo-plugin", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    assert fake.calls() == [
        UPDATE_CHECK,
        ("GET", DOWNLOAD),
        ("GET", KEYS),
        *FIRST_LOG_CHECK,
        ("GET", BLOB_PATH),
        ("GET", "/api/v1/plugins/capabilities/demo-plugin/1.0.0"),
        ("POST", REPORT),
    ]
    blob_request = fake.find("GET", BLOB_PATH)
    assert blob_request.headers["host"] == "storage.test"
    assert blob_request.params == {"signature": "xyz"}
    assert "authorization" not in blob_request.headers
    assert fake.find("POST", REPORT).json == {"version": "1.0.0"}
    target = root / "demo-plugin" / "1.0.0"
    assert (target / "lib" / "util.js").read_text() == "util\n"
    assert json.loads((target / "manifest.json").read_text()) == manifest
    assert [p.name for p in (root / "demo-plugin").iterdir()] == ["1.0.0"]
    document = registry(root)
    assert file_mode(root / "registry.json") == 0o600
    assert document["plugins"]["demo-plugin"]["path"] == str(target)
    assert document["plugins"]["demo-plugin"]["distribution"] == "tarball"
    assert document["mcpServers"]["demo-plugin"] == {
        "type": "stdio",
        "command": "node",
        "args": ["index.js"],
        "env": {},
        "cwd": str(target),
    }
    assert f"Installed demo-plugin 1.0.0 (tarball) in {target}" in result.stdout


def test_checksum_mismatch_refuses_and_deletes(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_tarball(fake, package(), sha256="0" * 64)
    root = tmp_path / "plugins"
    result = invoke(["install", "demo-plugin", "--dir", str(root)])
    assert result.exit_code == 3
    assert "CHECKSUM_MISMATCH" in result.stderr
    assert not (root / "demo-plugin").exists()
    assert not (root / "registry.json").exists()
    assert ("POST", REPORT) not in fake.calls()


def test_config_only_writes_the_manifest(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    manifest = base_manifest(
        main="", type="mcp", mcp={"transport": "sse", "url": "https://m.test/sse"}
    )
    serve_manifest(fake, "config_only", manifest)
    root = tmp_path / "plugins"
    result = invoke(["install", "demo-plugin", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    target = root / "demo-plugin" / "1.0.0"
    assert sorted(p.name for p in target.iterdir()) == ["manifest.json"]
    assert json.loads((target / "manifest.json").read_text()) == manifest
    assert registry(root)["mcpServers"]["demo-plugin"] == {
        "type": "sse",
        "url": "https://m.test/sse",
    }
    capabilities = ("GET", "/api/v1/plugins/capabilities/demo-plugin/1.0.0")
    assert fake.calls() == [
        UPDATE_CHECK,
        ("GET", DOWNLOAD),
        ("GET", KEYS),
        *FIRST_LOG_CHECK,
        capabilities,
        ("POST", REPORT),
    ]


@pytest.mark.parametrize(
    ("extra", "code_file", "ui_file"),
    [
        (
            {"main": "src/main.js", "contributes": {"ui": {"entry": "web/panel.js"}}},
            "src/main.js",
            "web/panel.js",
        ),
        ({"main": ""}, "index.js", "ui.js"),
    ],
)
def test_inline_restores_the_code_files(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    extra: dict[str, Any],
    code_file: str,
    ui_file: str,
) -> None:
    manifest = base_manifest(inlineCode="main code", inlineUiCode="ui code", **extra)
    serve_manifest(fake, "inline", manifest)
    root = tmp_path / "plugins"
    result = invoke(["install", "demo-plugin", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    target = root / "demo-plugin" / "1.0.0"
    assert (target / code_file).read_text() == "main code"
    assert (target / ui_file).read_text() == "ui code"
    written = json.loads((target / "manifest.json").read_text())
    assert "inlineCode" not in written
    assert "inlineUiCode" not in written
    assert written["id"] == "demo-plugin"


def test_inline_code_cannot_escape_the_install_folder(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_manifest(fake, "inline", base_manifest(main="../../evil.js", inlineCode="x"))
    result = invoke(["install", "demo-plugin", "--dir", str(tmp_path / "plugins")])
    assert result.exit_code == 1
    assert "PACKAGE_INVALID" in result.stderr
    assert not (tmp_path / "evil.js").exists()


def test_config_option_satisfies_required_items_and_is_injected_as_env(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    mcp = {"command": "srv", "args": ["--region", "${REGION}"], "env": {"MODE": "prod"}}
    manifest = base_manifest(main="", type="mcp", mcp=mcp, config=CONFIG_ITEMS)
    serve_manifest(fake, "config_only", manifest)
    root = tmp_path / "plugins"
    result = invoke(
        ["install", "demo-plugin", "--dir", str(root), "--config", "API_KEY=k=1", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = stdout_json(result)["data"]
    assert data["config"] == {"API_KEY": "********", "REGION": "eu"}
    assert data["mcpServer"]["env"]["API_KEY"] == "********"
    server = registry(root)["mcpServers"]["demo-plugin"]
    assert server["args"] == ["--region", "eu"]
    # The secret is a placeholder in the registry, its value in secrets.json only.
    assert server["env"] == {"MODE": "prod", "API_KEY": "${API_KEY}", "REGION": "eu"}
    plugin = registry(root)["plugins"]["demo-plugin"]
    assert (plugin["config"], plugin["secretKeys"]) == ({"REGION": "eu"}, ["API_KEY"])
    assert secrets(root) == {"version": 1, "plugins": {"demo-plugin": {"API_KEY": "k=1"}}}
    assert file_mode(root / "secrets.json") == 0o600
    assert "k=1" not in (root / "registry.json").read_text()


def test_missing_required_config_without_a_terminal_names_it_and_installs_nothing(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    items = [*CONFIG_ITEMS, {"key": "TENANT", "required": True}]
    serve_manifest(fake, "config_only", base_manifest(main="", mcp={"command": "x"}, config=items))
    root = tmp_path / "plugins"
    result = invoke(["install", "demo-plugin", "--dir", str(root)])
    assert result.exit_code == 1
    assert "CONFIG_MISSING: missing required configuration: API_KEY, TENANT" in result.stderr
    assert not (root / "demo-plugin").exists()
    assert not (root / "registry.json").exists()
    assert fake.calls() == [UPDATE_CHECK, ("GET", DOWNLOAD), ("GET", KEYS), *FIRST_LOG_CHECK]


def test_required_config_is_asked_on_a_terminal_without_echoing_secrets(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_manifest(
        fake, "config_only", base_manifest(main="", mcp={"command": "x"}, config=CONFIG_ITEMS)
    )
    root = tmp_path / "plugins"
    result = invoke(
        ["install", "demo-plugin", "--dir", str(root)],
        interactive=True,
        input="top-secret\n\n",
    )
    assert result.exit_code == 0, result.output
    assert "top-secret" not in result.output
    assert "API key" in result.output
    assert registry(root)["plugins"]["demo-plugin"]["config"] == {"REGION": "eu"}
    assert secrets(root)["plugins"] == {"demo-plugin": {"API_KEY": "top-secret"}}


@pytest.mark.parametrize("bad_name", ["../evil.js", "/tmp/evil.js"])
def test_unsafe_archive_members_are_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, bad_name: str
) -> None:
    content = tarball({"manifest.json": json.dumps(base_manifest()), bad_name: "evil"})
    serve_tarball(fake, content)
    root = tmp_path / "plugins"
    result = invoke(["install", "demo-plugin", "--dir", str(root)])
    assert result.exit_code == 1
    assert "PACKAGE_INVALID" in result.stderr
    assert not (root / "demo-plugin" / "evil.js").exists()
    assert not (root / "demo-plugin").exists()


def test_member_count_is_capped(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(install_module, "MAX_MEMBERS", 2)
    serve_tarball(fake, package())
    result = invoke(["install", "demo-plugin", "--dir", str(tmp_path / "plugins")])
    assert result.exit_code == 1
    assert "more than 2 members" in result.stderr


def test_unpacked_size_is_capped(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(install_module, "MAX_UNPACKED_BYTES", 100)
    serve_tarball(fake, tarball({"manifest.json": "{}", "big.bin": b"\0" * 1000}))
    result = invoke(["install", "demo-plugin", "--dir", str(tmp_path / "plugins")])
    assert result.exit_code == 1
    assert "unpacked size" in result.stderr


def test_package_wrapped_in_one_folder_is_installed_from_inside_it(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_tarball(fake, package(prefix="demo-plugin/"))
    root = tmp_path / "plugins"
    result = invoke(["install", "demo-plugin", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    assert (root / "demo-plugin" / "1.0.0" / "manifest.json").is_file()


def test_package_for_another_plugin_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_tarball(fake, package(base_manifest("other-plugin")))
    result = invoke(["install", "demo-plugin", "--dir", str(tmp_path / "plugins")])
    assert result.exit_code == 1
    assert "manifest id 'other-plugin' is not 'demo-plugin'" in result.stderr


def test_explicit_version_is_requested_and_checked(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_tarball(fake, package(), version="2.0.0")
    fake.routes[("GET", "/api/v1/plugins/download/demo-plugin/2.0.0")] = fake.routes.pop(
        ("GET", DOWNLOAD)
    )
    result = invoke(["install", "demo-plugin", "--version", "2.0.0", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "asked for 2.0.0, the package is 1.0.0" in result.stderr


def test_version_latest_installs_the_current_version_without_an_update_check(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_tarball(fake, package())
    fake.offer("demo-plugin", "0.9.0", "update")
    result = invoke(["install", "demo-plugin", "--version", "latest", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert fake.calls()[0] == ("GET", DOWNLOAD)
    assert fake.update_checks() == []


def test_reinstall_replaces_the_earlier_files(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    root = tmp_path / "plugins"
    stale = root / "demo-plugin" / "1.0.0" / "stale.js"
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    serve_tarball(fake, package())
    result = invoke(["install", "demo-plugin", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    assert not stale.exists()
    assert (root / "demo-plugin" / "1.0.0" / "index.js").is_file()


def test_secret_values_are_masked_wherever_they_are_printed(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    mcp = {
        "command": "srv",
        "args": ["--key=${API_KEY}"],
        "env": {"OTHER_NAME": "${API_KEY}"},
    }
    manifest = base_manifest(main="", type="mcp", mcp=mcp, config=CONFIG_ITEMS)
    serve_manifest(fake, "config_only", manifest)
    root = tmp_path / "plugins"
    args = ["install", "demo-plugin", "--dir", str(root), "--config", "API_KEY=very-secret"]
    human = invoke(args)
    assert human.exit_code == 0, human.output
    assert "very-secret" not in human.output
    as_json = invoke([*args, "--json"])
    assert "very-secret" not in as_json.output
    server = stdout_json(as_json)["data"]["mcpServer"]
    assert server["args"] == ["--key=${API_KEY}"]
    assert server["env"]["OTHER_NAME"] == "${API_KEY}"
    assert registry(root)["mcpServers"]["demo-plugin"]["args"] == ["--key=${API_KEY}"]
    assert "very-secret" not in (root / "registry.json").read_text()
    assert secrets(root)["plugins"] == {"demo-plugin": {"API_KEY": "very-secret"}}


def test_a_failed_report_is_a_warning(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    serve_tarball(fake, package())
    fake.on("POST", REPORT, error(500, "INTERNAL_ERROR", "boom"))
    result = invoke(["install", "demo-plugin", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = stdout_json(result)["data"]
    assert data["reported"] is False
    assert data["reportError"]["code"] == "INTERNAL_ERROR"
    assert "could not be reported" in result.stderr


@pytest.mark.parametrize(
    "args",
    [["../escape"], ["demo-plugin", "--version", "1.0"], ["demo-plugin", "--config", "NOEQUALS"]],
)
def test_bad_arguments_are_refused_before_any_request(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, args: list[str]
) -> None:
    result = invoke(["install", *args, "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "BAD_OPTION" in result.stderr
    assert fake.requests == []


def test_service_refusal_is_one_line_with_code(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    fake.on(
        "GET",
        DOWNLOAD,
        error(402, "PLUGIN_NOT_PURCHASED", "This plugin must be purchased first"),
    )
    result = invoke(["install", "demo-plugin", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr == (
        "error: PLUGIN_NOT_PURCHASED: This plugin must be purchased first (HTTP 402)\n"
    )
