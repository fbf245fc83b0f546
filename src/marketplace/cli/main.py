"""The `marketplace` console script.

Client commands (publish, validate, publish-batch, login, logout, install, review ...) are
registered here from their modules; the server commands (serve, db, user, storage) come from
`cli/server.py`.
"""

from __future__ import annotations

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

app = typer.Typer(
    name="marketplace",
    help="Plugin marketplace: publish plugins, install them, run the service.",
    no_args_is_help=True,
    add_completion=False,
    # Locals would include tokens and passwords.
    pretty_exceptions_show_locals=False,
)


@app.callback()
def main() -> None:
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
