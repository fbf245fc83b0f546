"""`marketplace validate DIR`: every finding at once, exit 0 / 1 / 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest
from typer.testing import Result

from marketplace_client import validate as validate_module
from marketplace_client.config import CredentialStore
from marketplace_client.limits import format_size
from marketplace_client.pack import pack, packed_size, select
from marketplace_client.validate import PackageLimit
from tests.cli.test_startup import SERVER_ONLY, modules_after

from .fake_api import FakeApi
from .helpers import BACKEND, LIMITS, LIMITS_PATH, Invoke, make_plugin, serve_limits, stdout_json

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


# ---------- the package publish would send (issue 23) ----------

API_KEY = "sk-proj-4fK9qL2mV8xR1tZ7"


def limited(monkeypatch: pytest.MonkeyPatch, max_bytes: int) -> None:
    """The contract's default limit, made small enough for a test package to pass it."""
    monkeypatch.setattr(validate_module, "DEFAULT_LIMIT", PackageLimit(max_bytes, "the default"))


def test_the_default_limit_is_the_contracts() -> None:
    assert validate_module.DEFAULT_LIMIT.max_bytes == 100 * 1024 * 1024


def test_a_package_over_the_default_limit_is_an_error_offline(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_plugin(tmp_path, files={"data.bin": os.urandom(8192)})
    size = pack(folder, tmp_path / "sent.tar.gz").size
    limited(monkeypatch, size - 1)
    result = validate(invoke, folder, "--json")
    assert result.exit_code == 1
    findings = stdout_json(result)["data"]["findings"]
    assert [(f["code"], f["severity"], f["path"]) for f in findings] == [
        ("package-too-large", "error", "")
    ]
    assert findings[0]["message"] == (
        f"the package publish would send is {format_size(size)} ({size} bytes), over the "
        f"default of {format_size(size - 1)} ({size - 1} bytes)"
    )
    limited(monkeypatch, size)  # equal passes, as the service's check
    assert validate(invoke, folder).exit_code == 0


def test_the_service_limit_applies_with_backend(
    invoke: Invoke, fake: FakeApi, tmp_path: Path
) -> None:
    serve_limits(fake, package=2048)
    big = make_plugin(tmp_path, files={"data.bin": os.urandom(8192)})
    result = validate(invoke, big, "--backend", BACKEND, "--json")
    assert result.exit_code == 1
    (finding,) = stdout_json(result)["data"]["findings"]
    assert finding["code"] == "package-too-large"
    assert finding["message"].endswith(f"over the limit of {BACKEND} of 2.0 KiB (2048 bytes)")
    small = make_plugin(tmp_path, folder="small")
    assert validate(invoke, small, "--backend", BACKEND).exit_code == 0
    assert fake.calls() == [LIMITS, LIMITS]


def test_the_service_of_a_stored_login_is_asked(
    invoke: Invoke, fake: FakeApi, tmp_path: Path
) -> None:
    CredentialStore().save(BACKEND, "stored-token", "dev@example.com")
    serve_limits(fake, package=2048)
    folder = make_plugin(tmp_path, files={"data.bin": os.urandom(8192)})
    result = validate(invoke, folder, "--json")
    assert result.exit_code == 1
    assert brief(result) == [("package-too-large", "error", "")]
    assert "Authorization" not in fake.find(*LIMITS).headers  # a public endpoint


def test_an_unreachable_service_leaves_the_default_limit_with_a_warning(
    invoke: Invoke, fake: FakeApi, tmp_path: Path
) -> None:
    fake.on("GET", LIMITS_PATH, httpx.ConnectError("connection refused"))
    result = validate(invoke, make_plugin(tmp_path), "--backend", BACKEND)
    assert result.exit_code == 0
    assert "warning: the package size is judged against the default limit" in result.stderr


def test_without_backend_or_login_nothing_is_asked(
    invoke: Invoke, fake: FakeApi, tmp_path: Path
) -> None:
    assert validate(invoke, make_plugin(tmp_path)).exit_code == 0
    assert fake.requests == []


def test_an_env_file_is_reported_left_out_as_publish_leaves_it_out(
    invoke: Invoke, tmp_path: Path
) -> None:
    folder = make_plugin(
        tmp_path, files={".env": f"OPENAI_API_KEY={API_KEY}\n", "certs/dev.pem": "x\n"}
    )
    result = validate(invoke, folder, "--json")
    assert result.exit_code == 0, result.output  # not sent, so not a secret in the package
    assert brief(result) == [
        ("file-left-out", "warning", "file:.env"),
        ("file-left-out", "warning", "file:certs/dev.pem"),
    ]
    assert [f"file:{name}" for name in select(folder).secrets_left_out] == [
        path for _code, _severity, path in brief(result)
    ]
    human = validate(invoke, folder).stdout
    assert (
        "  file:.env: is not packed, as such files usually hold secrets (re-include it with "
        "a `!name` line in .marketplaceignore)"
    ) in human.splitlines()


def test_a_re_included_env_file_is_scanned_as_it_is_sent(invoke: Invoke, tmp_path: Path) -> None:
    folder = make_plugin(
        tmp_path,
        files={".env": f"OPENAI_API_KEY={API_KEY}\n", ".marketplaceignore": "!.env\n"},
    )
    result = validate(invoke, folder, "--json")
    assert result.exit_code == 1
    assert brief(result) == [("secret-found", "error", "file:.env")]


def test_a_folder_publish_cannot_pack_is_an_error(invoke: Invoke, tmp_path: Path) -> None:
    folder = make_plugin(tmp_path)
    (tmp_path / "outside.txt").write_text("x")
    (folder / "link.txt").symlink_to(tmp_path / "outside.txt")
    result = validate(invoke, folder, "--json")
    assert result.exit_code == 1
    findings = stdout_json(result)["data"]["findings"]
    assert [(f["code"], f["message"]) for f in findings] == [
        (
            "package-invalid",
            "publish cannot pack it: link.txt: symbolic link to something outside the folder",
        )
    ]


def test_a_configuration_only_manifest_sends_no_package(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limited(monkeypatch, 1)
    folder = make_plugin(
        tmp_path,
        main="",
        type="mcp",
        mcp={"command": "npx", "args": ["-y", "demo-server"]},
        files={".env": "A=1\n"},
    )
    result = validate(invoke, folder, "--json")
    assert result.exit_code == 0
    assert brief(result) == []


def test_the_size_judged_is_the_size_of_the_package_publish_makes(tmp_path: Path) -> None:
    folder = make_plugin(tmp_path, files={"lib/a.js": "export const a = 1;\n" * 500})
    entries = select(folder).entries
    assert packed_size(entries) == pack(folder, tmp_path / "p.tar.gz", entries=entries).size
