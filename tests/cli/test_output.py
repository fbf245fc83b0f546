from __future__ import annotations

import io

import pytest
import typer
from rich.console import Console

from marketplace_client.errors import CliError, ManifestInvalid
from marketplace_client.output import LARGE_BYTES, Output, reporting_errors


def terminal_output() -> tuple[Output, io.StringIO]:
    out = Output()
    buffer = io.StringIO()
    out.err = Console(file=buffer, force_terminal=True, width=100)
    return out, buffer


def test_progress_bar_is_drawn_for_large_transfers_on_a_terminal() -> None:
    out, buffer = terminal_output()
    with out.progress("Uploading demo.tar.gz", 4 * LARGE_BYTES) as update:
        update(LARGE_BYTES)
        update(4 * LARGE_BYTES)
    assert "Uploading demo.tar.gz" in buffer.getvalue()


def test_no_progress_bar_for_small_transfers_or_json() -> None:
    out, buffer = terminal_output()
    with out.progress("Uploading", 10) as update:
        update(10)
    out.json_mode = True
    with out.progress("Uploading", 4 * LARGE_BYTES) as update:
        update(LARGE_BYTES)
    assert buffer.getvalue() == ""


def test_manifest_errors_list_every_problem_under_the_headline() -> None:
    out, buffer = terminal_output()
    out.err = Console(file=buffer, width=100)
    with pytest.raises(typer.Exit), reporting_errors(out):
        raise ManifestInvalid(["id: bad", "version: bad"])
    assert buffer.getvalue().splitlines() == [
        "error: MANIFEST_INVALID: manifest.json has 2 problems",
        "  - id: bad",
        "  - version: bad",
    ]


def test_error_one_line_form() -> None:
    assert CliError("X", "went wrong").one_line() == "X: went wrong"
    assert (
        ManifestInvalid(["a: b"]).one_line()
        == "MANIFEST_INVALID: manifest.json has 1 problem: a: b"
    )
