"""The inline-code fallback, against a live server whose object storage cannot be written.

The blob folder of this server lies under a regular file, so every put_file fails (for
root too, unlike a read-only folder): package uploads answer 500 INTERNAL_ERROR.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.market import Market, running_market, write_plugin

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def broken_storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Market]:
    root = tmp_path_factory.mktemp("broken-storage")
    (root / "not-a-folder").write_text("blobs cannot live under a file\n")
    with running_market(root, MARKETPLACE_STORAGE_URL=f"file://{root}/not-a-folder/blobs") as live:
        yield live


def test_package_upload_failing_in_storage_answers_500_in_the_envelope(
    broken_storage: Market, tmp_path: Path
) -> None:
    market = broken_storage
    folder = write_plugin(tmp_path, "storage-down")
    package = tmp_path / "storage-down.tar.gz"
    assert market.cli("publish", str(folder), "--skip-upload", "-o", str(package)).returncode == 0
    plugin = market.request(
        "POST",
        "/api/v1/admin/plugins",
        status=201,
        json={
            "pluginKey": "storage-down",
            "name": "Storage down",
            "nameZh": "Storage down",
            "description": "d",
            "descriptionZh": "d",
            "type": "tool",
            "category": "utility",
        },
    )
    with package.open("rb") as handle:
        response = httpx.post(
            f"{market.url}/api/v1/admin/plugins/{plugin['id']}/upload",
            headers={"Authorization": f"Bearer {market.admin_token}"},
            data={"version": "1.0.0"},
            files={"file": (package.name, handle, "application/gzip")},
        )
    assert response.status_code == 500
    assert response.json() == {
        "success": False,
        "error": {"code": "INTERNAL_ERROR", "message": "Internal server error", "details": {}},
    }
    assert "Traceback" not in response.text
    assert market.versions("storage-down") == []


def test_publish_falls_back_to_inline_code_when_the_upload_fails(
    broken_storage: Market, tmp_path: Path
) -> None:
    market = broken_storage
    folder = write_plugin(
        tmp_path,
        "inline-fallback",
        permissions=["ui.render"],
        contributes={"ui": {"entry": "ui.js"}},
        files={"index.js": "export const server = 1;\n", "ui.js": "export const ui = 2;\n"},
    )

    result = market.as_admin("publish", str(folder))

    assert result.returncode == 0, result.stderr
    assert (
        "warning: inline-fallback: package upload failed "
        "(INTERNAL_ERROR: Internal server error (HTTP 500))"
    ) in result.stderr
    assert "package upload failed; falling back to inline code" in result.stderr
    assert result.stdout.strip() == "Published: inline-fallback 1.0.0: version 1.0.0 (inline)"
    [version] = market.versions("inline-fallback")
    assert (version["distribution"], version["sha256"], version["size"]) == ("inline", None, None)
    assert (version["reviewStatus"], version["isLatest"]) == ("approved", True)
    assert version["manifest"]["inlineCode"] == "export const server = 1;\n"
    assert version["manifest"]["inlineUiCode"] == "export const ui = 2;\n"
    assert market.plugin("inline-fallback")["latestVersion"] == "1.0.0"


def test_developer_publish_falls_back_to_a_pending_inline_version(
    broken_storage: Market, tmp_path: Path
) -> None:
    market = broken_storage
    folder = write_plugin(tmp_path, "dev-fallback", files={"index.js": "export {};\n"})

    result = market.as_developer("publish", str(folder))

    assert result.returncode == 0, result.stderr
    assert "falling back to inline code" in result.stderr
    assert "Submitted for review: dev-fallback 1.0.0: version 1.0.0 (inline)" in result.stdout
    [version] = market.versions("dev-fallback")
    assert (version["distribution"], version["reviewStatus"]) == ("inline", "pending")
    assert version["manifest"]["inlineCode"] == "export {};\n"


def test_fallback_refuses_to_drop_files_and_creates_no_version(
    broken_storage: Market, tmp_path: Path
) -> None:
    market = broken_storage
    files: dict[str, str | bytes] = {
        "index.js": "export {};\n",
        "helper.js": "export const help = 1;\n",
        "data.bin": b"\x00\x01\x02",
    }
    folder = write_plugin(tmp_path, "fallback-drops", files=files)

    result = market.as_admin("publish", str(folder))

    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: INLINE_WOULD_DROP_FILES: package upload failed (INTERNAL_ERROR: Internal server "
        "error (HTTP 500)) and the inline-code fallback would lose files; nothing was "
        "published: an inline-code version carries only manifest.json, index.js; it would "
        "drop 2 files: data.bin, helper.js"
    )
    assert "Published" not in result.stdout
    # The record had to exist for the upload to be tried; no version was made of it.
    assert market.versions("fallback-drops") == []
    assert sorted(p.name for p in folder.iterdir()) == [
        "data.bin",
        "helper.js",
        "index.js",
        "manifest.json",
    ]


def test_rerun_after_a_fallback_finds_the_inline_version_identical(
    broken_storage: Market, tmp_path: Path
) -> None:
    market = broken_storage
    folder = write_plugin(tmp_path, "fallback-rerun", files={"index.js": "export const a = 1;\n"})
    assert market.as_admin("publish", str(folder)).returncode == 0
    [version] = market.versions("fallback-rerun")
    assert version["distribution"] == "inline"

    again = market.as_admin("publish", str(folder))

    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().startswith(
        "Up to date: fallback-rerun 1.0.0: already published, identical"
    )
    assert "package upload failed" not in again.stderr
    (folder / "index.js").write_text("export const a = 2;\n")

    changed = market.as_admin("publish", str(folder))

    assert changed.returncode == 1
    assert (
        changed.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "error: PLUGIN_VERSION_EXISTS: version 1.0.0 exists with different content: raise the "
            "version (the service's version is inline, without a package; the local package is "
        )
    )
    assert market.versions("fallback-rerun") == [version]
