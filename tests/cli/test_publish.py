from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from marketplace_client.pack import pack

from .fake_api import FakeApi, error
from .helpers import (
    LIMITS,
    Invoke,
    as_admin,
    as_developer,
    make_plugin,
    serve_limits,
    stdout_json,
)

ADMIN = "/api/v1/admin/plugins"
DEV = "/api/v1/developer/plugins"
ME = ("GET", "/api/v1/auth/me")
ADMIN_CATEGORIES = ("GET", f"{ADMIN}/categories")
PUBLIC_CATEGORIES = ("GET", "/api/v1/plugins/categories")
DEV_PUT_FIELDS = {
    "name",
    "nameZh",
    "description",
    "descriptionZh",
    "category",
    "tags",
    "license",
    "homepage",
    "repository",
    "platforms",
}
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR" + b"\x00" * 64  # as the service sniffs it
UI_MANIFEST: dict[str, Any] = {
    "contributes": {"ui": {"entry": "ui.js"}},
    "permissions": ["ui.render"],
}


def plugin(**data: Any) -> dict[str, Any]:
    return {"id": "p-1", "pluginKey": "demo-plugin", "type": "tool", **data}


def admin_list(*items: dict[str, Any], total: int | None = None) -> dict[str, Any]:
    count = len(items) if total is None else total
    return {"items": list(items), "total": count, "page": 1, "limit": 100, "counts": {}}


def admin_new(fake: FakeApi) -> None:
    as_admin(fake)
    fake.ok("GET", ADMIN, admin_list())
    fake.ok("POST", ADMIN, plugin(), status=201)
    fake.ok("POST", f"{ADMIN}/p-1/upload", {"id": "v-1", "version": "1.0.0"}, status=201)


def developer_new(fake: FakeApi) -> None:
    as_developer(fake)
    fake.on("GET", f"{DEV}/demo-plugin", error(404, "PLUGIN_NOT_FOUND", "Plugin does not exist"))
    fake.ok("POST", f"{DEV}/publish", plugin(reviewStatus="pending"), status=201)
    fake.ok("POST", f"{DEV}/p-1/upload-version", {"id": "v-1"}, status=201)


def packaged_manifest(content: bytes) -> dict[str, Any]:
    with tarfile.open(fileobj=io.BytesIO(content), mode="r:gz") as tar:
        handle = tar.extractfile("manifest.json")
        assert handle is not None
        document: dict[str, Any] = json.loads(handle.read())
        return document


def test_admin_creates_an_official_plugin_uploads_the_package_and_the_icon(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(
        tmp_path,
        files={"icon/icon.png": PNG},
        icon="icon/icon.png",
        descriptionZh=None,
        tags=["demo"],
        license="MIT",
        homepage="https://example.com",
    )
    admin_new(fake)
    fake.ok("POST", f"{ADMIN}/p-1/icon", plugin(icon="data:image/png;base64,..."))
    result = invoke(["publish", str(directory), "--changelog", "First release"])
    assert result.exit_code == 0, result.output
    assert fake.calls() == [
        ME,
        ADMIN_CATEGORIES,
        LIMITS,
        ("GET", ADMIN),
        ("POST", ADMIN),
        ("POST", f"{ADMIN}/p-1/upload"),
        ("POST", f"{ADMIN}/p-1/icon"),
    ]
    assert fake.find("GET", ADMIN).params == {"search": "demo-plugin", "limit": "100", "page": "1"}
    assert fake.find("POST", ADMIN).json == {
        "pluginKey": "demo-plugin",
        "name": "Demo Plugin",
        "nameZh": "演示插件",
        "description": "A demo plugin",
        "descriptionZh": "A demo plugin",
        "type": "tool",
        "category": "productivity",
        "tags": ["demo"],
        "license": "MIT",
        "homepage": "https://example.com",
        "source": "official",
        "platforms": ["darwin", "win32", "linux"],
    }
    upload = fake.find("POST", f"{ADMIN}/p-1/upload")
    assert upload.form == {"version": "1.0.0", "changelog": "First release"}
    package = upload.files["file"]
    assert (package.filename, package.content_type) == (
        "demo-plugin-1.0.0.tar.gz",
        "application/gzip",
    )
    assert package.content == pack(directory, tmp_path / "again.tar.gz").path.read_bytes()
    icon = fake.find("POST", f"{ADMIN}/p-1/icon").files["file"]
    assert (icon.filename, icon.content_type, icon.content) == ("icon.png", "image/png", PNG)
    assert "Published: demo-plugin 1.0.0" in result.stdout


def test_developer_publish_says_it_waits_for_review(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    developer_new(fake)
    result = invoke(["publish", str(make_plugin(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "Submitted for review: demo-plugin 1.0.0" in result.stdout
    assert "waiting for review" in result.stdout


def test_admin_updates_an_existing_plugin_found_by_exact_key(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, icon="puzzle", repository="https://git.example/demo")
    as_admin(fake)
    other = {"id": "p-9", "pluginKey": "demo-plugin-extra", "type": "mcp"}
    fake.ok("GET", ADMIN, admin_list(other, plugin()))
    fake.ok("GET", f"{ADMIN}/p-1/versions", {"items": []})
    fake.ok("PUT", f"{ADMIN}/p-1", plugin())
    fake.ok("POST", f"{ADMIN}/p-1/upload", {"id": "v-2"}, status=201)
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 0, result.output
    assert fake.writes() == [("PUT", f"{ADMIN}/p-1"), ("POST", f"{ADMIN}/p-1/upload")]
    assert fake.find("PUT", f"{ADMIN}/p-1").json == {
        "name": "Demo Plugin",
        "nameZh": "演示插件",
        "description": "A demo plugin",
        "descriptionZh": "A demo plugin",
        "category": "productivity",
        "repository": "https://git.example/demo",
        "icon": "puzzle",
    }
    assert fake.find("POST", f"{ADMIN}/p-1/upload").form == {"version": "1.0.0"}


def test_admin_lookup_pages_through_search_results(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    as_admin(fake)
    near = [{"id": f"x{i}", "pluginKey": f"demo-plugin-{i}", "type": "tool"} for i in range(100)]
    fake.on(
        "GET",
        ADMIN,
        httpx.Response(200, json={"success": True, "data": admin_list(*near, total=101)}),
        httpx.Response(200, json={"success": True, "data": admin_list(plugin(), total=101)}),
    )
    fake.ok("GET", f"{ADMIN}/p-1/versions", {"items": []})
    fake.ok("PUT", f"{ADMIN}/p-1", plugin())
    fake.ok("POST", f"{ADMIN}/p-1/upload", {}, status=201)
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 0, result.output
    pages = [r.params["page"] for r in fake.requests if r.path == ADMIN and r.method == "GET"]
    assert pages == ["1", "2"]


def test_developer_publishes_through_the_developer_group(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, icon="puzzle", platforms=["linux"])
    developer_new(fake)
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 0, result.output
    assert fake.calls() == [
        ME,
        PUBLIC_CATEGORIES,
        LIMITS,
        ("GET", f"{DEV}/demo-plugin"),
        ("POST", f"{DEV}/publish"),
        ("POST", f"{DEV}/p-1/upload-version"),
    ]
    assert fake.find("POST", f"{DEV}/publish").json == {
        "pluginKey": "demo-plugin",
        "name": "Demo Plugin",
        "nameZh": "演示插件",
        "description": "A demo plugin",
        "descriptionZh": "A demo plugin",
        "type": "tool",
        "category": "productivity",
    }


def test_developer_update_sends_only_the_fields_the_service_accepts(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(
        tmp_path, icon="puzzle", platforms=["linux"], tags=["a"], license="MIT", autoConnect=True
    )
    as_developer(fake)
    fake.ok("GET", f"{DEV}/demo-plugin", plugin(versions=[{"version": "0.9.0"}]))
    fake.ok("PUT", f"{DEV}/p-1", plugin())
    fake.ok("POST", f"{DEV}/p-1/upload-version", {}, status=201)
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 0, result.output
    body = fake.find("PUT", f"{DEV}/p-1").json
    assert set(body) <= DEV_PUT_FIELDS
    assert body["platforms"] == ["linux"]
    assert body["tags"] == ["a"]


def test_config_only_plugin_creates_its_version_directly(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    mcp = {"command": "npx", "args": ["-y", "some-server"]}
    directory = make_plugin(tmp_path, main="", type="mcp", mcp=mcp)
    admin_new(fake)
    fake.ok("POST", f"{ADMIN}/p-1/create-version", {"id": "v-1"}, status=201)
    result = invoke(["publish", str(directory), "--changelog", "cfg"])
    assert result.exit_code == 0, result.output
    assert fake.writes() == [("POST", ADMIN), ("POST", f"{ADMIN}/p-1/create-version")]
    manifest = json.loads((directory / "manifest.json").read_text())
    assert fake.find("POST", f"{ADMIN}/p-1/create-version").json == {
        "version": "1.0.0",
        "changelog": "cfg",
        "manifest": manifest,
    }


@pytest.mark.parametrize(
    "failure",
    [
        error(500, "INTERNAL_ERROR", "Internal server error"),
        error(503, "HTTP_503", "storage unavailable"),
        httpx.ConnectError("connection refused"),
    ],
    ids=["500", "503", "connect-error"],
)
def test_failed_package_upload_falls_back_to_inline_code(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, failure: httpx.Response | Exception
) -> None:
    directory = make_plugin(tmp_path, files={"ui.js": "render()"}, **UI_MANIFEST)
    admin_new(fake)
    fake.on("POST", f"{ADMIN}/p-1/upload", failure)
    fake.ok("POST", f"{ADMIN}/p-1/create-version", {"id": "v-1"}, status=201)
    result = invoke(["publish", str(directory), "--json"])
    assert result.exit_code == 0, result.output
    assert fake.writes() == [
        ("POST", ADMIN),
        ("POST", f"{ADMIN}/p-1/upload"),
        ("POST", f"{ADMIN}/p-1/create-version"),
    ]
    body = fake.find("POST", f"{ADMIN}/p-1/create-version").json
    assert body["version"] == "1.0.0"
    assert body["manifest"]["inlineCode"] == "export default () => 42;\n"
    assert body["manifest"]["inlineUiCode"] == "render()"
    assert body["manifest"]["id"] == "demo-plugin"
    assert stdout_json(result)["data"]["distribution"] == "inline"
    assert "package upload failed" in result.stderr


def test_content_errors_do_not_fall_back(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    directory = make_plugin(tmp_path)
    admin_new(fake)
    message = "manifest.id does not match plugin.pluginKey"
    fake.on("POST", f"{ADMIN}/p-1/upload", error(400, "PLUGIN_PACKAGE_INVALID", message))
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line == f"error: PLUGIN_PACKAGE_INVALID: {message} (HTTP 400)"
    assert ("POST", f"{ADMIN}/p-1/create-version") not in fake.calls()


def existing_admin(fake: FakeApi, **version: Any) -> None:
    """demo-plugin exists with version 1.0.0 as given."""
    as_admin(fake)
    fake.ok("GET", ADMIN, admin_list(plugin()))
    fake.ok("GET", f"{ADMIN}/p-1/versions", {"items": [{"version": "1.0.0", **version}]})


def local_sha256(directory: Path) -> str:
    with tempfile.TemporaryDirectory() as temp:
        return pack(directory, Path(temp) / "p.tar.gz").sha256


def test_existing_identical_version_is_up_to_date_without_any_write(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    sha = local_sha256(directory)
    existing_admin(fake, sha256=sha, distribution="tarball")
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        f"Up to date: demo-plugin 1.0.0: already published, identical (sha256 {sha})"
    )
    assert fake.writes() == []


@pytest.mark.parametrize(
    ("status", "said"), [("rejected", "was rejected"), ("taken_down", "was taken down")]
)
def test_an_identical_version_that_will_never_be_served_is_not_up_to_date(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, status: str, said: str
) -> None:
    directory = make_plugin(tmp_path)
    sha = local_sha256(directory)
    existing_admin(
        fake, sha256=sha, distribution="tarball", reviewStatus=status, reviewNote="bad\n icon"
    )
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: PLUGIN_VERSION_EXISTS: version 1.0.0 exists and {said} (bad icon): "
        "raise the version"
    )
    assert fake.writes() == []


def test_an_identical_pending_version_says_it_waits_for_review(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    sha = local_sha256(directory)
    existing_admin(fake, sha256=sha, distribution="tarball", reviewStatus="pending")
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        f"Up to date: demo-plugin 1.0.0: already published, identical (sha256 {sha}), "
        "waiting for review"
    )


def test_a_folder_the_service_would_refuse_is_refused_before_any_write(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    (directory / "Index.js").write_text("x")
    if not (directory / "index.js").exists() or len(list(directory.glob("[iI]ndex.js"))) < 2:
        pytest.skip("a case-insensitive file system cannot hold both names")
    existing_admin(fake, sha256="ab" * 32, distribution="tarball")
    result = invoke(["publish", str(directory), "--version", "1.0.1"])
    assert result.exit_code == 1
    assert "names that differ only in case: Index.js and index.js" in result.stderr
    assert fake.writes() == []


def test_existing_version_with_other_content_is_refused_before_any_write(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    existing_admin(fake, sha256="ab" * 32, distribution="tarball")
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: PLUGIN_VERSION_EXISTS: version 1.0.0 exists with different content: raise the "
        f"version (the service has sha256 {'ab' * 32}, the local package is "
        f"{local_sha256(directory)})"
    )
    assert fake.writes() == []


def test_skip_existing_skips_a_different_existing_version_and_says_so(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    existing_admin(fake, sha256="ab" * 32, distribution="tarball")
    result = invoke(["publish", str(directory), "--skip-existing"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        "Skipped: demo-plugin 1.0.0: version 1.0.0 exists with different content: "
        "raise the version (skipped)"
    )
    assert "warning: demo-plugin: version 1.0.0 exists with different content" in result.stderr
    assert fake.writes() == []


def test_existing_config_only_version_is_compared_by_manifest(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, main="", type="mcp", mcp={"command": "node"})
    manifest = json.loads((directory / "manifest.json").read_text())
    existing_admin(fake, sha256=None, distribution="config_only", manifest=manifest)
    fake.ok("GET", ADMIN, admin_list(plugin(type="mcp")))
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 0, result.output
    assert "already published, identical" in result.stdout
    manifest["description"] = "changed"
    (directory / "manifest.json").write_text(json.dumps(manifest))
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert "version 1.0.0 exists with different content: raise the version" in result.stderr
    assert fake.writes() == []


def test_version_created_meanwhile_is_judged_like_an_existing_one(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    sha = local_sha256(directory)
    as_admin(fake)
    fake.ok("GET", ADMIN, admin_list(plugin()))
    fake.on(
        "GET",
        f"{ADMIN}/p-1/versions",
        httpx.Response(200, json={"success": True, "data": {"items": []}}),
        httpx.Response(
            200,
            json={"success": True, "data": {"items": [{"version": "1.0.0", "sha256": sha}]}},
        ),
    )
    fake.ok("PUT", f"{ADMIN}/p-1", plugin())
    fake.on("POST", f"{ADMIN}/p-1/upload", error(409, "PLUGIN_VERSION_EXISTS", "exists"))
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 0, result.output
    assert "Up to date: demo-plugin 1.0.0: already published, identical" in result.stdout


REJECTED = {
    "id": "v-1",
    "version": "1.0.0",
    "reviewStatus": "rejected",
    "reviewNote": "Automatic validation failed:\n- finding one\n- finding two",
}


def test_version_rejected_on_arrival_is_a_failure(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, files={"icon/icon.png": PNG}, icon="icon/icon.png")
    admin_new(fake)
    fake.ok("POST", f"{ADMIN}/p-1/upload", REJECTED, status=201)
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: VERSION_REJECTED: the service rejected version 1.0.0 on arrival: "
        "Automatic validation failed: finding one; finding two"
    )
    assert "Published" not in result.stdout
    assert ("POST", f"{ADMIN}/p-1/icon") not in fake.calls()


def test_config_only_version_rejected_on_arrival_fails_the_batch(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    make_plugin(tmp_path, main="", type="mcp", mcp={"command": "node"})
    as_admin(fake)
    fake.ok("GET", ADMIN, admin_list())
    fake.ok("POST", ADMIN, plugin(), status=201)
    fake.ok("POST", f"{ADMIN}/p-1/create-version", REJECTED, status=201)
    result = invoke(["publish-batch", str(tmp_path), "--json"])
    assert result.exit_code == 1
    [outcome] = stdout_json(result)["data"]["results"]
    assert outcome["status"] == "failed"
    assert outcome["error"]["code"] == "VERSION_REJECTED"
    assert outcome["error"]["details"] == {
        "versionId": "v-1",
        "reviewNote": REJECTED["reviewNote"],
    }


def test_unknown_category_is_refused_before_any_write(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, category="gardening")
    as_admin(fake)
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert 'PLUGIN_INVALID_CATEGORY: Invalid category "gardening"' in result.stderr
    assert fake.calls() == [ME, ADMIN_CATEGORIES, LIMITS]


def test_unknown_category_is_listed_with_the_other_manifest_problems(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, category="gardening", version="one")
    as_admin(fake)
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "error: MANIFEST_INVALID: manifest.json has 2 problems"
    assert any(line.startswith("  - version: ") for line in lines[1:])
    assert (
        '  - category: Invalid category "gardening" (the service knows: development, '
        "productivity, utility)"
    ) in lines
    assert fake.writes() == []


def test_type_change_needs_allow_recreate(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    directory = make_plugin(tmp_path, type="skill")
    as_admin(fake)
    fake.ok("GET", ADMIN, admin_list(plugin(type="tool")))
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert "PLUGIN_TYPE_CHANGED: type tool -> skill" in result.stderr
    assert fake.writes() == []


def test_admin_allow_recreate_deletes_then_creates(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, type="skill")
    admin_new(fake)
    fake.ok("GET", ADMIN, admin_list(plugin(id="old-1", type="tool")))
    fake.ok("DELETE", f"{ADMIN}/old-1", {"id": "old-1"})
    result = invoke(["publish", str(directory), "--allow-recreate"])
    assert result.exit_code == 0, result.output
    assert fake.writes() == [
        ("DELETE", f"{ADMIN}/old-1"),
        ("POST", ADMIN),
        ("POST", f"{ADMIN}/p-1/upload"),
    ]
    assert fake.find("POST", ADMIN).json["type"] == "skill"


def test_developer_cannot_recreate(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    directory = make_plugin(tmp_path, type="skill")
    as_developer(fake)
    fake.ok("GET", f"{DEV}/demo-plugin", plugin(type="tool"))
    result = invoke(["publish", str(directory), "--allow-recreate"])
    assert result.exit_code == 1
    assert "only an administrator" in result.stderr
    assert fake.writes() == []


def test_version_option_rewrites_the_manifest_inside_the_package(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    admin_new(fake)
    result = invoke(["publish", str(directory), "--version", "2.1.0"])
    assert result.exit_code == 0, result.output
    upload = fake.find("POST", f"{ADMIN}/p-1/upload")
    assert upload.form["version"] == "2.1.0"
    assert upload.files["file"].filename == "demo-plugin-2.1.0.tar.gz"
    assert packaged_manifest(upload.files["file"].content)["version"] == "2.1.0"
    assert json.loads((directory / "manifest.json").read_text())["version"] == "1.0.0"


def test_direct_creates_an_inline_version_without_upload(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    admin_new(fake)
    fake.ok("POST", f"{ADMIN}/p-1/create-version", {"id": "v-1"}, status=201)
    result = invoke(["publish", str(directory), "--direct"])
    assert result.exit_code == 0, result.output
    assert fake.writes() == [("POST", ADMIN), ("POST", f"{ADMIN}/p-1/create-version")]
    manifest = fake.find("POST", f"{ADMIN}/p-1/create-version").json["manifest"]
    assert manifest["inlineCode"] == "export default () => 42;\n"
    assert "inlineUiCode" not in manifest


@pytest.mark.parametrize("upload_status", [201, 400, 500])
def test_temporary_files_are_removed_whatever_happens(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    monkeypatch: pytest.MonkeyPatch,
    upload_status: int,
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    directory = make_plugin(tmp_path)
    admin_new(fake)
    if upload_status != 201:
        fake.on("POST", f"{ADMIN}/p-1/upload", error(upload_status, "SOME_ERROR"))
        fake.on("POST", f"{ADMIN}/p-1/create-version", error(upload_status, "SOME_ERROR"))
    result = invoke(["publish", str(directory)])
    assert result.exit_code == (0 if upload_status == 201 else 1)
    assert ("POST", f"{ADMIN}/p-1/upload") in fake.calls()
    assert list(temp.iterdir()) == []
    assert sorted(p.name for p in directory.iterdir()) == ["index.js", "manifest.json"]


def test_json_output_for_success_and_failure(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    directory = make_plugin(tmp_path)
    admin_new(fake)
    ok = invoke(["publish", str(directory), "--json"])
    document = stdout_json(ok)
    assert document["success"] is True
    data = document["data"]
    assert (data["status"], data["distribution"], data["pluginId"], data["group"]) == (
        "published",
        "tarball",
        "p-1",
        "admin",
    )
    assert len(data["sha256"]) == 64
    fake.on("POST", f"{ADMIN}/p-1/upload", error(413, "PLUGIN_PACKAGE_TOO_LARGE", "too large"))
    failed = invoke(["publish", str(directory), "--json"])
    assert failed.exit_code == 1
    assert stdout_json(failed) == {
        "success": False,
        "error": {
            "code": "PLUGIN_PACKAGE_TOO_LARGE",
            "message": "too large",
            "details": {},
            "status": 413,
        },
    }


def test_unverified_developer_gets_the_service_error(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    developer_new(fake)
    fake.on(
        "POST",
        f"{DEV}/publish",
        error(403, "DEVELOPER_NOT_VERIFIED", "Developer identity is not verified"),
    )
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "error: DEVELOPER_NOT_VERIFIED: Developer identity is not verified (HTTP 403)"
    )


# Nothing lost, nothing half done: the checks before the first write


def test_direct_refuses_a_folder_whose_files_the_inline_form_would_drop(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, files={"helper.js": "h", "data.bin": b"\x00\x01"})
    as_admin(fake)
    fake.ok("GET", ADMIN, admin_list())
    result = invoke(["publish", str(directory), "--direct"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: INLINE_WOULD_DROP_FILES: --direct: an inline-code version carries only "
        "manifest.json, index.js; it would drop 2 files: data.bin, helper.js"
    )
    assert fake.writes() == []


def test_direct_counts_the_ui_entry_and_a_local_icon_as_carried(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    files: dict[str, str | bytes] = {"ui.js": "render()", "icon.png": PNG}
    directory = make_plugin(tmp_path, files=files, icon="icon.png", **UI_MANIFEST)
    admin_new(fake)
    fake.ok("POST", f"{ADMIN}/p-1/create-version", {"id": "v-1"}, status=201)
    fake.ok("POST", f"{ADMIN}/p-1/icon", plugin())
    result = invoke(["publish", str(directory), "--direct"])
    assert result.exit_code == 0, result.output
    assert fake.writes() == [
        ("POST", ADMIN),
        ("POST", f"{ADMIN}/p-1/create-version"),
        ("POST", f"{ADMIN}/p-1/icon"),
    ]


def test_inline_fallback_refuses_when_it_would_drop_files(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, files={"helper.js": "h", "data.bin": b"\x00"})
    admin_new(fake)
    fake.on("POST", f"{ADMIN}/p-1/upload", error(500, "INTERNAL_ERROR", "Internal server error"))
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: INLINE_WOULD_DROP_FILES: package upload failed (INTERNAL_ERROR: Internal server "
        "error (HTTP 500)) and the inline-code fallback would lose files; nothing was "
        "published: an inline-code version carries only manifest.json, index.js; it would "
        "drop 2 files: data.bin, helper.js"
    )
    assert ("POST", f"{ADMIN}/p-1/create-version") not in fake.calls()
    assert "Published" not in result.stdout


def test_bad_icon_content_is_refused_before_any_write(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, files={"icon.png": b"not a png"}, icon="icon.png")
    admin_new(fake)
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: PLUGIN_ICON_INVALID: icon.png: Icon must be a png, jpeg, svg or webp image"
    )
    assert fake.writes() == []


def test_icon_over_the_services_limit_is_refused_before_any_write(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, files={"icon.png": PNG}, icon="icon.png")
    as_admin(fake)
    serve_limits(fake, icon=64)  # the service's own, lower than the contract's 256 KiB
    fake.ok("GET", ADMIN, admin_list())
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: PLUGIN_ICON_TOO_LARGE: icon.png is {len(PNG)} B ({len(PNG)} bytes), over the "
        "service's icon limit of 64 B (64 bytes)"
    )
    assert fake.writes() == []


def test_package_over_the_services_limit_is_refused_before_upload(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, files={"data.bin": os.urandom(4096)})
    as_admin(fake)
    serve_limits(fake, package=1024)
    fake.ok("GET", ADMIN, admin_list())
    result = invoke(["publish", str(directory), "--json"])
    assert result.exit_code == 1
    error_doc = stdout_json(result)["error"]
    assert error_doc["code"] == "PLUGIN_PACKAGE_TOO_LARGE"
    size = error_doc["details"]["size"]
    assert error_doc["details"] == {"limit": 1024, "size": size}
    assert size > 4096
    assert error_doc["message"] == (
        f"the package is {size / 1024:.1f} KiB ({size} bytes), over the service's limit of "
        "1.0 KiB (1024 bytes); nothing was uploaded"
    )
    assert fake.writes() == []


def test_server_without_limits_endpoint_is_still_published_to(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    admin_new(fake)
    fake.on("GET", LIMITS[1], error(404, "NOT_FOUND", "Not found"))
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 0, result.output


def test_dry_run_lists_every_packed_file_with_its_size_and_writes_nothing(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, files={"lib/a.js": "a" * 2000, ".env": "SECRET=1"})
    as_admin(fake)
    fake.ok("GET", ADMIN, admin_list())
    result = invoke(["publish", str(directory), "--dry-run"])
    assert result.exit_code == 0, result.output
    manifest_size = (directory / "manifest.json").stat().st_size
    total = 2000 + 25 + manifest_size
    lines = result.stdout.splitlines()
    assert lines[0] == "Dry run: demo-plugin 1.0.0: would publish 1.0.0 (tarball)"
    assert [line.split()[-1] for line in lines[1:4]] == ["index.js", "lib/a.js", "manifest.json"]
    assert "  2.0 KiB  lib/a.js" in lines
    assert lines[4] == f"  3 files, {total / 1024:.1f} KiB ({total} bytes)"
    assert "not packed, as they usually hold secrets: .env" in result.stderr
    assert fake.writes() == []


def test_config_only_publish_names_the_files_it_does_not_send(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    files: dict[str, str | bytes] = {"README.md": "# demo\n", "icon.png": PNG}
    directory = make_plugin(
        tmp_path, main="", type="mcp", mcp={"command": "node"}, icon="icon.png", files=files
    )
    as_admin(fake)
    fake.ok("GET", ADMIN, admin_list())
    fake.ok("POST", ADMIN, plugin(type="mcp"), status=201)
    fake.ok("POST", f"{ADMIN}/p-1/create-version", {"id": "v-1"}, status=201)
    fake.ok("POST", f"{ADMIN}/p-1/icon", plugin())
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 0, result.output
    assert (
        "warning: demo-plugin: a configuration-only version is its manifest; not sent: "
        "README.md, index.js"
    ) in result.stderr


def test_identical_existing_version_does_not_judge_the_icon_it_will_not_send(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, files={"icon.png": b"not an image"}, icon="icon.png")
    existing_admin(fake, sha256=local_sha256(directory), distribution="tarball")
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 0, result.output
    assert "already published, identical" in result.stdout
    assert fake.writes() == []
