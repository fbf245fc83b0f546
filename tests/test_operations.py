from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import structlog
import structlog.testing
from fastapi import FastAPI
from prometheus_client import generate_latest
from sqlalchemy import text
from starlette.requests import ClientDisconnect
from starlette.types import Message

from marketplace.storage.local import LocalBlobStore
from tests.helpers import err


async def test_unknown_route_is_enveloped_404(client: httpx.AsyncClient) -> None:
    err(await client.get("/api/v1/does-not-exist"), 404, "NOT_FOUND")


async def test_wrong_method_is_enveloped_405(client: httpx.AsyncClient) -> None:
    err(await client.delete("/api/v1/auth/me"), 405, "METHOD_NOT_ALLOWED")


async def test_unexpected_exception_is_500_without_trace(app: FastAPI, settings) -> None:
    @app.get("/test-only/boom")
    async def boom() -> None:
        raise RuntimeError("secret internal detail")

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        response = await http.get("/test-only/boom")
    error = err(response, 500, "INTERNAL_ERROR")
    assert "secret internal detail" not in response.text
    assert "Traceback" not in response.text
    assert error["message"] == "Internal server error"


async def test_unexpected_exception_closes_the_connection(app: FastAPI) -> None:
    # The server drops the connection after an unhandled exception; a client that kept it
    # for its next request would see that request reset (found by the publish e2e tests).
    @app.get("/test-only/boom")
    async def boom() -> None:
        raise RuntimeError("boom")

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        response = await http.get("/test-only/boom")
    assert response.status_code == 500
    assert response.headers["connection"] == "close"


async def test_request_id_is_echoed(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert response.headers["x-request-id"] == "abc-123"


async def test_request_id_is_generated_when_missing_or_unsafe(client: httpx.AsyncClient) -> None:
    generated = (await client.get("/healthz")).headers["x-request-id"]
    assert len(generated) == 32
    unsafe = (
        await client.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces"})
    ).headers["x-request-id"]
    assert unsafe != "bad id\twith spaces"
    assert len(unsafe) == 32


async def test_error_responses_carry_request_id(client: httpx.AsyncClient) -> None:
    response = await client.get("/nope", headers={"X-Request-ID": "req-1"})
    assert response.status_code == 404
    assert response.headers["x-request-id"] == "req-1"


async def test_healthz_answers_ok(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}


async def test_readyz_reports_a_reachable_database(client: httpx.AsyncClient) -> None:
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"]["database"] == "ok"


async def test_readyz_reports_unreachable_database(app: FastAPI, client: httpx.AsyncClient) -> None:
    from marketplace.db import make_engine

    good = app.state.engine
    app.state.engine = make_engine("postgresql+asyncpg://nobody@127.0.0.1:1/none", pool_size=0)
    try:
        response = await client.get("/readyz")
    finally:
        await app.state.engine.dispose()
        app.state.engine = good
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"


async def test_metrics_count_requests_by_route_template(own_app: FastAPI) -> None:
    # Counters live per app: a fresh one, so no other test's requests are counted.
    transport = httpx.ASGITransport(app=own_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        await client.get("/api/v1/auth/me")
        await client.get("/random/path/1")
        text = (await client.get("/metrics")).text
    assert 'http_requests_total{method="GET",route="/api/v1/auth/me",status="401"} 1.0' in text
    assert 'route="<unmatched>"' in text
    assert "/random/path/1" not in text
    assert "http_request_duration_seconds_bucket" in text


async def test_openapi_lists_account_endpoints(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]
    for path in (
        "/api/v1/auth/login",
        "/api/v1/developer/identity/status",
        "/api/v1/admin/users/{user_id}/role",
    ):
        assert path in paths


@pytest.mark.parametrize("body", [b"[]", b'"text"', b"null"])
async def test_non_object_json_body_is_400(client: httpx.AsyncClient, body: bytes) -> None:
    response = await client.post(
        "/api/v1/auth/login", content=body, headers={"content-type": "application/json"}
    )
    err(response, 400, "VALIDATION_FAILED")


async def test_declared_oversize_json_body_is_enveloped_413(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/v1/auth/login",
        content=b"{}",
        headers={"content-type": "application/json", "content-length": str(17 * 1024 * 1024)},
    )
    err(response, 413, "PAYLOAD_TOO_LARGE")


async def test_streamed_oversize_json_body_is_enveloped_413(client: httpx.AsyncClient) -> None:
    async def body():  # chunked: no Content-Length
        yield b'{"email": "'
        for _ in range(17):
            yield b"x" * (1024 * 1024)
        yield b'"}'

    response = await client.post(
        "/api/v1/auth/login", content=body(), headers={"content-type": "application/json"}
    )
    err(response, 413, "PAYLOAD_TOO_LARGE")


@pytest.fixture
def info_logs(own_app: FastAPI) -> Iterator[None]:
    """Let info lines through for the test (the suite's settings log warnings only); after
    the app is made, since making one configures logging."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    try:
        yield
    finally:
        structlog.configure(**saved)


async def _boom() -> None:
    raise RuntimeError("a bug")


@pytest.mark.usefixtures("info_logs")
async def test_a_500_carries_the_request_id_and_its_log_line_names_it(own_app: FastAPI) -> None:
    own_app.add_api_route("/boom", _boom)
    transport = httpx.ASGITransport(app=own_app, raise_app_exceptions=False)
    with structlog.testing.capture_logs(
        processors=[structlog.contextvars.merge_contextvars]
    ) as logs:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            response = await client.get("/boom", headers={"X-Request-ID": "req-500"})
    err(response, 500, "INTERNAL_ERROR")
    assert response.headers["x-request-id"] == "req-500"
    assert response.headers["connection"] == "close"
    assert "a bug" not in response.text
    [failure] = [entry for entry in logs if entry["event"] == "unhandled exception"]
    assert failure["request_id"] == "req-500"
    [access] = [entry for entry in logs if entry["event"] == "request"]
    assert access["status"] == 500
    assert access["request_id"] == "req-500"


async def _hang_up() -> None:
    raise ClientDisconnect()


@pytest.mark.usefixtures("info_logs")
async def test_a_client_that_hangs_up_is_an_info_line_not_an_error(own_app: FastAPI) -> None:
    own_app.add_api_route("/hang-up", _hang_up)
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": "/hang-up", "raw_path": b"/hang-up", "query_string": b"",
        "root_path": "", "headers": [], "client": ("127.0.0.1", 1), "server": ("test", 80),
    }  # fmt: skip
    with structlog.testing.capture_logs() as logs:
        await own_app(scope, receive, send)  # httpx insists on an answer: call it directly
    assert sent == []  # nobody to answer
    levels = {entry["event"]: entry["log_level"] for entry in logs}
    assert levels["client disconnected"] == "info"
    assert "unhandled exception" not in levels
    text = generate_latest(own_app.state.metrics.registry).decode()
    assert 'route="/hang-up",status="499"' in text


async def test_readyz_refuses_a_database_behind_the_migrations(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    async with app.state.write_sessionmaker() as session:
        current = await session.scalar(text("SELECT version_num FROM alembic_version"))
        await session.execute(text("UPDATE alembic_version SET version_num = '0001'"))
        await session.commit()
    try:
        response = await client.get("/readyz")
    finally:
        async with app.state.write_sessionmaker() as session:
            await session.execute(
                text("UPDATE alembic_version SET version_num = :v"), {"v": current}
            )
            await session.commit()
    assert response.status_code == 503
    database = response.json()["checks"]["database"]
    assert database == f"error: schema at 0001, expected {current} (run marketplace db upgrade)"
    assert (await client.get("/readyz")).status_code == 200


async def test_readyz_refuses_a_store_that_cannot_take_blobs(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    good = app.state.blob_store
    app.state.blob_store = LocalBlobStore(
        tmp_path / "a-file" / "blobs", secret="s", public_url="http://test"
    )
    try:
        response = await client.get("/readyz")
    finally:
        app.state.blob_store = good
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert response.json()["checks"]["storage"].endswith("cannot be written")
