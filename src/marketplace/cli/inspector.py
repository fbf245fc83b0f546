"""`marketplace inspector`, and the inspector `marketplace serve` starts beside the API."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from marketplace.config import Settings

# How long a stopping inspector may finish its current job before it is killed (the
# job is then run again by another inspector: its lease runs out).
STOP_GRACE_SECONDS = 10


def inspector(
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=64,
            help="Jobs run at once (default: $MARKETPLACE_INSPECTION_WORKERS, at least 1).",
        ),
    ] = None,
) -> None:
    """Run inspection jobs (CONTRACT 13) on this host, from the queue the API hosts fill.

    Set MARKETPLACE_INSPECTION_WORKERS=0 on the API hosts so that they run none."""
    from marketplace.config import get_settings
    from marketplace.inspection.worker import run_inspector
    from marketplace.observability import configure_logging

    settings = get_settings()
    configure_logging(json_logs=settings.log_json, level=settings.log_level)
    run_inspector(settings, workers or max(1, settings.inspection_workers))


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def start_child(settings: Settings) -> subprocess.Popen[bytes] | None:
    """The inspector `serve` runs beside the API (none when the setting says 0)."""
    if settings.inspection_workers == 0:
        return None
    return subprocess.Popen(  # our own interpreter and module
        [sys.executable, "-m", "marketplace.inspection.worker"],
        env=os.environ.copy(),
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )


def stop_child(child: subprocess.Popen[bytes] | None) -> None:
    if child is None or child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
