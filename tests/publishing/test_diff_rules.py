"""The version diff's pure parts: listing against listing, manifest against manifest,
permissions, and what each kind shows a reviewer."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.contents import FileEntry
from marketplace.publishing.diff import diff_files, diff_manifest, new_permissions
from marketplace.scenarios.kind import SCENARIOS


def entry(path: str, content: str, link: str | None = None) -> FileEntry:
    return FileEntry(path, len(content), f"sha-of-{content}", link)


def dumped(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True)


def test_files_are_added_removed_and_changed_by_path_and_content() -> None:
    before = [entry("b.js", "old"), entry("same.txt", "x"), entry("gone.md", "bye")]
    after = [entry("same.txt", "x"), entry("b.js", "newer"), entry("a/new.js", "hi")]
    assert dumped(diff_files(before, after)) == {
        "added": [{"path": "a/new.js", "size": 2}],
        "removed": [{"path": "gone.md", "size": 3}],
        "changed": [{"path": "b.js", "sizeBefore": 3, "sizeAfter": 5}],
    }


def test_a_moved_file_is_a_removal_and_an_addition() -> None:
    result = diff_files([entry("old/name.js", "body")], [entry("new/name.js", "body")])
    assert [f.path for f in result.added] == ["new/name.js"]
    assert [f.path for f in result.removed] == ["old/name.js"]
    assert result.changed == []


def test_a_link_pointing_elsewhere_is_changed_even_at_the_same_size() -> None:
    before = [FileEntry("current", 0, "h1", link="v1")]
    after = [FileEntry("current", 0, "h2", link="v2")]
    assert [c.path for c in diff_files(before, after).changed] == ["current"]


def test_lists_are_sorted_by_path() -> None:
    after = [entry(name, "x") for name in ("z", "b/c", "a", "b")]
    assert [f.path for f in diff_files([], after).added] == ["a", "b", "b/c", "z"]


def test_no_files_on_either_side_is_an_empty_diff() -> None:
    assert dumped(diff_files([], [])) == {"added": [], "removed": [], "changed": []}


def test_manifest_keys_are_compared_at_the_top_level() -> None:
    before = {"id": "p", "version": "1.0.0", "main": "a.js", "mcp": {"command": "x"}, "old": 1}
    after = {"id": "p", "version": "1.1.0", "main": "a.js", "mcp": {"command": "y"}, "new": [1]}
    assert dumped(diff_manifest(before, after)) == {
        "added": {"new": [1]},
        "removed": {"old": 1},
        "changed": {
            "mcp": {"before": {"command": "x"}, "after": {"command": "y"}},
            "version": {"before": "1.0.0", "after": "1.1.0"},
        },
    }


def test_manifest_values_compare_as_json_not_as_python() -> None:
    before = {"flag": 1, "ratio": 1, "null": None, "same": {"a": 1, "b": 2}}
    after = {"flag": True, "ratio": 1.0, "null": None, "same": {"b": 2, "a": 1}}
    assert sorted(diff_manifest(before, after).changed) == ["flag", "ratio"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
manifests = st.dictionaries(st.sampled_from(list("abcdef")), json_values, max_size=6)


@given(manifests, manifests)
def test_a_manifest_diff_turns_the_old_manifest_into_the_new_one(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    diff = diff_manifest(before, after)
    rebuilt = {k: v for k, v in before.items() if k not in diff.removed}
    rebuilt.update(diff.added)
    rebuilt.update({k: change.after for k, change in diff.changed.items()})
    assert json.dumps(rebuilt, sort_keys=True) == json.dumps(after, sort_keys=True)
    assert not (diff.added.keys() & before.keys()) and not (diff.removed.keys() & after.keys())


def test_new_permissions_are_those_only_the_new_version_asks_for_sorted() -> None:
    assert new_permissions({"net", "fs:read"}, ["fs:write", "net", "a:b", "fs:write"]) == [
        "a:b",
        "fs:write",
    ]
    assert new_permissions({"net"}, []) == []


def test_a_plugin_shows_its_stored_manifest_and_its_string_permissions() -> None:
    manifest = {"id": "p", "permissions": ["net", 3, None, "fs"], "main": ""}
    version = SimpleNamespace(manifest=manifest)
    subject = PLUGINS.review_subject(version, {"ignored": True})  # type: ignore[arg-type]
    assert subject.manifest == manifest and subject.manifest is not manifest
    assert subject.permissions == {"net", "fs"}


def test_a_plugin_manifest_without_a_list_of_permissions_asks_for_none() -> None:
    version = SimpleNamespace(manifest={"permissions": "net"})
    assert PLUGINS.review_subject(version, None).permissions == frozenset()  # type: ignore[arg-type]


def _scenario_version(**overrides: Any) -> Any:
    values = {
        "version": "1.1.0",
        "name": "Review",
        "name_zh": None,
        "description": "Reviews code",
        "description_zh": None,
        "type": "programmatic",
        "category": "development",
        "permissions": ["fs:read"],
        "changelog": "not compared",
    }
    values.update(overrides)
    return SimpleNamespace(**values)


def test_a_scenario_shows_its_metadata_in_api_names_without_unset_fields() -> None:
    subject = SCENARIOS.review_subject(_scenario_version(name_zh="评审"), None)
    assert subject.manifest == {
        "version": "1.1.0",
        "name": "Review",
        "nameZh": "评审",
        "description": "Reviews code",
        "type": "programmatic",
        "category": "development",
        "permissions": ["fs:read"],
    }
    assert subject.permissions == {"fs:read"}


def test_a_scenario_package_manifest_shows_under_package_keys_and_adds_permissions() -> None:
    package = {"id": "s", "type": "other", "permissions": ["net", "fs:read"]}
    subject = SCENARIOS.review_subject(_scenario_version(), package)
    assert subject.manifest["type"] == "programmatic"  # the metadata is not overwritten
    assert subject.manifest["package.type"] == "other"
    assert subject.manifest["package.id"] == "s"
    assert subject.manifest["package.permissions"] == ["net", "fs:read"]
    assert subject.permissions == {"fs:read", "net"}
