"""Issue 13, publishing: nothing lost, nothing hidden, nothing destroyed that is not yours,
everything checked before the first write. The CLI runs as a subprocess against a live
server; after each command the files on disk and the server's state are read back."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.market import Market, package_members, running_market, write_plugin
from tests.helpers import err, ok

pytestmark = pytest.mark.e2e

MIB = 1024 * 1024
MCP = {"command": "node", "args": ["server.js"]}


def last_error(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


def folder_digest(folder: Path) -> dict[str, str]:
    """Every file of a folder and its SHA256: a command must leave the folder as it was."""
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def wide_env(market: Market) -> dict[str, str]:
    """The CLI's environment with a terminal wide enough for the summary table's lines."""
    return market.client_env(COLUMNS="220")


def rows(stdout: str) -> dict[str, str]:
    """The publish-batch summary table, one line per plugin key."""
    return {line.split("│")[1].strip(): line for line in stdout.splitlines() if "│" in line}


# 1. --direct never drops files silently (the fallback: tests/e2e/test_publish_fallback.py)


def test_direct_refuses_to_drop_files_and_creates_nothing(market: Market, tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "index.js": "export {};\n",
        "helper.js": "h\n",
        "data.bin": b"\x00\x01",
    }
    folder = write_plugin(tmp_path, "direct-drops", files=files)
    before = folder_digest(folder)

    result = market.as_admin("publish", str(folder), "--direct")

    assert result.returncode == 1
    assert last_error(result.stderr) == (
        "error: INLINE_WOULD_DROP_FILES: --direct: an inline-code version carries only "
        "manifest.json, index.js; it would drop 2 files: data.bin, helper.js"
    )
    assert market.find_plugin("direct-drops") is None
    assert folder_digest(folder) == before


def test_direct_publishes_when_every_file_fits_the_inline_form(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(tmp_path, "direct-fits", files={"index.js": "export const x = 1;\n"})

    result = market.as_admin("publish", str(folder), "--direct")

    assert result.returncode == 0, result.stderr
    [version] = market.versions("direct-fits")
    assert version["distribution"] == "inline"
    assert version["manifest"]["inlineCode"] == "export const x = 1;\n"

    again = market.as_admin("publish", str(folder), "--direct")

    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "Up to date: direct-fits 1.0.0: already published, identical"
    assert market.versions("direct-fits") == [version]


# 2. publish-batch never deletes another account's plugin


def test_batch_type_change_spares_a_plugin_owned_by_another_account(
    market: Market, tmp_path: Path
) -> None:
    developers = tmp_path / "dev"
    write_plugin(developers, "owned-by-dev", type="tool")
    assert market.as_developer("publish", str(developers / "owned-by-dev")).returncode == 0
    batch = tmp_path / "batch"
    write_plugin(batch, "admin-retype", type="tool")
    assert market.as_admin("publish-batch", str(batch)).returncode == 0
    write_plugin(batch, "admin-retype", version="2.0.0", type="mcp", mcp=MCP)
    write_plugin(batch, "owned-by-dev", version="2.0.0", type="mcp", mcp=MCP)
    theirs = market.plugin("owned-by-dev")
    theirs_versions = market.versions(theirs["id"])
    mine = market.plugin("admin-retype")

    dry = market.as_admin("publish-batch", str(batch), "--dry-run", env=wide_env(market))

    assert dry.returncode == 1
    table = rows(dry.stdout)
    assert "would delete and recreate (type tool -> mcp)" in table["admin-retype"]
    assert "failed" in table["owned-by-dev"] and "PLUGIN_NOT_OWNED" in table["owned-by-dev"]
    assert market.plugin("admin-retype")["id"] == mine["id"]
    assert market.plugin("owned-by-dev") == theirs

    result = market.as_admin("publish-batch", str(batch), "--json")

    assert result.returncode == 1
    document: dict[str, Any] = json.loads(result.stdout)
    results = {r["pluginKey"]: r for r in document["data"]["results"]}
    assert results["admin-retype"]["status"] == "published"
    failed = results["owned-by-dev"]
    assert (failed["status"], failed["error"]["code"]) == ("failed", "PLUGIN_NOT_OWNED")
    assert failed["error"]["message"] == (
        f"type tool -> mcp: the plugin belongs to another account (owner {theirs['ownerId']}); "
        "it is not deleted and recreated: nothing was changed"
    )
    after = market.plugin("owned-by-dev")
    assert (after["id"], after["ownerId"], after["type"]) == (
        theirs["id"],
        theirs["ownerId"],
        "tool",
    )
    assert market.versions(theirs["id"]) == theirs_versions
    recreated = market.plugin("admin-retype")
    assert recreated["id"] != mine["id"]
    assert (recreated["type"], recreated["latestVersion"]) == ("mcp", "2.0.0")


# 3. an existing version: identical is fine, different content is refused, nothing uploaded


def test_existing_version_is_compared_by_sha256_before_anything_is_uploaded(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(tmp_path, "same-again", files={"index.js": "export const v = 1;\n"})
    assert market.as_admin("publish", str(folder)).returncode == 0
    [version] = market.versions("same-again")
    plugin, blobs = market.plugin("same-again"), market.blob_files()

    again = market.as_admin("publish", str(folder))

    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == (
        f"Up to date: same-again 1.0.0: already published, identical (sha256 {version['sha256']})"
    )
    (folder / "index.js").write_text("export const v = 2;\n")  # the forgotten version bump
    local = market.cli("publish", str(folder), "--skip-upload", "-o", str(tmp_path / "p.tgz"))
    local_sha = hashlib.sha256((tmp_path / "p.tgz").read_bytes()).hexdigest()
    assert local.returncode == 0

    changed = market.as_admin("publish", str(folder))

    assert changed.returncode == 1
    assert last_error(changed.stderr) == (
        "error: PLUGIN_VERSION_EXISTS: version 1.0.0 exists with different content: raise the "
        f"version (the service has sha256 {version['sha256']}, the local package is {local_sha})"
    )
    assert "Uploading" not in changed.stderr and "uploaded" not in changed.stderr
    assert market.versions("same-again") == [version]
    assert market.plugin("same-again") == plugin
    assert market.blob_files() == blobs


def test_batch_reports_a_changed_existing_version_and_fails_it_only_when_asked(
    market: Market, tmp_path: Path
) -> None:
    write_plugin(tmp_path, "rerun-same")
    write_plugin(tmp_path, "rerun-changed")
    assert market.as_admin("publish-batch", str(tmp_path)).returncode == 0
    (tmp_path / "rerun-changed" / "index.js").write_text("export const changed = true;\n")
    write_plugin(tmp_path, "rerun-new")
    before = {key: market.versions(key) for key in ("rerun-same", "rerun-changed")}

    strict = market.as_admin(
        "publish-batch",
        str(tmp_path),
        "--only",
        "rerun-same,rerun-changed",
        "--no-skip-existing",
        env=wide_env(market),
    )

    assert strict.returncode == 1
    assert (
        "exists with different content: raise the version" in rows(strict.stdout)["rerun-changed"]
    )

    # The default (seed: an existing version is no error in a batch) skips and names it.
    result = market.as_admin("publish-batch", str(tmp_path), env=wide_env(market))

    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert "already published, identical" in table["rerun-same"]
    assert "exists with different content: raise the version (skipped)" in table["rerun-changed"]
    assert "published" in table["rerun-new"]
    assert result.stdout.strip().splitlines()[-1] == "1 published, 2 skipped, 0 failed"
    assert {key: market.versions(key) for key in before} == before
    assert [v["version"] for v in market.versions("rerun-new")] == ["1.0.0"]


# 4. everything checked before the first write


def test_unknown_category_is_listed_with_every_other_manifest_problem(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(tmp_path, "many-faults", category="gardening", version="one")

    result = market.as_admin("publish", str(folder))

    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "error: MANIFEST_INVALID: manifest.json has 2 problems"
    assert lines[1].startswith("  - version: ")
    assert lines[2].startswith('  - category: Invalid category "gardening" (the service knows: ')
    assert market.find_plugin("many-faults") is None


def test_bad_icon_is_refused_before_any_record_or_version_exists(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(tmp_path, "bad-icon", icon="icon.png", files={"index.js": "x\n"})
    (folder / "icon.png").write_bytes(b"GIF89a not a png")

    result = market.as_admin("publish", str(folder))

    assert result.returncode == 1
    assert last_error(result.stderr) == (
        "error: PLUGIN_ICON_INVALID: icon.png: Icon must be a png, jpeg, svg or webp image"
    )
    assert market.find_plugin("bad-icon") is None


def test_limits_endpoint_tells_the_configured_limits(market: Market) -> None:
    limits = ok(httpx.get(f"{market.url}/api/v1/limits"))

    assert limits["pluginPackageMaxBytes"] == 100 * MIB
    assert limits["iconMaxBytes"] == 256 * 1024


@pytest.fixture(scope="module")
def small_limit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Market]:
    """A server taking packages of at most 1 MiB."""
    with running_market(
        tmp_path_factory.mktemp("small-limit"), MARKETPLACE_PLUGIN_PACKAGE_MAX_MB="1"
    ) as live:
        yield live


def test_package_over_the_limit_is_refused_before_upload_naming_both_sizes(
    small_limit: Market, tmp_path: Path
) -> None:
    market = small_limit
    # Well over the limit: past what the form's text fields could add, so the service can
    # refuse from Content-Length alone.
    blob = os.urandom(2 * MIB)
    folder = write_plugin(tmp_path, "too-big", files={"index.js": "x\n", "blob": blob})
    blobs = market.blob_files()

    result = market.as_admin("publish", str(folder))

    assert result.returncode == 1
    packed = market.cli("publish", str(folder), "--skip-upload", "-o", str(tmp_path / "p.tgz"))
    size = (tmp_path / "p.tgz").stat().st_size
    assert packed.returncode == 0 and size > 2 * MIB
    assert last_error(result.stderr) == (
        f"error: PLUGIN_PACKAGE_TOO_LARGE: the package is {size / MIB:.1f} MiB ({size} bytes), "
        f"over the service's limit of 1.0 MiB ({MIB} bytes); nothing was uploaded"
    )
    assert market.find_plugin("too-big") is None
    assert market.blob_files() == blobs

    # The service itself says both too, refusing early from Content-Length.
    plugin = market.request(
        "POST",
        "/api/v1/admin/plugins",
        status=201,
        json={
            "pluginKey": "too-big",
            "name": "Too big",
            "nameZh": "Too big",
            "description": "d",
            "descriptionZh": "d",
            "type": "tool",
            "category": "utility",
        },
    )
    with (tmp_path / "p.tgz").open("rb") as handle:
        response = httpx.post(
            f"{market.url}/api/v1/admin/plugins/{plugin['id']}/upload",
            headers={"Authorization": f"Bearer {market.admin_token}"},
            data={"version": "1.0.0"},
            files={"file": ("p.tgz", handle, "application/gzip")},
        )
    error = err(response, 413, "PLUGIN_PACKAGE_TOO_LARGE")
    assert error["details"]["limit"] == MIB
    assert error["details"]["sizeMeasured"] == "content-length"
    assert error["details"]["size"] == int(response.request.headers["Content-Length"])
    assert market.versions("too-big") == []


# 5. packing: the ignore file, secrets left out with a warning, the dry-run file list


def test_dry_run_lists_the_packed_files_and_publish_leaves_out_ignored_and_secret_files(
    market: Market, tmp_path: Path
) -> None:
    folder = write_plugin(
        tmp_path,
        "ignore-rules",
        files={
            "index.js": "export {};\n",
            "lib/util.js": "export const util = 1;\n",
            "docs/notes.md": "internal\n",
            "debug.log": "noise\n",
            ".env": "API_KEY=do-not-ship\n",
            "certs/dev.pem": "-----BEGIN PRIVATE KEY-----\n",
            ".marketplaceignore": "docs/\n*.log\n",
        },
    )
    before = folder_digest(folder)
    manifest_size = (folder / "manifest.json").stat().st_size

    dry = market.as_admin("publish", str(folder), "--dry-run")

    assert dry.returncode == 0, dry.stderr
    total = 11 + 23 + manifest_size
    width = len(f"{manifest_size} B")
    assert dry.stdout.splitlines() == [
        "Dry run: ignore-rules 1.0.0: would publish 1.0.0 (tarball)",
        f"  {'11 B':>{width}}  index.js",
        f"  {'23 B':>{width}}  lib/util.js",
        f"  {manifest_size} B  manifest.json",
        f"  3 files, {total} B ({total} bytes)",
    ]
    warning = (
        "warning: ignore-rules: not packed, as they usually hold secrets: .env, certs/dev.pem "
        "(re-include one with a `!name` line in .marketplaceignore)"
    )
    assert warning in dry.stderr
    assert market.find_plugin("ignore-rules") is None
    assert folder_digest(folder) == before

    result = market.as_admin("publish", str(folder))

    assert result.returncode == 0, result.stderr
    assert warning in result.stderr
    [version] = market.versions("ignore-rules")
    members = package_members(market.download_package(version["id"]))
    assert sorted(members) == ["index.js", "lib/util.js", "manifest.json"]
    assert folder_digest(folder) == before
