"""`marketplace --version`, and every command's help naming values readably."""

from __future__ import annotations

import importlib.metadata
import re
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from marketplace_client.main import app

# Typer's Python type names in place of value names: what the help must not show.
TYPE_NAMES = re.compile(r"<(bool|str|int|float|path|dir|file|datetime|list\[[^>]*\])>")


def _command_paths(command: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        paths += _command_paths(sub, (*prefix, name))
    return paths


ALL_COMMANDS = _command_paths(typer.main.get_command(app))


def _help(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_version_prints_the_package_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"marketplace {importlib.metadata.version('marketplace')}\n"


def test_every_command_is_walked() -> None:
    assert {("login",), ("whoami",), ("logout",), ("user", "create"), ("review", "approve")} <= set(
        ALL_COMMANDS
    )


@pytest.mark.parametrize("path", ALL_COMMANDS, ids=lambda p: " ".join(p) or "marketplace")
def test_help_names_values_not_python_types(path: tuple[str, ...]) -> None:
    text = _help(path)
    assert TYPE_NAMES.findall(text) == []
    # Lower-case argument names in braces were Typer's default usage line.
    assert re.findall(r"\{[a-z_]+\}", text) == []


def test_options_show_their_value_name_and_flags_none() -> None:
    text = _help(("install",))
    lines = {line.split()[1]: line for line in text.splitlines() if line.startswith("│ --")}
    assert lines["--dir"].split()[2] == "DIR"
    assert lines["--config"].split()[2] == "CONFIG"
    assert lines["--backend"].split()[2] == "BACKEND"
    assert lines["--json"].split()[2] == "Print"  # no value name at all for a flag
    assert "Usage: marketplace install [OPTIONS] {PLUGIN_KEY}" in text
    assert "<USER|DEVELOPER|ADMIN|SUPER_ADMIN>" in _help(("user", "create"))


def test_a_missing_argument_is_named_as_in_the_help() -> None:
    result = CliRunner().invoke(app, ["install"])
    assert result.exit_code == 2
    assert "Missing argument 'PLUGIN_KEY'" in result.output
