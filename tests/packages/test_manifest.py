from __future__ import annotations

import itertools
from typing import Any

import pytest
import semver
from hypothesis import given
from hypothesis import strategies as st

from marketplace.errors import (
    AppError,
    InvalidCategory,
    PackageInvalid,
    ScenarioValidationFailed,
    ValidationFailed,
)
from marketplace.packages.archive import ArchiveInfo
from marketplace.packages.manifest import (
    ICON_MAX_BYTES,
    check_manifest_category,
    check_manifest_identity,
    check_manifest_shape,
    check_package_manifest,
    deep_findings,
    distribution_of,
    is_valid_plugin_key,
    is_valid_version,
    note_line,
    parse_version,
    refusal,
    validate_mcp,
    version_sort_key,
)
from marketplace_rules.content import content_findings
from marketplace_rules.findings import Code, Finding

CATEGORIES = {"productivity", "ai", "utility"}
STDIO = {"command": "node", "args": ["server.js"], "env": {"TOKEN": "x"}}


def manifest(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "demo-plugin",
        "version": "1.2.0",
        "main": "index.js",
        "category": "ai",
    }
    base.update(overrides)
    return {key: value for key, value in base.items() if value is not None}


def archive(
    files: dict[str, int] | None = None, symlinks: dict[str, str] | None = None
) -> ArchiveInfo:
    return ArchiveInfo(
        files={"manifest.json": 100, "index.js": 10, **(files or {})},
        symlinks=symlinks or {},
        manifest={},
        manifest_bytes=b"{}",
        unpacked_bytes=110,
        member_count=2,
        compressed_bytes=100,
        root_prefix=None,
    )


def failure(error: type[AppError], call: Any) -> AppError:
    with pytest.raises(error) as caught:
        call()
    return caught.value


# pluginKey


@pytest.mark.parametrize("key", ["abc", "my-plugin", "a1-b2", "a" * 64, "x--y"])
def test_plugin_key_accepts_lowercase_words_digits_and_hyphens(key: str) -> None:
    assert is_valid_plugin_key(key)


@pytest.mark.parametrize(
    "key",
    ["ab", "a" * 65, "1abc", "-abc", "Abc", "my_plugin", "my.plugin", "abc\n", "ｍｙ-plugin", ""],
)
def test_plugin_key_refuses_other_shapes(key: str) -> None:
    assert not is_valid_plugin_key(key)


def test_plugin_key_refuses_uuid_shape() -> None:
    assert not is_valid_plugin_key("abcdef12-3456-7890-abcd-ef1234567890")


def test_plugin_key_refuses_non_strings() -> None:
    assert not is_valid_plugin_key(123)


# Versions


@pytest.mark.parametrize("text", ["0.0.1", "1.2.3", "1.0.0-alpha.10", "10.20.30-rc.1"])
def test_parse_version_accepts_semver(text: str) -> None:
    assert str(parse_version(text)) == text


@pytest.mark.parametrize(
    "text", ["1.0", "v1.0.0", "01.0.0", "1.0.0-01", " 1.0.0", "1.0.0\n", "١.٠.٠"]
)
def test_parse_version_refuses_what_is_not_semver(text: str) -> None:
    with pytest.raises(ValueError, match="semver"):
        parse_version(text)


def test_parse_version_refuses_build_metadata() -> None:
    with pytest.raises(ValueError, match="build metadata"):
        parse_version("1.0.0+build.5")


def test_parse_version_refuses_overlong_text() -> None:
    with pytest.raises(ValueError, match="at most 128"):
        parse_version("1.0.0-" + "a" * 200)


def test_is_valid_version_is_false_for_non_strings() -> None:
    assert not is_valid_version(None)


def test_versions_sort_by_semver_precedence() -> None:
    # The ordering example of semver.org, section 11, shuffled.
    expected = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.10.0",
        "2.0.0",
    ]
    shuffled = [expected[index] for index in (7, 3, 10, 0, 5, 9, 1, 8, 6, 2, 4)]

    assert sorted(shuffled, key=version_sort_key) == expected


def test_numeric_prerelease_parts_compare_as_numbers() -> None:
    assert version_sort_key("1.0.0-alpha.10") > version_sort_key("1.0.0-alpha.9")


def _reference_key(text: str) -> tuple[Any, ...]:
    """semver.org section 11, written out independently of the semver package."""
    core, _, pre = text.partition("-")
    numbers = tuple(int(part) for part in core.split("."))
    if not pre:
        return (numbers, 1, ())
    parts = tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in pre.split("."))
    return (numbers, 0, parts)


_identifier = st.one_of(
    st.integers(min_value=0, max_value=30).map(str),
    st.text(alphabet="abcz-", min_size=1, max_size=3).filter(lambda s: not s.isdigit()),
)
_versions = st.builds(
    lambda core, pre: ".".join(map(str, core)) + ("-" + ".".join(pre) if pre else ""),
    st.tuples(*[st.integers(min_value=0, max_value=12)] * 3),
    st.lists(_identifier, max_size=3),
)


@given(st.lists(_versions, min_size=2, max_size=8))
def test_version_sort_key_orders_like_the_semver_spec(versions: list[str]) -> None:
    for left, right in itertools.combinations(versions, 2):
        assert (version_sort_key(left) < version_sort_key(right)) == (
            _reference_key(left) < _reference_key(right)
        )


@given(_versions)
def test_valid_versions_round_trip(text: str) -> None:
    assert parse_version(text) == semver.Version.parse(text)


# Identity: id, version, semver


def test_identity_accepts_matching_id_and_version() -> None:
    assert check_manifest_identity(manifest(), plugin_key="demo-plugin", version="1.2.0") == (
        semver.Version(1, 2, 0)
    )


def test_identity_refuses_different_id_with_the_seed_message() -> None:
    error = failure(
        PackageInvalid,
        lambda: check_manifest_identity(manifest(), plugin_key="other", version="1.2.0"),
    )

    assert error.message == "manifest.id does not match plugin.pluginKey"


def test_identity_refuses_id_differing_only_in_case() -> None:
    error = failure(
        PackageInvalid,
        lambda: check_manifest_identity(
            manifest(id="Demo-Plugin"), plugin_key="demo-plugin", version="1.2.0"
        ),
    )

    assert error.message == "manifest.id does not match plugin.pluginKey"


def test_identity_refuses_different_version_with_the_seed_message() -> None:
    error = failure(
        PackageInvalid,
        lambda: check_manifest_identity(manifest(), plugin_key="demo-plugin", version="1.3.0"),
    )

    assert error.message == "manifest.version does not match requested version"


def test_identity_checks_id_before_version() -> None:
    error = failure(
        PackageInvalid,
        lambda: check_manifest_identity(manifest(), plugin_key="other", version="9.9.9"),
    )

    assert error.message == "manifest.id does not match plugin.pluginKey"


def test_identity_refuses_missing_id() -> None:
    error = failure(
        PackageInvalid,
        lambda: check_manifest_identity(manifest(id=None), plugin_key="demo", version="1.2.0"),
    )

    assert error.message == "manifest.id is required"


def test_identity_refuses_version_that_is_not_a_string() -> None:
    error = failure(
        PackageInvalid,
        lambda: check_manifest_identity(manifest(version=1), plugin_key="demo-plugin", version="1"),
    )

    assert error.message == "manifest.version must be a string"


def test_identity_refuses_matching_but_invalid_semver_as_validation_failure() -> None:
    error = failure(
        ValidationFailed,
        lambda: check_manifest_identity(
            manifest(version="1.0"), plugin_key="demo-plugin", version="1.0"
        ),
    )

    assert error.details["fields"][0]["field"] == "version"


def test_identity_uses_the_callers_error_class() -> None:
    failure(
        ScenarioValidationFailed,
        lambda: check_manifest_identity(
            manifest(), plugin_key="other", version="1.2.0", error=ScenarioValidationFailed
        ),
    )


# Category


def test_category_accepts_a_known_category() -> None:
    assert check_manifest_category(manifest(), categories=CATEGORIES) == "ai"


def test_category_refuses_unknown_category_with_seed_message() -> None:
    error = failure(
        InvalidCategory,
        lambda: check_manifest_category(manifest(category="games"), categories=CATEGORIES),
    )

    assert (error.code, error.message) == ("PLUGIN_INVALID_CATEGORY", 'Invalid category "games"')


def test_category_refuses_missing_category() -> None:
    error = failure(
        PackageInvalid,
        lambda: check_manifest_category(manifest(category=None), categories=CATEGORIES),
    )

    assert error.message == "manifest.category is required"


# Shape


def test_shape_accepts_empty_main() -> None:
    check_manifest_shape(manifest(main="", mcp=STDIO))


def test_shape_refuses_missing_main() -> None:
    error = failure(PackageInvalid, lambda: check_manifest_shape(manifest(main=None)))

    assert error.message.startswith("manifest.main is required")


def test_shape_refuses_main_that_is_not_a_string() -> None:
    error = failure(PackageInvalid, lambda: check_manifest_shape(manifest(main=False)))

    assert error.message == "manifest.main must be a string"


@pytest.mark.parametrize(
    ("key", "value"),
    [("permissions", "ui.render"), ("contributes", []), ("config", {}), ("autoConnect", "yes")],
)
def test_shape_refuses_optional_keys_of_the_wrong_type(key: str, value: object) -> None:
    error = failure(PackageInvalid, lambda: check_manifest_shape(manifest(**{key: value})))

    assert error.message.startswith(f"manifest.{key} must be")


def test_shape_refuses_permissions_that_are_not_strings() -> None:
    error = failure(PackageInvalid, lambda: check_manifest_shape(manifest(permissions=[1])))

    assert error.message == "manifest.permissions must be a list of strings"


def test_shape_refuses_invalid_mcp_declaration() -> None:
    error = failure(PackageInvalid, lambda: check_manifest_shape(manifest(mcp={"args": []})))

    assert "manifest.mcp command must be a non-empty string" in error.message


def test_shape_requires_mcp_declaration_for_plugin_type_mcp() -> None:
    error = failure(PackageInvalid, lambda: check_manifest_shape(manifest(), plugin_type="mcp"))

    assert error.message == "manifest.mcp is required for a plugin of type mcp"


def test_shape_requires_mcp_declaration_when_manifest_type_is_mcp() -> None:
    failure(PackageInvalid, lambda: check_manifest_shape(manifest(type="mcp")))


def test_shape_keeps_unknown_keys() -> None:
    check_manifest_shape(manifest(nameZh="演示", extra={"anything": [1, 2]}))


def test_package_manifest_checks_identity_before_category() -> None:
    error = failure(
        PackageInvalid,
        lambda: check_package_manifest(
            manifest(id="other", category="games"),
            plugin_key="demo-plugin",
            version="1.2.0",
            categories=CATEGORIES,
        ),
    )

    assert error.message == "manifest.id does not match plugin.pluginKey"


def test_package_manifest_checks_category_before_shape() -> None:
    failure(
        InvalidCategory,
        lambda: check_package_manifest(
            manifest(category="games", main=None),
            plugin_key="demo-plugin",
            version="1.2.0",
            categories=CATEGORIES,
        ),
    )


# MCP declaration


@pytest.mark.parametrize(
    "declaration",
    [
        STDIO,
        {"transport": "stdio", "command": "python"},
        {"transport": "sse", "url": "https://example.com/sse"},
        {"transport": "streamable-http", "url": "http://127.0.0.1:8080/mcp"},
    ],
)
def test_mcp_accepts_stdio_and_remote_servers(declaration: dict[str, Any]) -> None:
    assert validate_mcp(declaration) == []


@pytest.mark.parametrize(
    ("declaration", "problem"),
    [
        ("node server.js", "must be an object"),
        ({}, "command must be a non-empty string"),
        ({"command": "node", "args": "server.js"}, "args must be a list of strings"),
        ({"command": "node", "env": {"PORT": 80}}, "env must map names to strings"),
        ({"transport": "sse"}, "url must be an http(s) URL"),
        ({"transport": "sse", "url": "ftp://x"}, "url must be an http(s) URL"),
        ({"transport": "websocket", "url": "ws://x"}, "transport must be"),
    ],
)
def test_mcp_reports_each_problem(declaration: object, problem: str) -> None:
    assert any(problem in found for found in validate_mcp(declaration))


# Distribution


def test_distribution_is_tarball_for_package_with_main() -> None:
    assert distribution_of(manifest(), has_package=True) == "tarball"


def test_distribution_is_config_only_for_empty_main_with_mcp() -> None:
    assert distribution_of(manifest(main="", mcp=STDIO), has_package=False) == "config_only"


@pytest.mark.parametrize("key", ["inlineCode", "inlineUiCode"])
def test_distribution_is_inline_with_inline_code(key: str) -> None:
    assert distribution_of(manifest(**{key: "export {}"}), has_package=False) == "inline"


def test_distribution_without_package_ignores_main_for_tarball() -> None:
    error = failure(ValidationFailed, lambda: distribution_of(manifest(), has_package=False))

    assert error.details["fields"][0]["field"] == "manifest"


def test_distribution_refuses_empty_main_without_mcp_or_inline_code() -> None:
    failure(ValidationFailed, lambda: distribution_of(manifest(main=""), has_package=False))


def test_distribution_refuses_invalid_mcp_for_config_only() -> None:
    error = failure(
        ValidationFailed,
        lambda: distribution_of(manifest(main="", mcp={"transport": "sse"}), has_package=False),
    )

    assert error.details["fields"][0]["field"] == "manifest.mcp"


# Deep findings


def test_clean_tarball_has_no_findings() -> None:
    info = archive({"ui.js": 5, "icon/icon.png": 1000})
    clean = manifest(
        icon="icon/icon.png",
        permissions=["ui.render"],
        contributes={"ui": {"entry": "ui.js"}},
        config=[{"key": "token", "secret": True}, {"key": "region"}],
        description="一个演示插件 👩‍💻",
    )

    assert deep_findings(clean, info) == []


def test_finds_main_absent_from_archive() -> None:
    assert deep_findings(manifest(main="dist/index.js"), archive()) == [
        "manifest.main names dist/index.js, which is not in the package"
    ]


def test_accepts_main_with_dot_slash_prefix() -> None:
    assert deep_findings(manifest(main="./index.js"), archive()) == []


def test_accepts_main_reached_through_an_inside_symlink() -> None:
    info = archive({"dist/real.js": 5}, symlinks={"entry.js": "dist/real.js"})

    assert deep_findings(manifest(main="entry.js"), info) == []


def test_finds_main_pointing_outside_the_package() -> None:
    (finding,) = deep_findings(manifest(main="../index.js"), archive())

    assert finding == "manifest.main ../index.js is not a relative path inside the package"


def test_finds_ui_entry_absent_from_archive() -> None:
    found = deep_findings(
        manifest(contributes={"ui": {"entry": "ui.js"}}, permissions=["ui.render"]), archive()
    )

    assert found == ["contributes.ui.entry names ui.js, which is not in the package"]


def test_finds_ui_extension_without_ui_render_permission() -> None:
    found = deep_findings(
        manifest(contributes={"ui": {"entry": "ui.js"}}, permissions=[]), archive({"ui.js": 1})
    )

    assert found == ['permissions must include "ui.render" for a UI extension']


def test_finds_ui_declared_without_entry() -> None:
    found = deep_findings(manifest(contributes={"ui": {}}, permissions=["ui.render"]), archive())

    assert found == ["contributes.ui.entry must name the UI bundle file"]


def test_finds_inline_ui_code_without_ui_render_permission() -> None:
    found = deep_findings(manifest(main="", inlineUiCode="export {}"), None)

    assert found == ['permissions must include "ui.render" for a UI extension']


def test_finds_icon_path_absent_from_archive() -> None:
    assert deep_findings(manifest(icon="icon/icon.png"), archive()) == [
        "manifest.icon names icon/icon.png, which is not in the package"
    ]


def test_finds_icon_over_256_kib() -> None:
    info = archive({"icon.png": ICON_MAX_BYTES + 1})

    assert deep_findings(manifest(icon="icon.png"), info) == [
        f"manifest.icon icon.png is {ICON_MAX_BYTES + 1} bytes; the limit is {ICON_MAX_BYTES}"
    ]


def test_accepts_icon_of_exactly_256_kib() -> None:
    assert deep_findings(manifest(icon="icon.png"), archive({"icon.png": ICON_MAX_BYTES})) == []


def test_finds_icon_symlinked_to_a_file_over_256_kib() -> None:
    info = archive({"big.png": ICON_MAX_BYTES + 1}, symlinks={"icon.png": "big.png"})

    assert len(deep_findings(manifest(icon="icon.png"), info)) == 1


@pytest.mark.parametrize("icon", ["database", "mdi-robot", "Puzzle"])
def test_accepts_icon_name(icon: str) -> None:
    assert deep_findings(manifest(icon=icon), archive()) == []


def test_finds_icon_given_as_url() -> None:
    assert deep_findings(manifest(icon="https://tracker.example/p.png"), archive()) == [
        "manifest.icon must be a path inside the package or an icon name, not a URL"
    ]


def test_finds_config_item_without_key() -> None:
    found = deep_findings(manifest(config=[{"key": "a"}, {"label": "Token"}]), archive())

    assert found == ["config[1] has no key"]


def test_finds_config_item_with_duplicate_key() -> None:
    found = deep_findings(manifest(config=[{"key": "a"}, {"key": "b"}, {"key": "a"}]), archive())

    assert found == ['config[2] repeats the key "a"']


def test_finds_config_item_that_is_not_an_object() -> None:
    assert deep_findings(manifest(config=["token"]), archive()) == ["config[0] must be an object"]


def test_finds_bidi_control_in_manifest_text() -> None:
    found = deep_findings(manifest(description="safe\u202etxt.exe"), archive())

    assert found == [
        "manifest.description contains invisible or bidirectional-control characters (U+202E)"
    ]


def test_finds_invisible_character_in_a_key_name() -> None:
    found = deep_findings(manifest(**{"na\u200bme": "x"}), archive())

    assert found == [
        "manifest.na\\u200bme (key name) contains invisible or bidirectional-control "
        "characters (U+200B)"
    ]


def test_finds_hidden_character_deep_in_inline_code() -> None:
    code = "if (isAdmin) { /* \u202e } \u2066if (isAdmin)\u2069 \u2066 */ }"
    found = deep_findings(manifest(main="", inlineCode=code), None)

    assert found == [
        "manifest.inlineCode contains invisible or bidirectional-control characters "
        "(U+202E, U+2066, U+2069)"
    ]


def test_finds_hidden_character_in_a_file_name() -> None:
    found = deep_findings(manifest(), archive({"photo\u202egnp.js": 1}))

    assert found == [
        "file name photo\\u202egnp.js contains invisible or bidirectional-control "
        "characters (U+202E)"
    ]


def test_caps_the_number_of_text_findings() -> None:
    noisy = manifest(config=[{"key": f"k{index}", "label": "\u200b"} for index in range(30)])

    found = deep_findings(noisy, archive())

    assert len(found) == 21
    assert found[-1] == "... and 10 more such texts"


def test_lists_every_kind_of_finding_together() -> None:
    bad = manifest(
        main="missing.js",
        icon="icon.png",
        contributes={"ui": {"entry": "ui.js"}},
        config=[{}],
        name="x\u200fy",
    )

    assert len(deep_findings(bad, archive())) == 6


def test_skips_file_findings_without_an_archive() -> None:
    inline = manifest(main="index.js", icon="icon/icon.png", inlineCode="export {}")

    assert deep_findings(inline, None) == []


# The service's wording of shared findings


def test_refusal_lists_every_problem_of_an_mcp_declaration() -> None:
    error = failure(
        PackageInvalid,
        lambda: check_manifest_shape(manifest(mcp={"command": "", "args": "x", "env": []})),
    )

    assert error.message == (
        "manifest.mcp command must be a non-empty string for a stdio server; "
        "args must be a list of strings; env must map names to strings"
    )


def test_refusal_names_the_field_for_validation_failures() -> None:
    findings = [Finding.error(Code.WRONG_TYPE, "config", "must be a list of objects")]

    error = refusal(findings, ValidationFailed)

    assert error.details == {
        "fields": [{"field": "manifest.config", "message": "must be a list of objects"}]
    }


def test_refusal_of_an_invalid_version_names_the_request_field() -> None:
    error = refusal([Finding.error(Code.VERSION_INVALID, "version", "must be ...")])

    assert (error.code, error.details["fields"][0]["field"]) == ("VALIDATION_FAILED", "version")


def test_refusal_does_not_word_an_unknown_category() -> None:
    with pytest.raises(ValueError, match="category itself"):
        refusal([Finding.error(Code.CATEGORY_UNKNOWN, "category", "x")])


@pytest.mark.parametrize(
    ("finding", "line"),
    [
        (
            Finding.error(Code.FILE_MISSING, "main", "names a.js, ..."),
            "manifest.main names a.js, ...",
        ),
        (
            Finding.error(Code.FILE_MISSING, "contributes.ui.entry", "names ui.js, ..."),
            "contributes.ui.entry names ui.js, ...",
        ),
        (Finding.error(Code.CONFIG_KEY_MISSING, "config[3].key", "..."), "config[3] has no key"),
        (
            Finding.error(Code.DISTRIBUTION_NONE, "", "needs main ..."),
            "manifest needs main ...",
        ),
        (
            Finding.error(Code.MANIFEST_NOT_JSON, "", "is not valid JSON"),
            "manifest.json is not valid JSON",
        ),
    ],
)
def test_note_line_words_findings_as_review_notes_always_did(finding: Finding, line: str) -> None:
    assert note_line(finding) == line


def test_deep_findings_are_the_shared_content_findings_in_words() -> None:
    bad = manifest(main="missing.js", config=[{}], description="a\u202eb")

    assert deep_findings(bad, archive()) == [
        note_line(finding) for finding in content_findings(bad, archive())
    ]
