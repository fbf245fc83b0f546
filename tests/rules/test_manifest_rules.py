"""The shared rules on their own: findings, paths, steps and the order they come in."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from marketplace_rules.content import (
    Listing,
    content_findings,
    is_icon_path,
    locate,
    package_path,
)
from marketplace_rules.findings import FILE_PATH_PREFIX, Code, Finding
from marketplace_rules.manifest import (
    UnreadableManifest,
    category_findings,
    distribution_findings,
    distribution_of,
    identity_findings,
    is_valid_plugin_key,
    load_manifest,
    mcp_findings,
    plugin_manifest_findings,
    record_findings,
    shape_findings,
)
from marketplace_rules.text import walk_strings


def manifest(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "demo-plugin",
        "version": "1.0.0",
        "name": "Demo",
        "description": "A demo",
        "type": "tool",
        "main": "index.js",
        "category": "ai",
    }
    base.update(overrides)
    return {key: value for key, value in base.items() if value is not None}


def where(findings: list[Finding]) -> list[tuple[str, str]]:
    return [(str(finding.code), finding.path) for finding in findings]


PACKAGE = Listing(files={"manifest.json": 100, "index.js": 10})


# Finding


def test_finding_is_a_frozen_value_with_the_contract_shape() -> None:
    finding = Finding.error(Code.WRONG_TYPE, "mcp.args", "must be a list of strings")

    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.path = "x"  # type: ignore[misc]
    assert finding.to_json() == {
        "code": "wrong-type",
        "severity": "error",
        "path": "mcp.args",
        "message": "must be a list of strings",
    }


def test_a_valid_manifest_has_no_findings() -> None:
    assert plugin_manifest_findings(manifest(), PACKAGE) == []


# Paths


def test_mcp_findings_point_at_the_member() -> None:
    found = mcp_findings({"command": "", "args": [1], "env": {"A": 1}})

    assert where(found) == [
        ("mcp-invalid", "mcp.command"),
        ("mcp-invalid", "mcp.args"),
        ("mcp-invalid", "mcp.env"),
    ]


def test_config_findings_point_at_the_item_or_its_key() -> None:
    found = content_findings(manifest(config=[{"key": "a"}, "b", {}, {"key": "a"}]), None)

    assert where(found) == [
        ("config-item-invalid", "config[1]"),
        ("config-key-missing", "config[2].key"),
        ("config-key-repeated", "config[3].key"),
    ]


def test_hidden_characters_name_the_value_the_key_or_the_file() -> None:
    document = manifest(extra={"li\u200bst": ["ok", "bad\u202e"]})
    package = Listing(files={**PACKAGE.files, "a\u2066.js": 1})

    found = content_findings(document, package)

    assert where(found) == [
        ("hidden-characters-in-key", "extra.li\u200bst"),
        ("hidden-characters", "extra.li\u200bst[1]"),
        ("hidden-characters-in-file-name", FILE_PATH_PREFIX + "a\u2066.js"),
    ]
    assert found[0].message == (
        "key name contains invisible or bidirectional-control characters (U+200B)"
    )


def test_messages_escape_what_they_echo() -> None:
    (finding,) = content_findings(manifest(main="x\u202e.js"), PACKAGE)[:1]

    assert finding.message == "names x\\u202e.js, which is not in the package"


def test_walk_strings_gives_json_paths_and_says_which_are_key_names() -> None:
    assert list(walk_strings({"a": {"b": ["x"]}})) == [
        ("a", "a", True),
        ("a.b", "b", True),
        ("a.b[0]", "x", False),
    ]


def test_document_level_findings_have_the_empty_path() -> None:
    with pytest.raises(UnreadableManifest) as caught:
        load_manifest(b"[]")

    assert where([caught.value.finding]) == [("manifest-not-object", "")]


# Steps


def test_identity_without_a_plugin_key_checks_the_key_shape() -> None:
    assert where(identity_findings(manifest(id="X"))) == [
        ("plugin-key-invalid", "id"),
        ("plugin-key-invalid", "id"),
    ]


def test_identity_with_a_plugin_key_compares_instead() -> None:
    found = identity_findings(manifest(id="X"), plugin_key="demo-plugin", version="1.0.0")

    assert [(f.code, f.message) for f in found] == [
        (Code.ID_MISMATCH, "does not match plugin.pluginKey")
    ]


def test_identity_reports_id_and_version_together() -> None:
    found = identity_findings(manifest(id=None, version="1.0"))

    assert [(f.path, f.message) for f in found] == [
        ("id", "is required"),
        ("version", "must be a semver version such as 1.2.3 or 1.2.3-beta.1"),
    ]


def test_category_is_checked_against_the_table_only_when_given_one() -> None:
    assert category_findings(manifest(category="games")) == []
    assert where(category_findings(manifest(category="games"), categories={"ai"})) == [
        ("category-unknown", "category")
    ]


def test_shape_lists_every_wrong_type() -> None:
    found = shape_findings(manifest(main=1, name=2, autoConnect="yes", mcp="node"))

    assert where(found) == [
        ("wrong-type", "main"),
        ("wrong-type", "name"),
        ("wrong-type", "mcp"),
        ("wrong-type", "autoConnect"),
    ]


def test_shape_takes_the_plugins_type_over_the_manifests() -> None:
    assert where(shape_findings(manifest(), plugin_type="mcp")) == [("mcp-required", "mcp")]


@pytest.mark.parametrize(
    ("document", "has_package", "expected"),
    [
        (manifest(), True, "tarball"),
        (manifest(), False, None),
        (manifest(main="", mcp={"command": "x"}), False, "config_only"),
        (manifest(main="", inlineCode="x"), False, "inline"),
        (manifest(inlineUiCode="x"), False, "inline"),
        (manifest(main=""), False, None),
    ],
)
def test_distribution(document: dict[str, Any], has_package: bool, expected: str | None) -> None:
    assert distribution_of(document, has_package=has_package) == expected
    assert (distribution_findings(document, has_package=has_package) == []) is (
        expected is not None
    )


def test_record_rules_are_the_publishing_tools_own() -> None:
    document = manifest(
        type="gadget",
        name=" ",
        tags=[1],
        platforms=["amiga"],
        nameZh=3,
        icon="logo.gif",
        config=[{"key": "a", "required": "yes"}],
    )

    assert where(record_findings(document)) == [
        ("type-unknown", "type"),
        ("wrong-type", "tags"),
        ("platform-unknown", "platforms"),
        ("wrong-type", "config[0].required"),
        ("icon-format", "icon"),
        ("required", "name"),
        ("wrong-type", "nameZh"),
    ]
    assert "name" not in [f.path for f in record_findings(document, publishing=False)]


def test_all_findings_come_in_the_services_order_then_the_records() -> None:
    document = manifest(
        version="x", category=None, autoConnect=1, config=[{}], type="gadget", main="a.js"
    )

    assert [f.path for f in plugin_manifest_findings(document, PACKAGE)] == [
        "version",
        "category",
        "autoConnect",
        "main",
        "config[0].key",
        "type",
    ]


# Keys, versions and paths


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("abc", True),
        ("a" * 64, True),
        ("ab", False),
        ("abc\n", False),
        ("Abc", False),
        ("abcdef12-3456-7890-abcd-ef1234567890", False),
        (5, False),
    ],
)
def test_plugin_key(key: object, valid: bool) -> None:
    assert is_valid_plugin_key(key) is valid


@pytest.mark.parametrize(
    ("icon", "is_path"),
    [
        ("icon/icon.png", True),
        ("logo.svg", True),
        ("logo.gif", True),
        ("icons\\a", True),
        ("database", False),
        ("https://x/y.png", False),
        ("data:image/png;base64,AAAA", False),
    ],
)
def test_icon_path_or_name(icon: str, is_path: bool) -> None:
    assert is_icon_path(icon) is is_path


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("./a//b.js", "a/b.js"),
        ("a\\b.js", "a/b.js"),
        ("../a.js", None),
        ("a/../../b", None),
        ("/etc/passwd", None),
        ("C:/x.js", None),
        (".", None),
        ("", None),
    ],
)
def test_package_path(value: str, path: str | None) -> None:
    assert package_path(value) == path


def test_locate_follows_links_inside_the_package_and_gives_up_on_loops() -> None:
    package = Listing(
        files={"dist/real.js": 1}, symlinks={"a.js": "dist/real.js", "x": "y", "y": "x"}
    )

    assert locate(package, "a.js") == "dist/real.js"
    assert locate(package, "x") is None
