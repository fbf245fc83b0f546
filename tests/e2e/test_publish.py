"""`marketplace publish DIR` against a live server, checked by reading the server back."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.e2e.market import SVG_ICON, Market, package_members, write_plugin

pytestmark = pytest.mark.e2e


def test_admin_publish_is_official_with_its_version_current_at_once(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(
        tmp_path, "official-fresh", icon="icon/icon.svg", files={"index.js": "x\n"}
    )
    (folder / "icon").mkdir()
    (folder / "icon" / "icon.svg").write_text(SVG_ICON)
    result = market.as_admin("publish", str(folder))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Published: official-fresh 1.0.0: version 1.0.0 (tarball)"
    assert "official-fresh: created plugin (admin group)" in result.stderr
    assert "official-fresh: uploaded icon icon/icon.svg" in result.stderr
    plugin = market.plugin("official-fresh")
    assert (plugin["reviewStatus"], plugin["enabled"], plugin["source"]) == (
        "approved",
        True,
        "official",
    )
    assert plugin["latestVersion"] == "1.0.0"
    assert plugin["icon"].startswith("data:image/svg+xml;base64,")
    [version] = market.versions("official-fresh")
    assert (version["version"], version["reviewStatus"], version["isLatest"]) == (
        "1.0.0",
        "approved",
        True,
    )
    assert version["distribution"] == "tarball"
    assert f"sha256 {version['sha256']}" in result.stderr


def test_developer_publish_waits_for_review_until_the_admin_approves(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(tmp_path, "dev-fresh", icon="icon.svg")
    (folder / "icon.svg").write_text(SVG_ICON)
    result = market.as_developer("publish", str(folder))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "Submitted for review: dev-fresh 1.0.0: version 1.0.0 (tarball), waiting for review"
    )
    assert "dev-fresh: created plugin (developer group)" in result.stderr
    assert "dev-fresh: uploaded icon icon.svg" in result.stderr
    plugin = market.plugin("dev-fresh")
    assert (plugin["reviewStatus"], plugin["enabled"], plugin["latestVersion"]) == (
        "pending",
        False,
        None,
    )
    assert plugin["source"] == "developer"
    assert plugin["icon"].startswith("data:image/svg+xml;base64,")
    [version] = market.versions("dev-fresh")
    assert (version["reviewStatus"], version["isLatest"]) == ("pending", False)

    market.request("POST", f"/api/v1/admin/plugins/{plugin['id']}/review", json={"approved": True})

    plugin = market.plugin("dev-fresh")
    assert (plugin["reviewStatus"], plugin["enabled"], plugin["latestVersion"]) == (
        "approved",
        True,
        "1.0.0",
    )
    [version] = market.versions("dev-fresh")
    assert (version["reviewStatus"], version["isLatest"]) == ("approved", True)


def test_publishing_a_new_version_updates_the_plugin_instead_of_recreating_it(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(tmp_path, "next-version")
    assert market.as_admin("publish", str(folder)).returncode == 0
    before = market.plugin("next-version")
    write_plugin(tmp_path, "next-version", version="1.1.0", name="Next Version, renamed")

    result = market.as_admin("publish", str(folder), "--changelog", "Renamed")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Published: next-version 1.1.0: version 1.1.0 (tarball)"
    assert "next-version: updated plugin" in result.stderr
    assert "created plugin" not in result.stderr
    after = market.plugin("next-version")
    assert (after["id"], after["createdAt"]) == (before["id"], before["createdAt"])
    assert (after["name"], after["latestVersion"]) == ("Next Version, renamed", "1.1.0")
    versions = [(v["version"], v["isLatest"], v["changelog"]) for v in market.versions(after["id"])]
    assert versions == [("1.1.0", True, "Renamed"), ("1.0.0", False, None)]


def test_developer_new_version_waits_while_the_approved_one_stays_current(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(tmp_path, "dev-update")
    assert market.as_developer("publish", str(folder)).returncode == 0
    plugin_id = market.plugin("dev-update")["id"]
    market.request("POST", f"/api/v1/admin/plugins/{plugin_id}/review", json={"approved": True})
    write_plugin(tmp_path, "dev-update", version="2.0.0")

    result = market.as_developer("publish", str(folder))

    assert result.returncode == 0, result.stderr
    assert "Submitted for review: dev-update 2.0.0" in result.stdout
    assert "dev-update: updated plugin" in result.stderr
    plugin = market.plugin("dev-update")
    assert (plugin["id"], plugin["reviewStatus"], plugin["latestVersion"]) == (
        plugin_id,
        "approved",
        "1.0.0",
    )
    states = {v["version"]: (v["reviewStatus"], v["isLatest"]) for v in market.versions(plugin_id)}
    assert states == {"2.0.0": ("pending", False), "1.0.0": ("approved", True)}


def test_config_only_plugin_is_created_from_its_manifest_without_a_package(
    market: Market, tmp_path: Path
) -> None:
    mcp = {"command": "npx", "args": ["-y", "weather-mcp"], "env": {"UNITS": "metric"}}
    folder = write_plugin(tmp_path, "config-only", main="", type="mcp", mcp=mcp)
    blobs_before = market.blob_files()

    result = market.as_admin("publish", str(folder))

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Published: config-only 1.0.0: version 1.0.0 (config_only)"
    assert "config-only: created configuration-only version 1.0.0" in result.stderr
    [version] = market.versions("config-only")
    assert (version["distribution"], version["sha256"], version["size"]) == (
        "config_only",
        None,
        None,
    )
    assert version["manifest"] == json.loads((folder / "manifest.json").read_text())
    info = market.download_info(version["id"])
    release = info.pop("release")  # an admin's version is approved, so signed at once
    assert set(release) == {"keyId", "payload", "signature", "logIndex"}
    assert info == {
        "distribution": "config_only",
        "configOnly": True,
        "manifest": version["manifest"],
    }
    assert market.blob_files() == blobs_before


def test_version_override_publishes_a_package_whose_manifest_was_rewritten(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(tmp_path, "version-override", version="1.0.0")
    on_disk = (folder / "manifest.json").read_text()

    result = market.as_admin("publish", str(folder), "--version", "2.1.0-beta.1")

    assert result.returncode == 0, result.stderr
    assert "Published: version-override 2.1.0-beta.1" in result.stdout
    [version] = market.versions("version-override")
    assert (version["version"], version["manifest"]["version"]) == (
        "2.1.0-beta.1",
        "2.1.0-beta.1",
    )
    assert version["reviewStatus"] == "approved"
    packaged = json.loads(package_members(market.download_package(version["id"]))["manifest.json"])
    assert packaged["version"] == "2.1.0-beta.1"
    assert (folder / "manifest.json").read_text() == on_disk


def test_uploaded_package_leaves_out_the_excluded_files(market: Market, tmp_path: Path) -> None:
    folder = write_plugin(
        tmp_path,
        "exclusions",
        files={
            "index.js": "export {};\n",
            "lib/util.js": "export const util = 1;\n",
            "README.md": "# exclusions\n",
            "node_modules/left-pad/index.js": "module.exports = 1;\n",
            "lib/node_modules/deep/index.js": "module.exports = 2;\n",
            ".git/HEAD": "ref: refs/heads/main\n",
            ".DS_Store": b"\x00\x00\x00\x01Bud1",
            "lib/.DS_Store": b"\x00\x00\x00\x01Bud1",
            "exclusions-0.9.0.tar.gz": b"\x1f\x8b old package",
        },
    )

    result = market.as_admin("publish", str(folder))

    assert result.returncode == 0, result.stderr
    [version] = market.versions("exclusions")
    package = market.download_package(version["id"])
    assert hashlib.sha256(package).hexdigest() == version["sha256"]
    assert len(package) == version["size"]
    members = package_members(package)
    assert sorted(members) == ["README.md", "index.js", "lib/util.js", "manifest.json"]
    assert members["lib/util.js"] == b"export const util = 1;\n"


def test_packing_is_reproducible_and_gives_the_sha256_the_server_computes(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(tmp_path, "reproducible", files={"index.js": "a\n", "b/c.txt": "c\n"})
    first = market.cli("publish", str(folder), "--skip-upload", "-o", str(tmp_path / "one.tar.gz"))
    os.utime(folder / "index.js", (1_000_000, 1_000_000))  # mtimes must not matter
    second = market.cli("publish", str(folder), "--skip-upload", "-o", str(tmp_path / "two.tar.gz"))
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert f"Packed reproducible 1.0.0: {tmp_path / 'one.tar.gz'}" in first.stdout
    one, two = (tmp_path / "one.tar.gz").read_bytes(), (tmp_path / "two.tar.gz").read_bytes()
    assert one == two
    sha256 = hashlib.sha256(one).hexdigest()
    assert f"sha256  {sha256}" in first.stdout
    assert f"sha256  {sha256}" in second.stdout
    assert market.find_plugin("reproducible") is None  # --skip-upload contacts no one

    assert market.as_admin("publish", str(folder)).returncode == 0

    [version] = market.versions("reproducible")
    assert version["sha256"] == sha256
    assert market.download_package(version["id"]) == one


def test_main_left_out_of_the_package_is_refused_before_anything_is_sent(
    market: Market, tmp_path: Path
) -> None:
    # node_modules/ is never packed: the tool checks `main` against the package's files,
    # as the service would, instead of against the folder.
    folder = write_plugin(
        tmp_path,
        "left-out",
        main="node_modules/server/index.js",
        files={"node_modules/server/index.js": "export {};\n"},
    )

    result = market.as_admin("publish", str(folder))

    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-2:] == [
        "error: MANIFEST_INVALID: manifest.json has 1 problem",
        "  - main: names node_modules/server/index.js, which is not in the package",
    ]
    assert market.find_plugin("left-out") is None


def test_version_rejected_by_automatic_validation_fails_the_publish(
    market: Market, tmp_path: Path
) -> None:
    # Inline code is read from the files only when publishing, so the local manifest check
    # cannot see a bidirectional override in it; the service's automatic validation does.
    folder = write_plugin(
        tmp_path, "auto-rejected", files={"index.js": "export const role = 'user\u202e';\n"}
    )

    result = market.as_admin("publish", str(folder), "--direct")

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().splitlines()[-1] == (
        "error: VERSION_REJECTED: the service rejected version 1.0.0 on arrival: "
        "Automatic validation failed: manifest.inlineCode contains invisible or "
        "bidirectional-control characters (U+202E)"
    )
    [version] = market.versions("auto-rejected")
    assert (version["reviewStatus"], version["isLatest"], version["reviewedBy"]) == (
        "rejected",
        False,
        "system",
    )
    assert market.plugin("auto-rejected")["latestVersion"] is None
