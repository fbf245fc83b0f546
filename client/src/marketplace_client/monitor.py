"""`marketplace log verify [--backend URL] [--json]`: a monitor of the service's
transparency log (CONTRACT 15).

It reads the signed checkpoint and every entry, recomputes the root and checks it against
the checkpoint and against the checkpoint it stored on its last run (`transparency.py`),
then stores the new one. Run it from cron on another host than the service, with its own
configuration folder (`MARKETPLACE_CONFIG_DIR`): what it stored is its memory of the log.

Exit codes: 0 the log holds (one summary line); 1 an inconsistency (an entry changed, a
fork, a log that shrank, a bad signature or an unknown key); 2 the log could not be
checked (service unreachable, an error or malformed answer, an unreadable configuration).
Nothing is stored on 1 or 2. All the log's endpoints are public: no token is sent.
"""

from __future__ import annotations

import typer

from marketplace_client.config import resolve_backend
from marketplace_client.context import get_runtime
from marketplace_client.errors import CliError
from marketplace_client.options import BackendOption, JsonOption
from marketplace_client.output import Output
from marketplace_client.transparency import LogReport, LogUnavailable, verify_log
from marketplace_client.trust import TrustError

EXIT_INCONSISTENT = 1
EXIT_UNCHECKED = 2

app = typer.Typer(
    name="log",
    help="The service's transparency log of approvals, takedowns and key changes.",
    no_args_is_help=True,
)


def exit_code(error: CliError) -> int:
    """1 when the log is proven wrong; 2 when it could not be checked at all."""
    if isinstance(error, TrustError) and not isinstance(error, LogUnavailable):
        return EXIT_INCONSISTENT
    return EXIT_UNCHECKED


@app.command("verify")
def verify_command(
    ctx: typer.Context,
    backend: BackendOption = None,
    json_output: JsonOption = False,
) -> None:
    """Check every entry of the log against its signed checkpoint and the checkpoint stored
    last time; store the new one (exit 1: an inconsistency; 2: could not check)."""
    out = Output(json_mode=json_output)
    runtime = get_runtime(ctx)
    try:
        with runtime.client(resolve_backend(backend), None) as api:
            report: LogReport = verify_log(api)
    except CliError as exc:
        out.error(exc)
        raise typer.Exit(exit_code(exc)) from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        out.error(CliError("IO_ERROR", f"{where}{exc.strerror or exc}"))
        raise typer.Exit(EXIT_UNCHECKED) from None
    out.result(report.to_json(), lambda: out.out.print(report.summary(), markup=False))


def register(root: typer.Typer) -> None:
    root.add_typer(app)
