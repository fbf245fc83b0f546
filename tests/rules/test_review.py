"""The findings a version keeps: composed, ordered and capped (rules.review)."""

from __future__ import annotations

from typing import Any

from marketplace_rules.content import Listing
from marketplace_rules.findings import Code, Finding
from marketplace_rules.limits import FINDING_MESSAGE_MAX, FINDING_PATH_MAX, FINDINGS_MAX
from marketplace_rules.review import (
    finalize,
    ordered,
    plugin_version_findings,
    scenario_version_findings,
)
from marketplace_rules.traits import FileTraits

STDIO = {"command": "node", "args": ["server.js"]}


def manifest(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "demo",
        "version": "1.1.0",
        "main": "index.js",
        "category": "ai",
    }
    base.update(overrides)
    return base


def listing(**files: int) -> Listing:
    return Listing(files={"manifest.json": 100, "index.js": 10, **files})


def metadata(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "Review",
        "nameZh": None,
        "description": "Reviews code",
        "descriptionZh": None,
        "type": "programmatic",
        "category": "development",
        "permissions": ["filesystem:read"],
        "changelog": None,
    }
    base.update(overrides)
    return base


def finding(severity: str, index: int = 0) -> Finding:
    return Finding(Code.FILE_LARGE, severity, f"file:{index}", "m")  # type: ignore[arg-type]


def summary(findings: list[Finding]) -> list[tuple[str, str, str]]:
    return [(f.code, f.severity, f.path) for f in findings]


# ---------- order and caps ----------


def test_errors_then_warnings_then_infos_in_found_order() -> None:
    found = [finding("info", 1), finding("warning", 2), finding("error", 3), finding("info", 4)]
    found += [finding("error", 5), finding("warning", 6)]
    assert [f.path for f in ordered(found)] == [f"file:{i}" for i in (3, 5, 2, 6, 1, 4)]
    assert finalize(found) == ordered(found)


def test_up_to_the_cap_nothing_is_dropped() -> None:
    found = [finding("warning", i) for i in range(FINDINGS_MAX)]
    assert finalize(found) == found


def test_past_the_cap_the_last_finding_counts_the_rest() -> None:
    found = [finding("info", i) for i in range(150)] + [finding("warning", i) for i in range(151)]
    kept = finalize(found)
    assert len(kept) == FINDINGS_MAX
    more = kept[-1]
    assert (more.code, more.severity, more.path) == (Code.FINDINGS_MORE, "info", "")
    # 151 warnings first, then the first 48 infos; 102 infos are counted.
    assert more.message == "... and 102 more findings (102 infos)"
    assert kept[:-1] == ordered(found)[: FINDINGS_MAX - 1]


def test_count_of_the_rest_is_as_serious_as_its_most_serious_finding() -> None:
    found = [finding("error", i) for i in range(FINDINGS_MAX + 1)] + [finding("warning")]
    more = finalize(found)[-1]
    assert more.severity == "error"
    assert more.message == "... and 3 more findings (2 errors, 1 warning)"


def test_long_messages_and_paths_are_cut() -> None:
    long = Finding(Code.HIDDEN_CHARACTERS, "error", "a." * 400, "x" * 5000)
    (kept,) = finalize([long])
    assert len(kept.message) == FINDING_MESSAGE_MAX and kept.message.endswith("...")
    assert len(kept.path) == FINDING_PATH_MAX and kept.path.endswith("...")


def test_hostile_manifest_is_capped_whole() -> None:
    hostile = manifest(
        config=[{"label": "no key"}] * 5000,
        permissions=[f"p{i}" for i in range(5000)],
        **{f"k{i}": "\u202e" for i in range(100)},
    )
    kept = plugin_version_findings(hostile, listing(), base=manifest(permissions=[]))
    assert len(kept) == FINDINGS_MAX
    assert kept[-1].code is Code.FINDINGS_MORE and kept[-1].severity == "error"


# ---------- plugins ----------


def test_clean_plugin_version_has_no_findings() -> None:
    assert plugin_version_findings(manifest(), listing(), base=None) == []
    config_only = manifest(main="", mcp=STDIO)
    assert plugin_version_findings(config_only, None, base=config_only) == []


def test_plugin_version_findings_put_errors_first() -> None:
    package = Listing(
        files={"manifest.json": 100, "tool": 10},
        traits={"tool": FileTraits(executable=True)},
    )
    found = plugin_version_findings(
        manifest(permissions=["fs.*"], mcp={"command": "bash"}),
        package,
        base=manifest(permissions=["fs.read"], mcp=STDIO),
    )
    assert summary(found) == [
        ("file-missing", "error", "main"),
        ("file-executable", "warning", "file:tool"),
        ("permission-widened", "warning", "permissions[0]"),
        ("mcp-launch-changed", "warning", "mcp.command"),
        ("mcp-launch-changed", "warning", "mcp.args"),
    ]


def test_contributed_tool_texts_are_checked_for_hidden_characters() -> None:
    contributes = {"tools": [{"name": "search", "description": "Finds\u200b things"}]}
    found = plugin_version_findings(manifest(contributes=contributes), listing(), base=None)
    assert summary(found) == [("hidden-characters", "error", "contributes.tools[0].description")]


def test_first_plugin_version_lists_its_permissions() -> None:
    found = plugin_version_findings(manifest(permissions=["ui.render"]), listing(), base=None)
    assert summary(found) == [("permissions-requested", "info", "permissions")]


# ---------- scenarios ----------


def test_clean_scenario_version_has_only_its_first_permissions() -> None:
    assert summary(scenario_version_findings(metadata(), None, None, base=None)) == [
        ("permissions-requested", "info", "permissions")
    ]
    assert scenario_version_findings(metadata(permissions=[]), None, None, base=None) == []


def test_scenario_permissions_are_compared_with_the_base_metadata() -> None:
    found = scenario_version_findings(
        metadata(permissions=["filesystem:read", "network:*"]), None, None, base=metadata()
    )
    assert summary(found) == [("permission-added", "warning", "permissions[1]")]


def test_hidden_characters_in_scenario_metadata_are_errors() -> None:
    found = scenario_version_findings(
        metadata(name="Re\u202eview", permissions=[]), None, None, base=None
    )
    assert summary(found) == [("hidden-characters", "error", "name")]


def test_scenario_package_manifest_and_file_names_are_checked_too() -> None:
    package = Listing(files={"scenario.yaml": 10, "evil\u202egpj.exe": 5})
    found = scenario_version_findings(
        metadata(permissions=[]),
        {"id": "x", "steps": [{"prompt": "do\u200b it"}]},
        package,
        base=None,
    )
    assert summary(found) == [
        ("hidden-characters", "error", "package.steps[0].prompt"),
        ("hidden-characters-in-file-name", "error", "file:evil\u202egpj.exe"),
        ("file-native-binary", "warning", "file:evil\u202egpj.exe"),
    ]


def test_plugin_manifest_rules_do_not_apply_to_a_scenario_package() -> None:
    package = Listing(files={"scenario.yaml": 10})
    scenario_manifest = {"id": "x", "main": "absent.js", "icon": "https://x.example/i.png"}
    assert (
        scenario_version_findings(metadata(permissions=[]), scenario_manifest, package, base=None)
        == []
    )
