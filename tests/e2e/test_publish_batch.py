"""`marketplace publish-batch ROOT` against a live server, checked by reading the server back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.market import Market, write_plugin

pytestmark = pytest.mark.e2e

MCP = {"command": "node", "args": ["server.js"]}


def _counts_line(stdout: str) -> str:
    """The last line of the human summary, e.g. `2 published, 1 skipped, 0 failed`."""
    return stdout.strip().splitlines()[-1]


def _results(stdout: str) -> dict[str, dict[str, Any]]:
    document = json.loads(stdout)
    return {r["pluginKey"]: r for r in document["data"]["results"]}


def _state(market: Market, *keys: str) -> dict[str, Any]:
    """What the server holds for these plugins: the record and its versions (or None)."""
    state: dict[str, Any] = {}
    for key in keys:
        plugin = market.find_plugin(key)
        state[key] = plugin and (plugin, market.versions(plugin["id"]))
    return state


def test_batch_publishes_every_plugin_folder_and_prints_a_summary(
    market: Market, tmp_path: Path
) -> None:
    write_plugin(tmp_path, "batch-tarball")
    write_plugin(tmp_path, "batch-config", main="", type="mcp", mcp=MCP)
    (tmp_path / "not-a-plugin").mkdir()
    (tmp_path / "not-a-plugin" / "notes.txt").write_text("no manifest here\n")

    result = market.as_admin("publish-batch", str(tmp_path))

    assert result.returncode == 0, result.stderr
    assert "publish-batch summary" in result.stdout
    assert "batch-tarball" in result.stdout and "batch-config" in result.stdout
    assert _counts_line(result.stdout) == "2 published, 0 failed"
    assert market.version("batch-tarball", "1.0.0")["distribution"] == "tarball"
    assert market.version("batch-config", "1.0.0")["distribution"] == "config_only"
    assert market.find_plugin("not-a-plugin") is None


def test_batch_only_and_skip_choose_plugins_by_id_or_folder_name(
    market: Market, tmp_path: Path
) -> None:
    write_plugin(tmp_path, "pick-one")
    write_plugin(tmp_path, "pick-two")
    write_plugin(tmp_path, "pick-three", folder="third-folder")
    write_plugin(tmp_path, "pick-four")

    result = market.as_admin(
        "publish-batch", str(tmp_path), "--only", "pick-one,third-folder,pick-four",
        "--skip", "pick-four", "--json",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    results = _results(result.stdout)
    assert sorted(results) == ["pick-one", "pick-three"]
    assert {r["status"] for r in results.values()} == {"published"}
    assert market.find_plugin("pick-one") is not None
    assert market.find_plugin("pick-three") is not None
    assert market.find_plugin("pick-two") is None
    assert market.find_plugin("pick-four") is None


def test_batch_only_naming_no_folder_is_a_failure(market: Market, tmp_path: Path) -> None:
    write_plugin(tmp_path, "only-real")

    result = market.as_admin("publish-batch", str(tmp_path), "--only", "only-real,only-ghost")

    assert result.returncode == 1
    assert "PLUGIN_FOLDER_NOT_FOUND" in result.stdout
    assert _counts_line(result.stdout) == "1 published, 1 failed"
    assert market.find_plugin("only-real") is not None


def test_batch_dry_run_reports_the_plan_and_changes_nothing(market: Market, tmp_path: Path) -> None:
    write_plugin(tmp_path, "dry-existing")
    write_plugin(tmp_path, "dry-retyped")
    assert market.as_admin("publish-batch", str(tmp_path)).returncode == 0
    write_plugin(tmp_path, "dry-existing", version="1.1.0")
    write_plugin(tmp_path, "dry-retyped", version="2.0.0", type="mcp", mcp=MCP)
    write_plugin(tmp_path, "dry-new")
    keys = ("dry-existing", "dry-retyped", "dry-new")
    before, blobs = _state(market, *keys), market.blob_files()

    result = market.as_admin("publish-batch", str(tmp_path), "--dry-run", "--json")

    assert result.returncode == 0, result.stderr
    results = _results(result.stdout)
    assert {key: results[key]["status"] for key in keys} == dict.fromkeys(keys, "planned")
    assert results["dry-new"]["actions"][0] == "would create plugin (admin group)"
    assert results["dry-existing"]["detail"] == "would publish 1.1.0 (tarball)"
    assert results["dry-retyped"]["actions"][0] == (
        "would delete and recreate plugin (type tool -> mcp)"
    )
    assert _state(market, *keys) == before
    assert market.blob_files() == blobs


def test_batch_direct_creates_inline_versions_without_touching_storage(
    market: Market, tmp_path: Path
) -> None:
    write_plugin(tmp_path, "direct-one", files={"index.js": "export const one = 1;\n"})
    write_plugin(tmp_path, "direct-two", files={"index.js": "export const two = 2;\n"})
    blobs = market.blob_files()

    result = market.as_admin("publish-batch", str(tmp_path), "--direct")

    assert result.returncode == 0, result.stderr
    assert _counts_line(result.stdout) == "2 published, 0 failed"
    for key, code in (("direct-one", "one = 1"), ("direct-two", "two = 2")):
        version = market.version(key, "1.0.0")
        assert (version["distribution"], version["sha256"]) == ("inline", None)
        assert code in version["manifest"]["inlineCode"]
    assert market.blob_files() == blobs


def test_batch_deletes_and_recreates_a_plugin_whose_type_changed(
    market: Market, tmp_path: Path
) -> None:
    write_plugin(tmp_path, "retype", type="tool")
    assert market.as_admin("publish-batch", str(tmp_path)).returncode == 0
    old = market.plugin("retype")
    write_plugin(tmp_path, "retype", version="2.0.0", type="mcp", mcp=MCP)

    result = market.as_admin("publish-batch", str(tmp_path))

    assert result.returncode == 0, result.stderr
    assert "retype: deleted and recreated plugin (type tool -> mcp)" in result.stderr
    new = market.plugin("retype")
    assert new["id"] != old["id"]
    assert (new["type"], new["latestVersion"]) == ("mcp", "2.0.0")
    assert [v["version"] for v in market.versions(new["id"])] == ["2.0.0"]


def test_batch_counts_an_existing_version_as_skipped_not_failed(
    market: Market, tmp_path: Path
) -> None:
    write_plugin(tmp_path, "again-tarball")
    write_plugin(tmp_path, "again-config", main="", type="mcp", mcp=MCP)
    assert market.as_admin("publish-batch", str(tmp_path)).returncode == 0
    before = _state(market, "again-tarball", "again-config")

    result = market.as_admin("publish-batch", str(tmp_path))

    assert result.returncode == 0, result.stderr
    assert _counts_line(result.stdout) == "2 skipped, 0 failed"
    [tarball] = market.versions("again-tarball")
    assert (
        f"again-tarball: version 1.0.0 already published, identical (sha256 {tarball['sha256']})"
    ) in result.stderr
    assert "again-config: version 1.0.0 already published, identical" in result.stderr
    after = _state(market, "again-tarball", "again-config")
    assert {k: v[1] for k, v in after.items()} == {k: v[1] for k, v in before.items()}


def test_batch_failure_of_one_plugin_sets_the_exit_status_and_spares_the_others(
    market: Market, tmp_path: Path
) -> None:
    write_plugin(tmp_path, "fine-one")
    write_plugin(tmp_path, "bad-category", category="games")
    write_plugin(tmp_path, "fine-two")

    result = market.as_admin("publish-batch", str(tmp_path), "--json")

    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert document["success"] is False
    assert document["error"]["code"] == "BATCH_FAILED"
    assert document["data"]["counts"] == {"published": 2, "skipped": 0, "planned": 0, "failed": 1}
    failed = _results(result.stdout)["bad-category"]
    assert failed["error"]["code"] == "PLUGIN_INVALID_CATEGORY"
    assert market.find_plugin("bad-category") is None
    assert market.find_plugin("fine-one") is not None
    assert market.find_plugin("fine-two") is not None


def test_developer_batch_cannot_change_a_type_and_says_so(market: Market, tmp_path: Path) -> None:
    write_plugin(tmp_path, "dev-retype", type="tool")
    assert market.as_developer("publish-batch", str(tmp_path)).returncode == 0
    write_plugin(tmp_path, "dev-retype", version="2.0.0", type="mcp", mcp=MCP)

    result = market.as_developer("publish-batch", str(tmp_path), "--json")

    assert result.returncode == 1
    failed = _results(result.stdout)["dev-retype"]
    assert failed["error"]["code"] == "PLUGIN_TYPE_CHANGED"
    assert "only an administrator can delete and recreate it" in failed["error"]["message"]
    plugin = market.plugin("dev-retype")
    assert (plugin["type"], plugin["reviewStatus"]) == ("tool", "pending")
    assert [v["version"] for v in market.versions(plugin["id"])] == ["1.0.0"]
