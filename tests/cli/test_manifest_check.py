from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marketplace.cli.errors import ManifestInvalid
from marketplace.cli.manifest_check import (
    check_manifest,
    check_mcp_declaration,
    check_plugin_key,
    load_checked_manifest,
)

from .fake_api import FakeApi
from .helpers import Invoke, base_manifest, make_plugin


def fields(problems: list[str]) -> list[str]:
    return [problem.split(":", 1)[0] for problem in problems]


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
    assert fields(problems) == [
        "id",
        "version",
        "main",
        "category",
        "type",
        "tags",
        "config[1].key",
        "config[2].key",
        "name",
        "description",
    ]


def test_version_with_build_metadata_is_refused() -> None:
    problems = check_manifest(base_manifest(version="1.0.0+abc"))
    assert problems == ["version: '1.0.0+abc' has build metadata (+...), which the service refuses"]


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
    assert fields(check_manifest(base_manifest(main=""))) == ["mcp"]
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
        "icon",
        "main",
        "contributes.ui.entry",
    ]


def test_icon_name_is_not_a_file_but_a_large_icon_file_is_refused(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path, files={"icon/icon.png": b"\x89PNG" + b"0" * 256 * 1024})
    assert check_manifest(base_manifest(icon="puzzle"), directory) == []
    problems = check_manifest(base_manifest(icon="icon/icon.png"), directory)
    assert problems == ["icon: 'icon/icon.png' is larger than 256 KB"]


def test_version_override_is_checked(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path)
    with pytest.raises(ManifestInvalid) as caught:
        load_checked_manifest(directory, "not-semver")
    assert fields(caught.value.problems) == ["version"]
    assert load_checked_manifest(directory, "2.0.0").version == "2.0.0"


def test_publish_lists_every_problem_and_sends_nothing(
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
    assert fake.requests == []


def test_unreadable_manifest_is_reported(tmp_path: Path, invoke: Invoke) -> None:
    directory = tmp_path / "broken"
    directory.mkdir()
    (directory / "manifest.json").write_text("{not json")
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert "not readable JSON" in result.stderr
