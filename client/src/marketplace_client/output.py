"""Everything the commands print: steps and errors on stderr, results on stdout.

With `--json`, stdout carries exactly one JSON document shaped like the service's envelope
(`{"success": true, "data": ...}` or `{"success": false, "error": {...}}`), so scripts can
read it the same way they read the API.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Column, Table
from rich.text import Text

from marketplace_client.errors import CliError
from marketplace_client.limits import format_size
from marketplace_client.next_steps import NO_SUBJECT, Subject, explain

# Below this size a progress bar would only flicker.
LARGE_BYTES = 1024 * 1024

ProgressCallback = Callable[[int], None]


def _ignore_progress(_completed: int) -> None:
    return None


class BinarySpeedColumn(ProgressColumn):
    """The transfer speed in binary units (`1.2 MiB/s`), as every size the tool prints;
    rich's own speed column counts in decimal megabytes."""

    def __init__(self) -> None:
        super().__init__(table_column=Column(no_wrap=True))

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        shown = "?" if speed is None else f"{format_size(int(speed))}/s"
        return Text(shown, style="progress.data.speed")


# On a wide terminal the line stops here rather than stretch the bar across the screen.
PROGRESS_MAX_WIDTH = 100
# Sizes, speed and time left (`45.0/123.0 MiB 12.3 MiB/s 0:00:07`) and a bar of 15.
FIXED_COLUMNS = 50
DESCRIPTION_MIN_WIDTH = 8


class _FittedProgress(Progress):
    def __init__(
        self,
        *columns: ProgressColumn,
        console: Console,
        get_time: Callable[[], float] | None = None,
    ) -> None:
        self._screen = console  # set before Progress renders its first table
        super().__init__(*columns, console=console, transient=True, expand=True, get_time=get_time)

    def make_tasks_table(self, tasks: Iterable[Task]) -> Table:
        table = super().make_tasks_table(tasks)
        table.width = min(self._screen.width, PROGRESS_MAX_WIDTH)
        # The description gives way first: the bar keeps room to move.
        table.columns[0].max_width = max(DESCRIPTION_MIN_WIDTH, table.width - FIXED_COLUMNS)
        return table


def progress_bar(console: Console, get_time: Callable[[], float] | None = None) -> Progress:
    """A byte progress bar that fits the console's width, however narrow: the description
    gives way (cut with an ellipsis) and the bar takes what is left, so the line never
    wraps; sizes and speed in binary units (MiB), as the summaries print them."""
    columns = (
        TextColumn(
            "{task.description}",
            table_column=Column(no_wrap=True, overflow="ellipsis"),
        ),
        BarColumn(bar_width=None, table_column=Column(ratio=1)),
        DownloadColumn(binary_units=True, table_column=Column(no_wrap=True)),
        BinarySpeedColumn(),
        TimeRemainingColumn(table_column=Column(no_wrap=True)),
    )
    return _FittedProgress(*columns, console=console, get_time=get_time)


class Output:
    def __init__(self, *, json_mode: bool = False, subject: Subject = NO_SUBJECT) -> None:
        self.json_mode = json_mode
        # What the command is about: errors name it and say what to do next.
        self.subject = subject
        self.out = Console(highlight=False, soft_wrap=True)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)

    def step(self, message: str) -> None:
        """A line about what is happening now."""
        self.err.print(message, markup=False)

    def warn(self, message: str) -> None:
        self.err.print(f"warning: {message}", style="yellow", markup=False)

    def error(self, error: CliError) -> None:
        error = explain(error, self.subject)
        self.err.print(f"error: {error.headline()}", style="red", markup=False)
        for line in error.extra_lines():
            self.err.print(line, markup=False)
        if self.json_mode:
            self.emit_json({"success": False, "error": error.to_json()})

    def emit_json(self, document: dict[str, Any]) -> None:
        typer.echo(json.dumps(document, ensure_ascii=False, indent=2, sort_keys=True))

    def result(self, data: dict[str, Any], human: Callable[[], None]) -> None:
        """The command's result: JSON for scripts, or whatever `human` prints."""
        if self.json_mode:
            self.emit_json({"success": True, "data": data})
        else:
            human()

    def fail(self, error: CliError) -> NoReturn:
        self.error(error)
        raise typer.Exit(error.exit_code)

    @contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[ProgressCallback]:
        """A byte progress bar on stderr, shown only for large transfers on a terminal."""
        show = (
            not self.json_mode and self.err.is_terminal and (total is None or total >= LARGE_BYTES)
        )
        if not show:
            yield _ignore_progress
            return
        with progress_bar(self.err) as bar:
            task = bar.add_task(description, total=total)

            def update(completed: int) -> None:
                bar.update(task, completed=completed)

            yield update


@contextmanager
def reporting_errors(out: Output) -> Iterator[None]:
    """Turn a CliError raised by a command into its printed form and exit code 1; a file
    the command could not read or write is reported the same way, never as a traceback."""
    try:
        yield
    except CliError as exc:
        out.fail(exc)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        out.fail(CliError("IO_ERROR", f"{where}{exc.strerror or exc}"))
