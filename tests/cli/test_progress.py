"""The byte progress bar: one line that fits the terminal, sizes and speed in MiB."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from marketplace_client.output import progress_bar

MIB = 1024 * 1024
DESCRIPTION = "Uploading hello-weather-with-a-rather-long-name-1.0.0.tar.gz"


def rendered(width: int, description: str = DESCRIPTION) -> str:
    """The bar of an upload 55 MiB into 123 MiB, at 9 MiB/s, drawn `width` columns wide."""
    now = [0.0]
    screen = io.StringIO()
    console = Console(file=screen, width=width, force_terminal=True, color_system=None)
    bar = progress_bar(console, get_time=lambda: now[0])
    task = bar.add_task(description, total=123 * MIB)
    bar.update(task, completed=10 * MIB)
    now[0] = 5.0
    bar.update(task, completed=55 * MIB)
    console.print(bar.get_renderable())
    return screen.getvalue()


@pytest.mark.parametrize("width", [80, 60, 40])
def test_the_bar_is_one_line_that_fits_the_terminal(width: int) -> None:
    lines = rendered(width).splitlines()
    assert len(lines) == 1, lines
    assert len(lines[0]) <= width
    assert "55.0/123.0 MiB" in lines[0]


def test_the_bar_stops_at_100_columns_on_a_wide_terminal() -> None:
    [line] = rendered(200).splitlines()
    assert len(line.rstrip()) <= 100


def test_a_short_description_is_shown_whole_at_80_columns() -> None:
    [line] = rendered(80, "Uploading demo-1.0.0.tar.gz").splitlines()
    assert line.startswith("Uploading demo-1.0.0.tar.gz ━")


def test_sizes_and_speed_are_binary_units_as_in_the_summaries() -> None:
    [line] = rendered(100).splitlines()
    assert "55.0/123.0 MiB" in line
    assert "9.0 MiB/s" in line
    assert " MB" not in line
