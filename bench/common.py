"""Pieces the benchmarks share: free ports, server processes, the CLI, machine facts."""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"

START_SECONDS = 30.0
CLI_SECONDS = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "marketplace_client.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"marketplace {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return done.stdout


@contextlib.contextmanager
def running(
    command: list[str], env: dict[str, str], url: str, log_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """A server process, answering /healthz; stopped (terminate, then kill) on exit."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_healthy(process, url, log_path)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def wait_healthy(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early:\n{log_path.read_text(errors='replace')}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"server did not answer /healthz within {START_SECONDS:.0f} s")


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = ""
    with contextlib.suppress(OSError), open("/proc/loadavg") as loadavg:
        load = " ".join(loadavg.read().split()[:3])
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": model,
        "cpus": os.cpu_count(),
        "load_average_at_start": load,
        "git": git_describe(),
    }


def git_describe() -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return done.stdout.strip()
    return ""
