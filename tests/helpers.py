"""Assertions on the contract's envelope, the secret key of the test settings, and a hung
dependency to point the app at."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import event

TEST_SECRET = "test-secret-key-not-for-production-0123456789"


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is True, body
    return body["data"]


def err(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is False, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    error: dict[str, Any] = body["error"]
    return error


def field_names(error: dict[str, Any]) -> set[str]:
    return {f["field"] for f in error["details"]["fields"]}


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts connections and never answers: a hung
    dependency (Redis, PostgreSQL, S3). Yields its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                accepted.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        server.close()


def app_engines(app: FastAPI) -> dict[str, Any]:
    """The app's sync engines by role: "threaded" (writes, and searches in SQL) and, on
    SQLite, "inline" (read sessions, db.make_read_engine)."""
    engines = {"threaded": app.state.engine.sync_engine}
    if getattr(app.state, "read_engine", None) is not None:
        engines["inline"] = app.state.read_engine.sync_engine
    return engines


@contextlib.contextmanager
def recording_statements(app: FastAPI, record: Any) -> Iterator[None]:
    """`record` hears every statement of the app's engines: the one of writes and, on
    SQLite, the one of read sessions (db.make_read_engine)."""
    engines = list(app_engines(app).values())
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        yield
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)
