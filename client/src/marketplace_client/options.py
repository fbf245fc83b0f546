"""Options shared by the client commands."""

from __future__ import annotations

from typing import Annotated

import typer

BackendOption = Annotated[
    str | None,
    typer.Option(
        "--backend",
        envvar="MARKETPLACE_BACKEND",
        show_envvar=True,
        help="Service address (default: the last login's, else http://127.0.0.1:8000).",
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="MARKETPLACE_TOKEN",
        show_envvar=True,
        show_default=False,
        help="Access token or publishing token (mkt_pat_...) (default: the login stored by "
        "`marketplace login`, renewed automatically).",
    ),
]
JsonOption = Annotated[
    bool,
    typer.Option(
        "--json", help="Print one JSON document (the service's envelope shape) for scripts."
    ),
]
