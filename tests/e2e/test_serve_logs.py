"""With JSON logs on, every line `marketplace serve` writes is JSON, uvicorn's included."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from marketplace.cli.server import console_address
from tests.e2e.server import live_server

pytestmark = pytest.mark.e2e


def test_every_line_of_the_server_output_is_json(tmp_path: Path) -> None:
    with live_server(
        tmp_path / "data", MARKETPLACE_LOG_JSON="true", MARKETPLACE_LOG_LEVEL="INFO"
    ) as server:
        assert httpx.get(f"{server.url}/api/v1/plugins/categories").status_code == 200
    lines = [line for line in server.log_path.read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # fails on the first line that is not
    assert all(isinstance(r, dict) and r.get("event") and r.get("level") for r in records)
    events = [(r.get("logger"), r["event"]) for r in records]
    # Startup and shutdown lines of uvicorn, the migration's, and the app's access line.
    assert any(lg == "uvicorn.error" and e.startswith("Uvicorn running on") for lg, e in events)
    assert any(
        lg == "uvicorn.error" and e.startswith("Finished server process") for lg, e in events
    )
    assert any(lg == "alembic.runtime.migration" for lg, _ in events)
    assert any(
        r["event"] == "request" and r.get("path") == "/api/v1/plugins/categories" for r in records
    )


def test_serve_says_where_it_listens_and_keeps_its_data_in_one_json_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with live_server(data_dir, MARKETPLACE_LOG_JSON="true", MARKETPLACE_LOG_LEVEL="INFO") as server:
        pass
    records = [json.loads(line) for line in server.log_path.read_text().splitlines() if line]
    [serving] = [r for r in records if r["event"] == "serving"]
    assert serving["logger"] == "marketplace.serve"
    assert serving["level"] == "info"
    assert serving["address"] == server.url
    assert serving["data_dir"] == str(data_dir.resolve())
    assert serving["database"] == f"sqlite+aiosqlite:///{data_dir.resolve() / 'marketplace.db'}"
    assert serving["workers"] == 1


def test_serve_says_where_the_reviewer_console_is(tmp_path: Path) -> None:
    with live_server(tmp_path / "data", MARKETPLACE_LOG_LEVEL="INFO") as server:
        assert httpx.get(f"{server.url}/console", follow_redirects=True).status_code == 200
    assert f"Reviewer console at {server.url}/console" in server.log_path.read_text()


def test_the_console_line_is_json_with_its_address_too(tmp_path: Path) -> None:
    with live_server(
        tmp_path / "data", MARKETPLACE_LOG_JSON="true", MARKETPLACE_LOG_LEVEL="INFO"
    ) as server:
        pass
    records = [json.loads(line) for line in server.log_path.read_text().splitlines() if line]
    [line] = [r for r in records if r.get("console")]
    assert line["event"] == f"Reviewer console at {server.url}/console"
    assert (line["logger"], line["level"], line["console"]) == (
        "marketplace.serve",
        "info",
        f"{server.url}/console",
    )


def test_a_wildcard_bind_points_the_browser_at_loopback() -> None:
    everywhere = "0.0.0.0"  # noqa: S104 (a name, nothing is bound)
    assert console_address(everywhere, 8000) == "http://127.0.0.1:8000/console"
    assert console_address("::", 8000) == "http://[::1]:8000/console"
    assert console_address("192.0.2.7", 9000) == "http://192.0.2.7:9000/console"
