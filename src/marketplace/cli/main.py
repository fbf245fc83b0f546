"""The `marketplace` console script."""

from __future__ import annotations

import typer

from marketplace.cli import server

app = typer.Typer(
    name="marketplace",
    help="Plugin and scenario marketplace: server, publishing tool and install client.",
    no_args_is_help=True,
)
app.command("serve")(server.serve)
app.add_typer(server.db_app, name="db")
app.add_typer(server.user_app, name="user")
