"""A worker killed in the middle of an upload leaves its half-received temp file; the next
start removes it, and so does `storage gc` by age."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.e2e.market import running_market
from tests.e2e.server import live_server
from tests.helpers import ok

BOUNDARY = "killed-upload-boundary"


def _start_upload(url: str, path: str, token: str, sent_bytes: int) -> socket.socket:
    """Send the headers and part of a large multipart body, then leave the socket open."""
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="version"\r\n\r\n1.0.0\r\n'
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
        'filename="p.tar.gz"\r\nContent-Type: application/gzip\r\n\r\n'
    ).encode()
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.sendall(
        (
            f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Authorization: Bearer {token}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
            f"Content-Length: {len(head) + 50 * 1024 * 1024}\r\n\r\n"
        ).encode()
        + head
        + b"\x1f\x8b"
        + os.urandom(sent_bytes)
    )
    return sock


def _parts(uploads: Path) -> list[Path]:
    return sorted(uploads.glob("upload-*.part")) if uploads.exists() else []


def _wait_for(condition: object, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.fault
def test_a_killed_uploads_temp_file_is_removed_at_the_next_start(tmp_path: Path) -> None:
    with running_market(tmp_path) as market:
        headers = {"Authorization": f"Bearer {market.developer_token}"}
        body = {
            "pluginKey": "killed-upload",
            "name": "Killed upload",
            "nameZh": "中断的上传",
            "description": "A plugin whose upload is cut off",
            "descriptionZh": "上传被中断的插件",
            "type": "tool",
            "category": "utility",
        }
        plugin = ok(
            httpx.post(
                f"{market.url}/api/v1/developer/plugins/publish", json=body, headers=headers
            ),
            201,
        )
        uploads = market.server.data_dir / "uploads"
        sock = _start_upload(
            market.url,
            f"/api/v1/developer/plugins/{plugin['id']}/upload-version",
            market.developer_token,
            sent_bytes=256 * 1024,
        )
        try:
            _wait_for(lambda: _parts(uploads), "the upload's temp file")
            os.kill(market.server.process.pid, signal.SIGKILL)
            market.server.process.wait(timeout=10)
        finally:
            sock.close()
        leftovers = _parts(uploads)
        assert len(leftovers) == 1  # nobody removed it: the process died mid-upload
    with live_server(tmp_path / "data") as restarted:
        assert _parts(uploads) == []
        assert httpx.get(f"{restarted.url}/healthz").status_code == 200
        # No row without its blob, one current version, no temp file: DESIGN.md holds.
        market.server = restarted
        assert market.broken_invariants() == []
        versions = market.request("GET", f"/api/v1/admin/plugins/{plugin['id']}/versions")
        assert versions["items"] == []  # the killed upload left no version behind


def test_storage_gc_removes_stale_temp_files_and_keeps_young_ones(tmp_path: Path) -> None:
    with live_server(tmp_path / "data") as server:
        uploads = server.data_dir / "uploads"
        stale = uploads / "upload-stale.part"  # a name without a pid: only age tells
        young = uploads / "upload-young.part"
        for path in (stale, young):
            path.write_bytes(b"partial")
        hour_ago = time.time() - 7200
        os.utime(stale, (hour_ago, hour_ago))
        result = server.cli("storage", "gc", "--min-age", "3600")
        assert "removed 1 abandoned upload file(s)" in result.stdout, result.stdout
        assert not stale.exists()
        assert young.exists()
        dry = server.cli("storage", "gc", "--min-age", "0", "--dry-run")
        assert "abandoned" not in dry.stdout
        assert young.exists()
