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


def _settled_counts(url: str) -> list[list[float]]:
    """/metrics' /healthz counts until five readings in a row agree (counters are added
    after each response, so a reading may lag for a moment), at most 10 s."""
    seen: list[list[float]] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text = httpx.get(f"{url}/metrics").text
        seen.append([float(v) for v in HEALTHZ_COUNT.findall(text)])
        if len(seen) >= 5 and all(counts == seen[-1] for counts in seen[-5:]):
            break
        time.sleep(0.05)
    return seen


def test_metrics_under_several_workers_count_every_workers_requests(tmp_path: Path) -> None:
    with live_server(tmp_path / "data", serve_args=("--workers", "2")) as server:
        # Before: live_server's readiness polls (one, or more when a poll timed out on the
        # client after the server had counted it: a loaded machine).
        before = _settled_counts(server.url)[-1]
        assert len(before) == 1 and before[0] >= 1, before
        # A fresh connection per request, so the kernel spreads them over the workers.
        for _ in range(REQUESTS):
            assert httpx.get(f"{server.url}/healthz").status_code == 200
        # Whichever worker answers, the sum; each worker alone saw fewer.
        expected = before[0] + REQUESTS
        seen = _settled_counts(server.url)
        assert seen[-5:] == [[expected]] * 5, seen
        assert any((server.data_dir / "metrics").glob("counter_*.db"))
