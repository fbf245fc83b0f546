"""The end-to-end server runs in the topology the run names: the embedded default on the
SQLite run, and on the PostgreSQL run four workers on PostgreSQL, S3 (moto) and Redis. These
tests prove the other e2e tests really exercised that topology."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import redis

from tests.e2e.market import Market, write_plugin
from tests.e2e.topology import REDIS_URL, SCALED_WORKERS

pytestmark = pytest.mark.e2e


def _workers(pid: int) -> list[int]:
    """uvicorn's worker processes under pid (Linux /proc): children started by
    multiprocessing's spawn, not its resource tracker."""
    return [
        child
        for child in _children(pid)
        if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()
    ]


def _children(pid: int) -> list[int]:
    """Processes whose parent is pid."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _publish_tarball(market: Market, tmp_path: Path, key: str) -> str:
    folder = write_plugin(tmp_path / "src", key)
    result = market.as_admin("publish", str(folder))
    assert result.returncode == 0, result.stderr
    sha256: str = market.version(key, "1.0.0")["sha256"]
    return sha256


def test_the_server_is_ready_in_its_topology(market: Market) -> None:
    response = httpx.get(f"{market.url}/readyz")
    assert response.status_code == 200
    checks = response.json()["checks"]
    assert checks["database"] == "ok"
    assert checks["storage"] == "ok"
    if market.topology.name == "scaled-out":
        assert checks["redis"] == "ok"
    else:
        assert "redis" not in checks


def test_blobs_live_in_the_topologys_store(market: Market, tmp_path: Path) -> None:
    sha256 = _publish_tarball(market, tmp_path, "topology-blob")
    key = f"{sha256[:2]}/{sha256[2:4]}/{sha256}"
    assert key in market.blob_files()
    local = market.server.data_dir / "blobs" / key
    if market.topology.name == "scaled-out":
        assert not local.exists()  # in the bucket, not on this host's disk
    else:
        assert local.is_file()


def test_the_scaled_out_server_runs_four_workers_sharing_redis(market: Market) -> None:
    if market.topology.name != "scaled-out":
        pytest.skip("the scaled-out topology runs on the PostgreSQL run")
    # uvicorn's supervisor process, with one child per worker.
    assert len(_workers(market.server.process.pid)) == SCALED_WORKERS
    # New connections spread over the workers; every one counts in Redis, not in itself.
    for _ in range(20):
        assert httpx.get(f"{market.url}/api/v1/plugins/categories").status_code == 200
    prefix = market.topology.env["MARKETPLACE_REDIS_KEY_PREFIX"]
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=2)
    assert any(True for _ in client.scan_iter(match=f"{prefix}*", count=1000))
