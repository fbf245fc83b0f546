from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import httpx

from marketplace_client.pack import pack

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


def remote(key: str, kind: str = "tool", owner: str | None = None) -> dict[str, Any]:
    return {"id": f"old-{key}", "pluginKey": key, "type": kind, "ownerId": owner}


def sha256_of(folder: Path) -> str:
    with tempfile.TemporaryDirectory() as temp:
        return pack(folder, Path(temp) / "p.tar.gz").sha256


def test_batch_publishes_every_folder_and_summarises(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    make_plugin(tmp_path, "alpha")
    beta = make_plugin(tmp_path, "beta")
    make_plugin(tmp_path, "gamma", version="not-semver")
    make_plugin(tmp_path, "delta", type="skill")
    (tmp_path / "not-a-plugin").mkdir()
    AdminService(fake, [remote("beta"), remote("delta", "tool")])
    fake.ok("POST", f"{ADMIN}/id-alpha/upload", {}, 201)
    existing = {"version": "1.0.0", "sha256": sha256_of(beta), "distribution": "tarball"}
    fake.ok("GET", f"{ADMIN}/old-beta/versions", {"items": [existing]})
    fake.ok("DELETE", f"{ADMIN}/old-delta", {})
    fake.ok("POST", f"{ADMIN}/id-delta/upload", {}, 201)
    result = invoke(["publish-batch", str(tmp_path)])
    assert result.exit_code == 1
    assert fake.writes() == [
        ("POST", ADMIN),
        ("POST", f"{ADMIN}/id-alpha/upload"),
        ("DELETE", f"{ADMIN}/old-delta"),
        ("POST", ADMIN),
        ("POST", f"{ADMIN}/id-delta/upload"),
    ]
    assert fake.calls().count(("GET", "/api/v1/auth/me")) == 1
    assert "2 published, 1 skipped, 1 failed" in result.stdout
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert "skipped" in rows["beta"]
    assert "already published, identical" in rows["beta"]
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
    beta = make_plugin(tmp_path, "beta")
    make_plugin(tmp_path, "delta", type="skill")
    make_plugin(tmp_path, "omega", version="2.0.0", main="", mcp={"command": "x"})
    AdminService(fake, [remote("beta"), remote("delta"), remote("omega")])
    existing = {"version": "1.0.0", "sha256": sha256_of(beta)}
    fake.ok("GET", f"{ADMIN}/old-beta/versions", {"items": [existing]})
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
    assert results["delta"]["detail"] == (
        "would delete and recreate (type tool -> skill), then would publish 1.0.0 (tarball)"
    )
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


def test_type_change_of_a_plugin_owned_by_another_account_fails_and_deletes_nothing(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    make_plugin(tmp_path, "theirs", type="skill")
    make_plugin(tmp_path, "mine", type="skill")
    AdminService(fake, [remote("theirs", owner="dev-7"), remote("mine", owner="u1")])
    fake.ok("DELETE", f"{ADMIN}/old-mine", {})
    fake.ok("POST", f"{ADMIN}/id-mine/upload", {}, 201)
    result = invoke(["publish-batch", str(tmp_path), "--json"])
    assert result.exit_code == 1
    assert fake.writes() == [
        ("DELETE", f"{ADMIN}/old-mine"),
        ("POST", ADMIN),
        ("POST", f"{ADMIN}/id-mine/upload"),
    ]
    results = {r["pluginKey"]: r for r in stdout_json(result)["data"]["results"]}
    assert results["mine"]["status"] == "published"
    assert results["theirs"]["status"] == "failed"
    assert results["theirs"]["detail"] == (
        "PLUGIN_NOT_OWNED: type tool -> skill: the plugin belongs to another account "
        "(owner dev-7); it is not deleted and recreated: nothing was changed"
    )


def test_dry_run_says_which_plugins_would_be_deleted_and_recreated(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    make_plugin(tmp_path, "theirs", type="skill")
    make_plugin(tmp_path, "mine", type="skill")
    AdminService(fake, [remote("theirs", owner="dev-7"), remote("mine", owner="u1")])
    result = invoke(["publish-batch", str(tmp_path), "--dry-run"])
    assert result.exit_code == 1
    assert fake.writes() == []
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert "would delete and recreate (type tool -> skill)" in rows["mine"]
    assert "failed" in rows["theirs"]
    assert "PLUGIN_NOT_OWNED" in rows["theirs"]


def test_batch_skips_a_changed_existing_version_by_default_and_fails_it_when_asked(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    # Seed, batch behaviour: an existing version is not an error; the changed content is
    # still named. --no-skip-existing makes it one.
    make_plugin(tmp_path, "beta")
    AdminService(fake, [remote("beta")])
    other = {"version": "1.0.0", "sha256": "ab" * 32, "distribution": "tarball"}
    fake.ok("GET", f"{ADMIN}/old-beta/versions", {"items": [other]})
    skipped = invoke(["publish-batch", str(tmp_path), "--json"])
    assert skipped.exit_code == 0, skipped.output
    [outcome] = stdout_json(skipped)["data"]["results"]
    assert (outcome["status"], outcome["detail"]) == (
        "skipped",
        "version 1.0.0 exists with different content: raise the version (skipped)",
    )
    failed = invoke(["publish-batch", str(tmp_path), "--no-skip-existing", "--json"])
    assert failed.exit_code == 1
    [outcome] = stdout_json(failed)["data"]["results"]
    assert (outcome["version"], outcome["error"]["code"]) == ("1.0.0", "PLUGIN_VERSION_EXISTS")
    assert "exists with different content: raise the version" in outcome["detail"]
    assert fake.writes() == []
