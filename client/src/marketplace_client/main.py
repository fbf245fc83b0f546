"""The `marketplace` console script.

Client commands (publish, validate, publish-batch, login, logout, install, review, log ...) are
registered here from their modules. Other installed distributions add commands through the
`marketplace.commands` entry point group: the server package adds serve, db, user, storage
and keys, so an author who installs only this package gets only the author's and user's tool.
"""

from __future__ import annotations

import importlib.metadata
import sys
from typing import Annotated

import typer

from marketplace_client import (
    audit,
    batch,
    catalog,
    export,
    install,
    lifecycle,
    login,
    monitor,
    publish,
    review,
    status,
    validate,
)
from marketplace_client.api import CLI_VERSION
from marketplace_client.helpstyle import ReadableGroup

app = typer.Typer(
    cls=ReadableGroup,
    name="marketplace",
    help="Plugin marketplace: publish plugins, install them, run the service.",
    no_args_is_help=True,
    # --install-completion / --show-completion for bash, zsh, fish and PowerShell.
    add_completion=True,
    # Locals would include tokens and passwords.
    pretty_exceptions_show_locals=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"marketplace {CLI_VERSION}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the installed version of the tool and exit.",
        ),
    ] = False,
) -> None:
    """Plugin marketplace command-line tool."""


login.register(app)
publish.register(app)
validate.register(app)
batch.register(app)
install.register(app)
catalog.register(app)
status.register(app)
lifecycle.register(app)
export.register(app)
audit.register(app)
review.register(app)
monitor.register(app)

COMMANDS_ENTRY_POINTS = "marketplace.commands"


def _register_installed_commands(root: typer.Typer) -> None:
    """Commands of other installed distributions (the server's), each a `register(app)`."""
    for entry in importlib.metadata.entry_points(group=COMMANDS_ENTRY_POINTS):
        try:
            register = entry.load()
        except ImportError as exc:  # a broken server install must not take the client down
            print(f"marketplace: commands from {entry.value} not loaded: {exc}", file=sys.stderr)
            continue
        register(root)


_register_installed_commands(app)

if __name__ == "__main__":  # `python -m marketplace_client.main`, e.g. from end-to-end tests
    app()
