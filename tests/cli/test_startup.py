"""The command-line tool is a client: it must start without the server's stack."""

from __future__ import annotations

import json
import subprocess
import sys

SERVER_ONLY = {"sqlalchemy", "fastapi", "starlette", "pydantic_settings", "alembic"}


def modules_after(statement: str) -> set[str]:
    """Top-level packages loaded by a fresh interpreter after running statement."""
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return {name.split(".")[0] for name in json.loads(done.stdout)}


def test_cli_entry_point_imports_none_of_the_servers_dependencies() -> None:
    loaded = modules_after("import marketplace_client.main")

    assert loaded & SERVER_ONLY == set()


def test_cli_help_runs_without_the_servers_dependencies() -> None:
    statement = (
        "from typer.testing import CliRunner\n"
        "from marketplace_client.main import app\n"
        "result = CliRunner().invoke(app, ['publish', '--help'])\n"
        "assert result.exit_code == 0, result.output"
    )

    assert modules_after(statement) & SERVER_ONLY == set()
