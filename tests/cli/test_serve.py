"""`marketplace serve` options reach uvicorn.run (captured in-process, nothing served)."""

from __future__ import annotations

import json
import logging.config
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from marketplace.cli.server import ANALYZE_THREAD
from marketplace.config import get_settings
from marketplace.observability import stdlib_formatter
from marketplace_client.main import app


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """uvicorn.run's and dictConfig's arguments, in a fresh data folder."""
    import uvicorn

    calls: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda target, **kw: calls.update(target=target, **kw))
    # The test process's own logging stays as pytest set it.
    monkeypatch.setattr(logging.config, "dictConfig", lambda c: calls.update(dict_config=c))
    monkeypatch.setenv("MARKETPLACE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MARKETPLACE_LOG_JSON", "true")
    monkeypatch.setenv("MARKETPLACE_LOG_LEVEL", "INFO")  # restored if serve changes it
    for name in ("MARKETPLACE_DATABASE_URL", "MARKETPLACE_STORAGE_URL", "FORWARDED_ALLOW_IPS"):
        monkeypatch.delenv(name, raising=False)
    # Set (empty) so that monkeypatch removes it again whatever serve does with it.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "")
    get_settings.cache_clear()
    yield calls
    get_settings.cache_clear()


def serve(*args: str) -> None:
    result = CliRunner().invoke(app, ["serve", *args])
    assert result.exit_code == 0, result.output


def test_serve_defaults_trust_proxy_headers_from_uvicorn_default_addresses(
    captured: dict[str, Any],
) -> None:
    serve()
    assert captured["target"] == "marketplace.app:create_app"
    assert captured["proxy_headers"] is True
    assert captured["forwarded_allow_ips"] is None  # uvicorn: $FORWARDED_ALLOW_IPS or 127.0.0.1
    assert captured["log_level"] == "info"
    assert captured["access_log"] is False


def test_serve_passes_proxy_options_to_uvicorn(captured: dict[str, Any]) -> None:
    serve(
        "--no-proxy-headers",
        "--forwarded-allow-ips",
        "10.0.0.0/8,192.168.1.5",
        "--workers",
        "3",
        "--host",
        "0.0.0.0",  # noqa: S104 - an argument, nothing binds
    )
    assert captured["proxy_headers"] is False
    assert captured["forwarded_allow_ips"] == "10.0.0.0/8,192.168.1.5"
    assert (captured["workers"], captured["host"]) == (3, "0.0.0.0")  # noqa: S104


def test_serve_log_level_sets_uvicorn_and_the_workers_app(captured: dict[str, Any]) -> None:
    serve("--log-level", "WARNING")
    assert captured["log_level"] == "warning"
    config = captured["log_config"]
    assert config["root"]["level"] == "WARNING"
    assert config["loggers"]["uvicorn.error"]["level"] == "WARNING"
    # The workers' apps read their settings from the environment.
    assert os.environ["MARKETPLACE_LOG_LEVEL"] == "WARNING"


def test_serve_refuses_an_unknown_log_level(captured: dict[str, Any]) -> None:
    result = CliRunner().invoke(app, ["serve", "--log-level", "loud"])
    assert result.exit_code == 2
    assert "target" not in captured


def test_serve_renders_uvicorn_logs_as_json(captured: dict[str, Any]) -> None:
    serve()
    config = captured["log_config"]
    # The same configuration also covers the migration's lines before uvicorn starts.
    assert captured["dict_config"] == config
    assert {"uvicorn", "uvicorn.error", "uvicorn.access"} <= set(config["loggers"])
    assert config["root"]["handlers"] == ["stderr"]
    assert config["handlers"]["stderr"]["formatter"] == "structlog"
    spec = dict(config["formatters"]["structlog"])
    assert spec.pop("()") == "marketplace.observability.stdlib_formatter"
    record = logging.LogRecord(
        "uvicorn.error", logging.INFO, __file__, 1, "Uvicorn running on %s", ("x",), None
    )
    line = json.loads(stdlib_formatter(**spec).format(record))
    assert line["event"] == "Uvicorn running on x"
    assert (line["level"], line["logger"]) == ("info", "uvicorn.error")


def test_serve_with_workers_counts_metrics_in_a_fresh_shared_folder(
    captured: dict[str, Any], tmp_path: Path
) -> None:
    folder = tmp_path / "data" / "metrics"
    folder.mkdir(parents=True)
    (folder / "counter_123.db").write_bytes(b"a previous run")
    serve("--workers", "2")
    assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(folder)
    assert list(folder.iterdir()) == []


def test_serve_with_one_worker_keeps_metrics_in_the_process(captured: dict[str, Any]) -> None:
    serve()
    assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == ""


def test_serve_logs_its_address_database_and_data_folder_with_the_password_hidden(
    captured: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = "postgresql+asyncpg://market:pa55-w0rd@db.internal:5432/market"
    monkeypatch.setenv("MARKETPLACE_DATABASE_URL", url)
    get_settings.cache_clear()
    result = CliRunner().invoke(app, ["serve", "--host", "::1", "--port", "8123"])
    assert result.exit_code == 0, result.output
    [line] = [json.loads(x) for x in result.stderr.splitlines() if '"serving"' in x]
    assert line["address"] == "http://[::1]:8123"
    assert line["database"] == "postgresql+asyncpg://market:***@db.internal:5432/market"
    assert line["data_dir"] == str((tmp_path / "data").resolve())
    assert "pa55-w0rd" not in result.output + result.stderr


def test_serve_with_workers_takes_sqlite_statistics_once_before_them(
    captured: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers would ANALYZE at once and fail against each other's write lock."""
    import sqlite3

    monkeypatch.setenv("MARKETPLACE_ANALYZE_AT_START", "true")
    serve("--workers", "2")
    for thread in threading.enumerate():  # it runs beside the workers' start
        if thread.name == ANALYZE_THREAD:
            thread.join(timeout=60)
    assert os.environ["MARKETPLACE_ANALYZE_AT_START"] == "false"
    assert get_settings().analyze_at_start is False  # what each worker's app reads
    with sqlite3.connect(tmp_path / "data" / "marketplace.db") as db:
        analyzed = {row[0] for row in db.execute("SELECT tbl FROM sqlite_stat1")}
    assert {"alembic_version", "log_head"} <= analyzed  # the tables with rows


def test_serve_with_one_worker_leaves_statistics_to_the_app(
    captured: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARKETPLACE_ANALYZE_AT_START", "true")
    serve()
    assert get_settings().analyze_at_start is True
