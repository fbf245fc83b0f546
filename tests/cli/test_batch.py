from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from .fake_api import FakeApi, envelope, error
from .helpers import Invoke, as_admin, as_developer, make_plugin, stdout_json

ADMIN = "/api/v1/admin/plugins"
DEV = "/api/v1/developer/plugins"


class AdminService:
    """Enough of the admin group to publish several plugins."""

    def __init__(self, fake: FakeApi, remote: list[dict[str, Any]]) -> None:
        self.remote = remote
        as_admin(fake)
        fake.on("GET", ADMIN, self.search)
        fake.on("POST", ADMIN, self.create)

    def search(self, request: httpx.Request) -> httpx.Response:
        key = request.url.params["search"]
        items = [p for p in self.remote if key in p["pluginKey"]]
        return envelope({"items": items, "total": len(items), "page": 1, "limit": 100})

    def create(self, request: httpx.Request) -> httpx.Response:
        key = json.loads(request.content)["pluginKey"]
        return envelope({"id": f"id-{key}", "pluginKey": key, "type": "tool"}, 201)


def remote(key: str, kind: str = "tool") -> dict[str, Any]:
    return {"id": f"old-{key}", "pluginKey": key, "type": kind}


def test_batch_publishes_every_folder_and_summarises(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    make_plugin(tmp_path, "alpha")
    make_plugin(tmp_path, "beta")
    make_plugin(tmp_path, "gamma", version="not-semver")
    make_plugin(tmp_path, "delta", type="skill")
    (tmp_path / "not-a-plugin").mkdir()
    AdminService(fake, [remote("beta"), remote("delta", "tool")])
    fake.ok("POST", f"{ADMIN}/id-alpha/upload", {}, 201)
    fake.ok("PUT", f"{ADMIN}/old-beta", {})
    fake.on("POST", f"{ADMIN}/old-beta/upload", error(409, "PLUGIN_VERSION_EXISTS", "exists"))
    fake.ok("DELETE", f"{ADMIN}/old-delta", {})
    fake.ok("POST", f"{ADMIN}/id-delta/upload", {}, 201)
    result = invoke(["publish-batch", str(tmp_path)])
    assert result.exit_code == 1
    assert fake.writes() == [
        ("POST", ADMIN),
        ("POST", f"{ADMIN}/id-alpha/upload"),
        ("PUT", f"{ADMIN}/old-beta"),
        ("POST", f"{ADMIN}/old-beta/upload"),
        ("DELETE", f"{ADMIN}/old-delta"),
        ("POST", ADMIN),
        ("POST", f"{ADMIN}/id-delta/upload"),
    ]
    assert fake.calls().count(("GET", "/api/v1/auth/me")) == 1
    assert "2 published, 1 skipped, 1 failed" in result.stdout
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert "skipped" in rows["beta"]
    assert "up to date" in rows["beta"]
    assert "failed" in rows["gamma"]
    assert "MANIFEST_INVALID" in rows["gamma"]
    assert "published" in rows["delta"]


def test_only_and_skip_choose_the_plugins(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    for key in ("alpha", "beta", "gamma"):
        make_plugin(tmp_path, key)
    AdminService(fake, [])
    for key in ("alpha", "beta", "gamma"):
        fake.ok("POST", f"{ADMIN}/id-{key}/upload", {}, 201)
    result = invoke(
        ["publish-batch", str(tmp_path), "--only", "alpha, beta", "--skip", "beta", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert [r["pluginKey"] for r in stdout_json(result)["data"]["results"]] == ["alpha"]
    assert fake.writes() == [("POST", ADMIN), ("POST", f"{ADMIN}/id-alpha/upload")]


def test_only_matches_folder_names_and_reports_unknown_names(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    make_plugin(tmp_path, "alpha", folder="alpha-folder")
    AdminService(fake, [])
    fake.ok("POST", f"{ADMIN}/id-alpha/upload", {}, 201)
    result = invoke(["publish-batch", str(tmp_path), "--only", "alpha-folder,typo", "--json"])
    assert result.exit_code == 1
    document = stdout_json(result)
    results = {r["pluginKey"]: r for r in document["data"]["results"]}
    assert results["alpha"]["status"] == "published"
    assert results["typo"]["status"] == "failed"
    assert results["typo"]["error"]["code"] == "PLUGIN_FOLDER_NOT_FOUND"
    assert document["error"]["code"] == "BATCH_FAILED"
    assert document["data"]["counts"] == {"published": 1, "skipped": 0, "planned": 0, "failed": 1}


def test_dry_run_reads_but_never_writes(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    make_plugin(tmp_path, "alpha")
    make_plugin(tmp_path, "beta")
    make_plugin(tmp_path, "delta", type="skill")
    make_plugin(tmp_path, "omega", version="2.0.0", main="", mcp={"command": "x"})
    AdminService(fake, [remote("beta"), remote("delta"), remote("omega")])
    fake.ok("GET", f"{ADMIN}/old-beta/versions", {"items": [{"version": "1.0.0"}]})
    fake.ok("GET", f"{ADMIN}/old-omega/versions", {"items": [{"version": "1.0.0"}]})
    result = invoke(["publish-batch", str(tmp_path), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    assert fake.writes() == []
    results = {r["pluginKey"]: r for r in stdout_json(result)["data"]["results"]}
    assert results["alpha"]["status"] == "planned"
    assert results["alpha"]["actions"][0] == "would create plugin (admin group)"
    assert len(results["alpha"]["sha256"]) == 64
    assert results["beta"]["status"] == "skipped"
    assert results["delta"]["actions"][0] == "would delete and recreate plugin (type tool -> skill)"
    assert results["omega"]["distribution"] == "config_only"


def test_direct_uses_inline_code_without_object_storage(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    make_plugin(tmp_path, "alpha")
    make_plugin(tmp_path, "beta", main="", mcp={"command": "node"})
    AdminService(fake, [])
    for key in ("alpha", "beta"):
        fake.ok("POST", f"{ADMIN}/id-{key}/create-version", {}, 201)
    result = invoke(["publish-batch", str(tmp_path), "--direct", "--changelog", "bulk"])
    assert result.exit_code == 0, result.output
    assert not [call for call in fake.calls() if call[1].endswith("/upload")]
    alpha = fake.find("POST", f"{ADMIN}/id-alpha/create-version").json
    assert alpha["changelog"] == "bulk"
    assert alpha["manifest"]["inlineCode"] == "export default () => 42;\n"
    beta = fake.find("POST", f"{ADMIN}/id-beta/create-version").json
    assert "inlineCode" not in beta["manifest"]


def test_developer_batch_cannot_recreate_a_changed_type(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    make_plugin(tmp_path, "alpha", type="skill")
    as_developer(fake)
    fake.ok("GET", f"{DEV}/alpha", {"id": "a-1", "pluginKey": "alpha", "type": "tool"})
    result = invoke(["publish-batch", str(tmp_path), "--json"])
    assert result.exit_code == 1
    [outcome] = stdout_json(result)["data"]["results"]
    assert outcome["error"]["code"] == "PLUGIN_TYPE_CHANGED"
    assert fake.writes() == []


def test_a_failure_before_any_plugin_stops_the_batch(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    make_plugin(tmp_path, "alpha")
    fake.on("GET", "/api/v1/auth/me", error(401, "UNAUTHORIZED", "Token expired"))
    result = invoke(["publish-batch", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "error: UNAUTHORIZED: Token expired; run `marketplace login`, or pass a new token with "
        "--token or MARKETPLACE_TOKEN (HTTP 401)"
    )
