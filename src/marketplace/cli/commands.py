"""The entry point the client's `marketplace` command loads to add the server's commands."""

from __future__ import annotations

import typer

from marketplace.cli import keys, server


def register(app: typer.Typer) -> None:
    server.register(app)
    keys.register(app)
