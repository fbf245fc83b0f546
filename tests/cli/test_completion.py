"""Shell completion: `marketplace --install-completion` / `--show-completion` (Typer's)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from marketplace_client.main import app

# Typer detects the shell it runs in (shellingham); with this set, the options take the
# shell's name instead, as `--show-completion bash`.
NAMED_SHELL = "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"


@pytest.mark.parametrize(
    ("shell", "expected"),
    [
        ("bash", "complete -o default -F _marketplace_completion marketplace"),
        ("zsh", "#compdef marketplace"),
        ("fish", "complete --command marketplace"),
    ],
)
def test_show_completion_prints_the_script_for_the_shell(
    monkeypatch: pytest.MonkeyPatch, shell: str, expected: str
) -> None:
    monkeypatch.setenv(NAMED_SHELL, "1")
    result = CliRunner().invoke(app, ["--show-completion", shell], prog_name="marketplace")
    assert result.exit_code == 0, result.output
    assert expected in result.stdout
    assert f"_MARKETPLACE_COMPLETE=complete_{shell}" in result.stdout


def test_the_script_completes_command_names() -> None:
    env = {
        "_MARKETPLACE_COMPLETE": "complete_bash",
        "COMP_WORDS": "marketplace sea",
        "COMP_CWORD": "1",
    }
    result = CliRunner().invoke(app, [], prog_name="marketplace", env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["search"]


def test_the_root_help_offers_completion() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert "--install-completion" in result.stdout
    assert "--show-completion" in result.stdout
