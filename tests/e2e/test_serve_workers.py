"""`marketplace serve --workers 2`: /metrics sums every worker's counts."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import live_server

pytestmark = pytest.mark.e2e

REQUESTS = 40
HEALTHZ_COUNT = re.compile(
    r'^http_requests_total\{method="GET",route="/healthz",status="200"\} (\S+)$', re.MULTILINE
)


def test_metrics_under_several_workers_count_every_workers_requests(tmp_path: Path) -> None:
    with live_server(tmp_path / "data", serve_args=("--workers", "2")) as server:
        # A fresh connection per request, so the kernel spreads them over the workers.
        for _ in range(REQUESTS):
            assert httpx.get(f"{server.url}/healthz").status_code == 200
        # Plus live_server's one successful readiness poll. Each worker alone saw fewer.
        expected = REQUESTS + 1
        seen: list[list[float]] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            text = httpx.get(f"{server.url}/metrics").text
            seen.append([float(v) for v in HEALTHZ_COUNT.findall(text)])
            # Whichever worker answers, the sum (counters are added after the response).
            if len(seen) >= 5 and all(counts == [expected] for counts in seen[-5:]):
                break
            time.sleep(0.05)
        assert seen[-5:] == [[expected]] * 5, seen
        assert any((server.data_dir / "metrics").glob("counter_*.db"))
