"""The `marketplace` console script.

Client commands (publish, validate, publish-batch, login, logout, install, review ...) are
registered here from their modules; the server commands (serve, db, user, storage) come from
`cli/server.py`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from marketplace.cli import (
    audit,
    batch,
    export,
    install,
    keys,
    lifecycle,
    login,
    publish,
    review,
    server,
    validate,
)
from marketplace.cli.api import CLI_VERSION
from marketplace.cli.helpstyle import ReadableGroup

app = typer.Typer(
    cls=ReadableGroup,
    name="marketplace",
    help="Plugin marketplace: publish plugins, install them, run the service.",
    no_args_is_help=True,
    add_completion=False,
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
lifecycle.register(app)
export.register(app)
audit.register(app)
review.register(app)
server.register(app)
keys.register(app)

if __name__ == "__main__":  # `python -m marketplace.cli.main`, e.g. from end-to-end tests
    app()
