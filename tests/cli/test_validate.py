"""`marketplace validate DIR`: every finding at once, exit 0 / 1 / 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import Result

from tests.cli.test_startup import SERVER_ONLY, modules_after

from .helpers import Invoke, make_plugin, stdout_json

ELF = b"\x7fELF\x02\x01\x01\x00" + b"\0" * 56
MINIFIED = "!function(){" + "var a=1,b=2;a+=b;" * 400 + "}();"


def validate(invoke: Invoke, *args: str | Path) -> Result:
    return invoke(["validate", *map(str, args)], auth=False)


def brief(result: Result) -> list[tuple[str, str, str]]:
    return [(f["code"], f["severity"], f["path"]) for f in stdout_json(result)["data"]["findings"]]


def test_clean_folder_passes(invoke: Invoke, tmp_path: Path) -> None:
    folder = make_plugin(tmp_path)
    result = validate(invoke, folder)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"{folder} passes: 0 errors, 0 warnings, 0 infos"


def test_clean_folder_json(invoke: Invoke, tmp_path: Path) -> None:
    result = validate(invoke, make_plugin(tmp_path), "--json")
    assert result.exit_code == 0
    assert stdout_json(result) == {
        "success": True,
        "data": {"findings": [], "errors": 0, "warnings": 0, "infos": 0},
    }


def problem_folder(tmp_path: Path) -> Path:
    folder = make_plugin(
        tmp_path,
        main="dist/missing.js",
        description="Safe\u202etxt.exe",
        files={"notes.txt": ELF, "dist/app.js": MINIFIED},
        **{"odd\u200bkey": "v"},
    )
    (folder / "notes.txt").chmod(0o755)
    return folder


def test_every_finding_is_printed_grouped_by_severity(invoke: Invoke, tmp_path: Path) -> None:
    folder = problem_folder(tmp_path)
    result = validate(invoke, folder)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "errors (3):",
        "  main: names dist/missing.js, which is not in the package",
        "  odd\\u200bkey: key name contains invisible or bidirectional-control characters (U+200B)",
        "  description: contains invisible or bidirectional-control characters (U+202E)",
        "warnings (1):",
        "  file:notes.txt: is native code (ELF, by its first bytes), although its name does "
        "not say so; it is marked executable",
        "infos (1):",
        "  file:dist/app.js: looks minified: lines average 6816 bytes in its first 6816 bytes "
        "(longest 6816)",
        f"{folder} fails: 3 errors, 1 warning, 1 info",
    ]
    assert "\u200b" not in result.stdout and "\u202e" not in result.stdout


def test_json_lists_every_finding_with_counts(invoke: Invoke, tmp_path: Path) -> None:
    result = validate(invoke, problem_folder(tmp_path), "--json")
    assert result.exit_code == 1
    document = stdout_json(result)
    assert document["success"] is True
    assert {key: document["data"][key] for key in ("errors", "warnings", "infos")} == {
        "errors": 3,
        "warnings": 1,
        "infos": 1,
    }
    assert brief(result) == [
        ("file-missing", "error", "main"),
        ("hidden-characters-in-key", "error", "odd\u200bkey"),
        ("hidden-characters", "error", "description"),
        ("file-native-binary", "warning", "file:notes.txt"),
        ("script-minified", "info", "file:dist/app.js"),
    ]
    assert set(document["data"]["findings"][0]) == {"code", "severity", "path", "message"}


def test_warnings_alone_pass(invoke: Invoke, tmp_path: Path) -> None:
    folder = make_plugin(tmp_path, files={"lib/native.node": b"x"})
    result = validate(invoke, folder, "--json")
    assert result.exit_code == 0
    assert brief(result) == [("file-native-binary", "warning", "file:lib/native.node")]


def test_record_rules_of_publishing_are_errors_too(invoke: Invoke, tmp_path: Path) -> None:
    result = validate(invoke, make_plugin(tmp_path, name=None, type="gadget"), "--json")
    assert result.exit_code == 1
    assert brief(result) == [("type-unknown", "error", "type"), ("required", "error", "name")]


def test_base_folder_adds_the_comparison(invoke: Invoke, tmp_path: Path) -> None:
    base = make_plugin(
        tmp_path,
        folder="v1",
        permissions=["fs.read"],
        config=[{"key": "token"}],
        main="",
        mcp={"command": "node", "args": ["server.js"]},
    )
    folder = make_plugin(
        tmp_path,
        folder="v2",
        permissions=["fs.*", "shell"],
        config=[{"key": "token", "secret": True}, {"key": "region", "required": True}],
        main="",
        mcp={"command": "bash", "args": ["server.js"]},
    )
    alone = validate(invoke, folder, "--json")
    assert alone.exit_code == 0 and brief(alone) == []

    result = validate(invoke, folder, "--base", base, "--json")
    assert result.exit_code == 0
    assert brief(result) == [
        ("permission-widened", "warning", "permissions[0]"),
        ("permission-added", "warning", "permissions[1]"),
        ("mcp-launch-changed", "warning", "mcp.command"),
        ("config-secret-added", "warning", "config[0]"),
        ("config-required-added", "info", "config[1]"),
    ]
    human = validate(invoke, folder, "--base", base)
    assert '  mcp.command: changed from "node" to "bash"' in human.stdout.splitlines()


def test_unreadable_manifest_is_one_error(invoke: Invoke, tmp_path: Path) -> None:
    folder = make_plugin(tmp_path)
    (folder / "manifest.json").write_text('{"id": "a", "id": "b"}')
    result = validate(invoke, folder, "--json")
    assert result.exit_code == 1
    assert brief(result) == [("manifest-repeated-key", "error", "")]
    assert (
        validate(invoke, folder).stdout.splitlines()[1] == '  manifest.json: repeats the key "id"'
    )


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("missing", "plugin folder {dir} is not a folder"),
        ("file", "plugin folder {dir} is not a folder"),
        ("empty", "plugin folder {dir} has no manifest.json"),
    ],
)
def test_a_folder_that_cannot_be_checked_is_exit_2(
    invoke: Invoke, tmp_path: Path, layout: str, message: str
) -> None:
    target = tmp_path / "target"
    if layout == "file":
        target.write_text("x")
    elif layout == "empty":
        target.mkdir()
    result = validate(invoke, target)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"error: USAGE: {message.format(dir=target)}" in result.stderr


def test_a_base_that_cannot_be_read_is_exit_2(invoke: Invoke, tmp_path: Path) -> None:
    folder = make_plugin(tmp_path)
    broken = make_plugin(tmp_path, folder="broken")
    (broken / "manifest.json").write_text("{not json")
    for base in (tmp_path / "absent", broken):
        result = validate(invoke, folder, "--base", base, "--json")
        assert result.exit_code == 2
        error = stdout_json(result)["error"]
        assert error["code"] == "USAGE" and "--base" in error["message"]


def test_usage_errors_of_the_command_line_are_exit_2(invoke: Invoke) -> None:
    assert validate(invoke).exit_code == 2
    assert validate(invoke, ".", "--no-such-option").exit_code == 2


def test_validate_runs_without_the_servers_dependencies(tmp_path: Path) -> None:
    folder = make_plugin(tmp_path)
    statement = (
        "from typer.testing import CliRunner\n"
        "from marketplace_client.main import app\n"
        f"result = CliRunner().invoke(app, ['validate', {json.dumps(str(folder))}])\n"
        "assert result.exit_code == 0, result.output"
    )
    assert modules_after(statement) & SERVER_ONLY == set()
