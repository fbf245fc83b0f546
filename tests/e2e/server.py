"""A real `marketplace serve` subprocess on a free port, for end-to-end and CLI tests.

Both the server and the CLI run as `python -m marketplace_client.main` (the server's commands
come through its entry point) with PYTHONPATH set to this checkout's `src` and `client/src`
folders, so the code under test is the code next to this file (not whatever the installed
console script happens to import).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
CLIENT_SRC = ROOT / "client" / "src"
COMMAND = (sys.executable, "-m", "marketplace_client.main")
START_TIMEOUT = 120


def _with_src(pythonpath: str | None) -> str:
    return os.pathsep.join([str(SRC), str(CLIENT_SRC), *([pythonpath] if pythonpath else [])])


@dataclass
class LiveServer:
    url: str
    data_dir: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log_path: Path

    def cli(
        self, *args: str, check: bool = True, **kwargs: object
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*COMMAND, *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
            **kwargs,  # type: ignore[call-overload]
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def server_env(data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKETPLACE_")}
    env.update(
        MARKETPLACE_DATA_DIR=str(data_dir),
        MARKETPLACE_PUBLIC_URL=f"http://127.0.0.1:{port}",
        MARKETPLACE_RATE_LIMIT_ENABLED="false",
        MARKETPLACE_LOG_LEVEL="WARNING",
        PYTHONPATH=_with_src(os.environ.get("PYTHONPATH")),
    )
    env.update(extra)
    return env


@contextmanager
def live_server(
    data_dir: Path, *, serve_args: tuple[str, ...] = (), **extra_env: str
) -> Iterator[LiveServer]:
    port = free_port()
    env = server_env(data_dir, port, **extra_env)
    log_path = data_dir.parent / f"server-{port}.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [*COMMAND, "serve", "--port", str(port), *serve_args],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        # Generous: four workers importing the app on a loaded 2-core CI machine take a while;
        # only a server that never comes up waits this long.
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited early: {log_path.read_text()}")
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"server did not start within {START_TIMEOUT} s")
            time.sleep(0.1)
        yield LiveServer(url=url, data_dir=data_dir, env=env, process=process, log_path=log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
