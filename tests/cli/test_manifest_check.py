from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marketplace_client.errors import ManifestInvalid
from marketplace_client.manifest_check import (
    check_manifest,
    check_mcp_declaration,
    check_plugin_key,
    load_checked_manifest,
    problem_line,
    read_manifest,
    safe_relative,
)
from marketplace_rules.findings import Code, Finding

from .fake_api import FakeApi
from .helpers import Invoke, base_manifest, make_plugin


def fields(problems: list[Finding] | list[str]) -> list[str]:
    """The path of each finding (or of each printed problem line)."""
    return [
        problem.split(":", 1)[0] if isinstance(problem, str) else problem.path
        for problem in problems
    ]


def test_valid_manifest_has_no_problems(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path)
    assert check_manifest(base_manifest(), directory) == []


def test_every_problem_is_listed_at_once() -> None:
    manifest: dict[str, Any] = {
        "id": "Bad_Id",
        "version": "1.0.0+build.5",
        "type": "gadget",
        "tags": "not-a-list",
        "config": [{"key": "A"}, {"key": "A"}, {"label": "no key"}],
        "name": "",
    }
    problems = check_manifest(manifest)
    # The service's checks in the service's order, then the plugin record's.
    assert fields(problems) == [
        "id",
        "version",
        "category",
        "main",
        "config[1].key",
        "config[2].key",
        "type",
        "tags",
        "name",
        "description",
    ]


def test_version_with_build_metadata_is_refused() -> None:
    problems = check_manifest(base_manifest(version="1.0.0+abc"))
    assert [problem_line(problem) for problem in problems] == [
        "version: must not carry build metadata (+...)"
    ]


@pytest.mark.parametrize("version", ["1.0", "v1.0.0", "01.0.0", ""])
def test_invalid_semver_is_refused(version: str) -> None:
    assert fields(check_manifest(base_manifest(version=version))) == ["version"]


def test_prerelease_versions_are_accepted() -> None:
    assert check_manifest(base_manifest(version="2.0.0-beta.1")) == []


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("abc", True),
        ("a-1-b", True),
        ("ab", False),
        ("a" * 64, True),
        ("a" * 65, False),
        ("1abc", False),
        ("Abc", False),
        ("a_b", False),
        ("abcdef01-2345-6789-abcd-ef0123456789", False),  # shaped like a UUID
    ],
)
def test_plugin_key_rules(key: str, valid: bool) -> None:
    assert (check_plugin_key(key) == []) is valid


@given(st.text(alphabet="abcxyz019-_A", max_size=70))
def test_plugin_key_check_matches_the_pattern(key: str) -> None:
    expected = bool(re.fullmatch(r"[a-z][a-z0-9-]*", key)) and 3 <= len(key) <= 64
    assert (check_plugin_key(key) == []) is expected


def test_main_must_be_present_but_may_be_empty() -> None:
    without = base_manifest()
    del without["main"]
    assert fields(check_manifest(without)) == ["main"]
    config_only = base_manifest(main="", mcp={"command": "node", "args": ["server.js"]})
    assert check_manifest(config_only) == []


def test_mcp_declaration_is_required_for_config_only_and_mcp_type() -> None:
    # main "" without mcp (or inline code) fits no distribution: the whole manifest is wrong.
    [config_only] = check_manifest(base_manifest(main=""))
    assert (config_only.path, problem_line(config_only)) == (
        "",
        'manifest.json: needs main "" with an mcp declaration (configuration only), or '
        "inlineCode / inlineUiCode (inline code), when no package is uploaded",
    )
    assert fields(check_manifest(base_manifest(type="mcp"))) == ["mcp"]


@pytest.mark.parametrize(
    ("declaration", "problem_fields"),
    [
        ({"command": "node"}, []),
        ({"transport": "stdio", "command": "node", "args": ["a"], "env": {"K": "v"}}, []),
        ({"transport": "sse", "url": "https://mcp.example/sse"}, []),
        ({"transport": "streamable-http", "url": "http://localhost:1/mcp"}, []),
        ({}, ["mcp.command"]),
        ({"command": "node", "args": "a b", "env": {"K": 1}}, ["mcp.args", "mcp.env"]),
        ({"transport": "sse"}, ["mcp.url"]),
        ({"transport": "websocket", "url": "ws://x"}, ["mcp.transport"]),
        ("node server.js", ["mcp"]),
    ],
)
def test_mcp_declaration_shapes(declaration: Any, problem_fields: list[str]) -> None:
    assert fields(check_mcp_declaration(declaration)) == problem_fields


def test_ui_entry_needs_the_ui_render_permission(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path, files={"ui.js": "ui"})
    manifest = base_manifest(contributes={"ui": {"entry": "ui.js"}})
    assert fields(check_manifest(manifest, directory)) == ["permissions"]
    manifest["permissions"] = ["ui.render"]
    assert check_manifest(manifest, directory) == []


def test_files_named_by_the_manifest_must_exist(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path)
    manifest = base_manifest(
        main="dist/index.js",
        icon="icon/icon.png",
        permissions=["ui.render"],
        contributes={"ui": {"entry": "../ui.js"}},
    )
    assert fields(check_manifest(manifest, directory)) == [
        "main",
        "contributes.ui.entry",
        "icon",
    ]


def test_icon_name_is_not_a_file_but_a_large_icon_file_is_refused(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path, files={"icon/icon.png": b"\x89PNG" + b"0" * 256 * 1024})
    assert check_manifest(base_manifest(icon="puzzle"), directory) == []
    problems = check_manifest(base_manifest(icon="icon/icon.png"), directory)
    assert [problem_line(problem) for problem in problems] == [
        "icon: icon/icon.png is 262148 bytes; the limit is 262144"
    ]


def test_version_override_is_checked(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path)
    with pytest.raises(ManifestInvalid) as caught:
        load_checked_manifest(directory, "not-semver")
    assert fields(caught.value.problems) == ["version"]
    assert load_checked_manifest(directory, "2.0.0").version == "2.0.0"


def test_publish_lists_every_problem_and_writes_nothing(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path, id="X", version="one", category=None)
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert "MANIFEST_INVALID: manifest.json has 4 problems" in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("  - ")]
    assert [line.split(":")[0] for line in lines] == [
        "  - id",
        "  - id",
        "  - version",
        "  - category",
    ]
    # The service is asked for its categories (not reachable here): nothing is written.
    assert fake.writes() == []


def test_unreadable_manifest_is_reported(tmp_path: Path, invoke: Invoke) -> None:
    directory = tmp_path / "broken"
    directory.mkdir()
    (directory / "manifest.json").write_text("{not json")
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert "  - manifest.json: is not valid JSON: Expecting property name" in result.stderr


# The service's rules, applied before anything is sent


def test_main_left_out_of_the_package_is_a_problem(tmp_path: Path) -> None:
    # node_modules/ is never packed: the service would not find main in the package.
    directory = make_plugin(
        tmp_path, main="node_modules/server/index.js", files={"node_modules/server/index.js": "x"}
    )

    [problem] = check_manifest(read_manifest(directory), directory)

    assert problem_line(problem) == (
        "main: names node_modules/server/index.js, which is not in the package"
    )


def test_files_reached_through_a_link_inside_the_folder_count_as_packed(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path, files={"icon/big.png": b"\x89PNG" + b"0" * 256 * 1024})
    (directory / "icon" / "icon.png").symlink_to("big.png")

    [problem] = check_manifest(base_manifest(icon="icon/icon.png"), directory)

    assert (problem.code, problem.path) == (Code.ICON_TOO_LARGE, "icon")


def test_icon_given_as_url_is_a_problem() -> None:
    [problem] = check_manifest(base_manifest(icon="https://tracker.example/p.png"))

    assert problem_line(problem) == (
        "icon: must be a path inside the package or an icon name, not a URL"
    )


def test_hidden_characters_are_problems_with_their_place() -> None:
    problems = check_manifest(base_manifest(description="safe\u202etxt", **{"a\u200bb": 1}))

    assert [problem_line(problem) for problem in problems] == [
        "a\\u200bb: key name contains invisible or bidirectional-control characters (U+200B)",
        "description: contains invisible or bidirectional-control characters (U+202E)",
    ]


def test_config_only_may_carry_inline_code_instead_of_mcp() -> None:
    assert check_manifest(base_manifest(main="", inlineCode="export default 1;")) == []


def test_blank_mcp_command_and_config_key_are_problems() -> None:
    manifest = base_manifest(type="mcp", mcp={"command": " "}, config=[{"key": "  "}])

    assert fields(check_manifest(manifest)) == ["mcp.command", "config[0].key"]


def test_deeply_nested_manifest_is_reported_not_a_crash(tmp_path: Path, invoke: Invoke) -> None:
    directory = tmp_path / "deep"
    directory.mkdir()
    (directory / "manifest.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")

    result = invoke(["publish", str(directory)])

    assert result.exit_code == 1
    assert "  - manifest.json: is not valid JSON" in result.stderr


def test_repeated_json_key_is_a_problem(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path)
    (directory / "manifest.json").write_text('{"id": "demo-plugin", "id": "other"}')

    with pytest.raises(ManifestInvalid) as caught:
        read_manifest(directory)

    assert caught.value.problems == ['manifest.json: repeats the key "id"']


def test_json_output_carries_every_finding(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    directory = make_plugin(tmp_path, version="1.0", mcp={"transport": "sse"})

    result = invoke(["publish", str(directory), "--json"])

    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["details"]["findings"] == [
        {
            "code": "version-invalid",
            "severity": "error",
            "path": "version",
            "message": "must be a semver version such as 1.2.3 or 1.2.3-beta.1",
        },
        {
            "code": "mcp-invalid",
            "severity": "error",
            "path": "mcp.url",
            "message": "must be an http(s) URL for transport sse",
        },
    ]
    assert fake.writes() == []


@pytest.mark.parametrize(
    ("path", "safe"),
    [("dist/ui.js", True), ("./a.js", True), ("../a.js", False), ("a:b.js", False), (".", False)],
)
def test_safe_relative(path: str, safe: bool) -> None:
    assert safe_relative(path) is safe
