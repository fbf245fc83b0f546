"""Inspection end to end (CONTRACT 13), with the real sandbox and real processes: the
inspector `marketplace serve` starts inspects an upload without the upload waiting for
it; an inspector killed mid-job is replaced, the job runs again and its findings appear
once (the fault suite)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Connection, select

from marketplace.inspection.runner import sandbox_available
from marketplace.models import PluginInspection
from tests.dbsetup import create_postgres_database, drop_postgres_database, postgres_admin_url
from tests.e2e.market import Market, running_market
from tests.e2e.server import COMMAND
from tests.e2e.topology import EMBEDDED, REDIS_URL, Topology
from tests.helpers import ok
from tests.migrations import run_now

pytestmark = pytest.mark.skipif(
    sandbox_available() is not None, reason=f"no inspection sandbox: {sandbox_available()}"
)

# A stdio MCP server in plain Python (the sandbox's python3 is the system's). Before it
# answers it sleeps SLEEP seconds, then looks up LOOKUP when set.
SERVER = (
    Path(__file__).parents[1] / "inspection" / "fixtures" / "_shared" / "inline_server.py"
).read_text()


def _developer(market: Market, method: str, path: str, status: int, **kwargs: Any) -> Any:
    headers = {"Authorization": f"Bearer {market.developer_token}"}
    return ok(
        httpx.request(method, market.url + path, headers=headers, timeout=30, **kwargs), status
    )


def _publish_inline(market: Market, key: str, env: dict[str, str]) -> dict[str, Any]:
    body = {
        "pluginKey": key,
        "name": key,
        "nameZh": "检查",
        "description": "d",
        "descriptionZh": "描述",
        "type": "mcp",
    }
    plugin = _developer(market, "POST", "/api/v1/developer/plugins/publish", 201, json=body)
    manifest = {
        "id": key,
        "version": "1.0.0",
        "category": "productivity",
        "main": "server.py",
        "inlineCode": SERVER,
        "mcp": {"command": "python3", "args": ["server.py"], "env": env},
    }
    started = time.monotonic()
    version: dict[str, Any] = _developer(
        market,
        "POST",
        f"/api/v1/developer/plugins/{plugin['id']}/create-version",
        201,
        json={"version": "1.0.0", "manifest": manifest},
    )
    # The upload answered before its inspection ran: it never waits for it.
    assert version["inspection"]["status"] in ("queued", "running")
    assert time.monotonic() - started < 10
    return version


def _wait_for(check: Callable[[], Any], seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what} did not happen within {seconds} s")


def _inspection(market: Market, key: str) -> dict[str, Any]:
    return market.version(key, "1.0.0")


@pytest.fixture
def own_topology(topology: Topology) -> Iterator[Topology]:
    """A deployment of this test's own, of the run's kind: the embedded default, or (the
    PostgreSQL run) a fresh PostgreSQL database with the inspection queue in Redis under a
    prefix of its own."""
    admin_url = postgres_admin_url()
    if topology is EMBEDDED or admin_url is None:
        yield EMBEDDED
        return
    url = create_postgres_database(admin_url, "killed")
    env = {
        "MARKETPLACE_DATABASE_URL": url,
        "MARKETPLACE_INSPECTION_QUEUE_URL": REDIS_URL,
        "MARKETPLACE_REDIS_KEY_PREFIX": f"killed-{uuid.uuid4().hex[:8]}",
    }
    try:
        yield Topology("postgresql", (), env, None, needs_upgrade=True)
    finally:
        drop_postgres_database(admin_url, url)


def test_serve_inspects_an_upload_within_a_minute(market: Market) -> None:
    _publish_inline(market, "live-benign", {})
    _publish_inline(market, "live-lookup", {"LOOKUP": "exfil.example.org"})
    done = _wait_for(
        lambda: all(
            _inspection(market, key)["inspection"]["status"] in ("done", "failed")
            for key in ("live-benign", "live-lookup")
        ),
        60,
        "both inspections",
    )
    assert done
    benign = _inspection(market, "live-benign")
    assert benign["inspection"]["status"] == "done", benign["inspection"]["error"]
    assert [t["name"] for t in benign["inspection"]["tools"]] == ["echo"]
    assert benign["reviewStatus"] == "pending"
    lookup = _inspection(market, "live-lookup")
    assert lookup["inspection"]["observed"]["network"] == [
        {"host": "exfil.example.org", "port": None}
    ]
    assert lookup["inspection"]["undeclared"] == ["network:exfil.example.org"]
    assert lookup["reviewStatus"] == "rejected"
    assert not market.broken_invariants()


@pytest.mark.fault
def test_an_inspector_killed_mid_job_is_replaced_and_findings_appear_once(
    tmp_path: Path, own_topology: Topology
) -> None:
    quick = {
        "MARKETPLACE_INSPECTION_WORKERS": "0",  # the API runs none: inspectors below
        "MARKETPLACE_INSPECTION_SECONDS": "15",
        "MARKETPLACE_INSPECTION_LEASE_MARGIN_SECONDS": "2",
        "MARKETPLACE_INSPECTION_SWEEP_SECONDS": "1",
    }
    with running_market(tmp_path, own_topology, **quick) as market:
        version = _publish_inline(
            market, "killed-mid-job", {"SLEEP": "4", "CONNECT": "203.0.113.7"}
        )
        env = {**market.server.env, **quick}
        first = subprocess.Popen([*COMMAND, "inspector"], env=env, start_new_session=True)
        try:
            _wait_for(
                lambda: _inspection(market, "killed-mid-job")["inspection"]["status"] == "running",
                60,
                "the first attempt",
            )
        finally:
            os.killpg(first.pid, signal.SIGKILL)  # the inspector and its sandbox, mid-job
            first.wait()
        second = subprocess.Popen([*COMMAND, "inspector"], env=env, start_new_session=True)
        try:
            shown = _wait_for(
                lambda: (
                    (v := _inspection(market, "killed-mid-job"))["inspection"]["status"]
                    in ("done", "failed")
                    and v
                ),
                90,
                "the retried attempt",
            )
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(30)
        assert shown["inspection"]["status"] == "done", shown["inspection"]["error"]
        codes = [f["code"] for f in shown["findings"]]
        assert codes.count("capability-undeclared") == 1
        assert shown["reviewStatus"] == "rejected"

        def attempts(connection: Connection) -> int:
            query = select(PluginInspection.attempts).where(
                PluginInspection.version_id == version["id"]
            )
            return int(connection.execute(query).scalar_one())

        assert run_now(market.database_url, attempts) == 2
        assert not market.broken_invariants()
