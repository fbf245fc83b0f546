"""The README's shell examples work when copied, from the raw file or the rendered page.

Inside a numbered list the blocks are indented, and a copy from the raw file keeps that
indentation: a heredoc's terminator then no longer starts its line and never ends it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from marketplace_client.main import app

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>\w*)[ \t]*$")
HEREDOC = re.compile(r"<<(?P<dash>-?)[ \t]*(?P<quote>['\"]?)(?P<word>\w+)(?P=quote)")


def shell_blocks(text: str) -> list[str]:
    """Every ```sh block as it stands in the raw file, indentation included."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        fence = FENCE.match(line)
        if current is None:
            if fence and fence["lang"] in ("sh", "bash", "shell", "console"):
                current = []
        elif fence:
            blocks.append("\n".join(current) + "\n")
            current = None
        else:
            current.append(line)
    return blocks


def unterminated_heredocs(script: str) -> list[str]:
    """The heredocs of `script` whose terminator line never comes, as a shell reads it."""
    lines = script.splitlines()
    missing: list[str] = []
    for number, line in enumerate(lines):
        for heredoc in HEREDOC.finditer(line):
            word = heredoc["word"]
            rest = lines[number + 1 :]
            # `<<-` strips leading tabs only, never spaces.
            strip = (lambda s: s.lstrip("\t")) if heredoc["dash"] else (lambda s: s)
            if not any(strip(candidate) == word for candidate in rest):
                missing.append(f"line {number + 1}: <<{heredoc['dash']}{word}")
    return missing


BLOCKS = shell_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_has_shell_blocks() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.strip().splitlines()[0][:40])
def test_every_heredoc_ends_when_copied_from_the_raw_file(block: str) -> None:
    assert unterminated_heredocs(block) == []
    assert unterminated_heredocs(textwrap.dedent(block)) == []


def test_the_check_finds_an_indented_terminator() -> None:
    assert unterminated_heredocs("   cat > f <<'EOF'\n   {}\n   EOF\n") == ["line 1: <<EOF"]


def plugin_folder_block() -> str:
    [block] = [b for b in BLOCKS if "hello-weather/manifest.json" in b]
    return block


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("copied", ["raw", "rendered"])
def test_the_five_minute_plugin_folder_is_made_by_its_commands(tmp_path: Path, copied: str) -> None:
    block = plugin_folder_block()
    script = block if copied == "raw" else textwrap.dedent(block)
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "hello-weather"
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert (manifest["id"], manifest["version"], manifest["main"]) == (
        "hello-weather",
        "1.0.0",
        "server.js",
    )
    assert (folder / manifest["main"]).is_file()
    checked = CliRunner().invoke(app, ["validate", str(folder), "--json"])
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.stdout)["data"]["errors"] == 0
