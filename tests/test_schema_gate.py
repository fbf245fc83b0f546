"""A database without the schema, or behind the migrations, answers 503 SERVICE_UNAVAILABLE
on every route that needs it (never 500), its log names the missing migration, and the
process serves as soon as the migrations are applied, without a restart. Both databases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio.to_thread
import httpx
import pytest
import structlog
from fastapi import FastAPI
from sqlalchemy.engine import make_url

from marketplace.app import create_app, shutdown
from marketplace.errors import DatabaseUnavailable, ServiceUnavailable
from marketplace.migrate import head_revision, upgrade
from marketplace.schema_gate import SchemaGate, SchemaState
from tests.conftest import make_settings

ALL_MIGRATIONS = sorted(
    p.stem
    for p in (Path(__file__).parents[1] / "src/marketplace/migrations/versions").glob("2*.py")
)
LOGIN = {"email": "nobody@example.com", "password": "not-a-password-1"}


@pytest.fixture
async def unmigrated(scratch_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    """An app over a database that no migration has touched; the gate looks again at once."""
    application = create_app(make_settings(scratch_url, tmp_path))
    gate: SchemaGate = application.state.schema_gate
    gate.recheck_seconds = 0.0
    yield application
    await shutdown(application)


async def _client(application: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url="http://t")


def _assert_schema_503(response: httpx.Response, missing: list[str]) -> None:
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "SERVICE_UNAVAILABLE"
    assert "marketplace db upgrade" in error["message"]
    assert error["details"]["missingMigrations"] == missing
    assert int(response.headers["Retry-After"]) > 0


async def test_a_database_without_the_schema_answers_503_on_every_route_that_needs_it(
    unmigrated: FastAPI,
) -> None:
    async with await _client(unmigrated) as http:
        with structlog.testing.capture_logs() as logs:
            browse = await http.get("/api/v1/plugins/browse")
            login = await http.post("/api/v1/auth/login", json=LOGIN)
            console = await http.get("/console/login")
            admin = await http.get(
                "/api/v1/admin/plugins", headers={"Authorization": "Bearer x.y.z"}
            )
        root = await http.get("/", headers={"Accept": "application/json"})
        health = await http.get("/healthz")
        ready = await http.get("/readyz")
        document = await http.get("/openapi.json")

    for response in (browse, login, console, admin):
        _assert_schema_503(response, ALL_MIGRATIONS)
    assert (health.status_code, document.status_code, root.status_code) == (200, 200, 200)
    assert root.json()["data"]["console"] == "/console"
    assert ready.status_code == 503
    # One log line for the state, naming the first missing migration, not one per request.
    errors = [e for e in logs if e["log_level"] == "error"]
    assert len(errors) == 1
    assert errors[0]["first_missing"] == ALL_MIGRATIONS[0]
    assert errors[0]["missing_migrations"] == ", ".join(ALL_MIGRATIONS)


async def test_the_service_serves_once_the_migrations_are_applied_without_a_restart(
    unmigrated: FastAPI, scratch_url: str
) -> None:
    async with await _client(unmigrated) as http:
        before = await http.get("/api/v1/plugins/browse")
        await anyio.to_thread.run_sync(upgrade, scratch_url)
        after = await http.get("/api/v1/plugins/browse")
        login = await http.post("/api/v1/auth/login", json=LOGIN)

    _assert_schema_503(before, ALL_MIGRATIONS)
    assert after.status_code == 200, after.text
    assert after.json()["data"]["items"] == []
    assert login.status_code == 401
    assert login.json()["error"]["code"] == "UNAUTHORIZED"
    assert unmigrated.state.schema_gate.open is True


async def test_a_database_behind_the_head_names_the_missing_migration(
    unmigrated: FastAPI, scratch_url: str
) -> None:
    previous = ALL_MIGRATIONS[-2].split("_")[1]
    await anyio.to_thread.run_sync(upgrade, scratch_url, previous)

    async with await _client(unmigrated) as http:
        with structlog.testing.capture_logs() as logs:
            response = await http.get("/api/v1/plugins/browse")
        await anyio.to_thread.run_sync(upgrade, scratch_url)
        served = await http.get("/api/v1/plugins/browse")

    _assert_schema_503(response, [ALL_MIGRATIONS[-1]])
    [logged] = [e for e in logs if e["log_level"] == "error"]
    assert logged["revision"] == previous
    assert logged["first_missing"] == ALL_MIGRATIONS[-1]
    assert served.status_code == 200


def test_a_revision_newer_than_the_code_is_served_and_older_ones_name_what_is_missing(
    unmigrated: FastAPI,
) -> None:
    gate: SchemaGate = unmigrated.state.schema_gate

    # A revision this code does not know: a later release migrated, then the code rolled back.
    assert gate.state_at("9999").ready
    assert gate.state_at(None).missing == tuple(ALL_MIGRATIONS)
    assert gate.state_at(head_revision()).missing == ()


async def test_a_database_that_cannot_be_opened_is_503_not_500(tmp_path: Path) -> None:
    folder = tmp_path / "not-a-file.db"
    folder.mkdir()  # SQLite cannot open a folder: an error at connect, not a missing table
    application = create_app(make_settings(f"sqlite+aiosqlite:///{folder}", tmp_path))
    try:
        async with await _client(application) as http:
            response = await http.get("/api/v1/plugins/browse")
    finally:
        await shutdown(application)

    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert "missingMigrations" not in response.json()["error"]["details"]


async def test_one_request_looks_at_a_time_and_the_others_take_its_result(
    unmigrated: FastAPI,
) -> None:
    gate: SchemaGate = unmigrated.state.schema_gate
    gate.recheck_seconds = 60.0
    looks = 0

    async def slow_look() -> SchemaState:
        nonlocal looks
        looks += 1
        await anyio.sleep(0.2)
        raise DatabaseUnavailable()

    gate._read = slow_look  # type: ignore[method-assign]
    refused: list[str] = []

    async def ask() -> None:
        try:
            await gate.require()
        except ServiceUnavailable as exc:
            refused.append(exc.code)

    async with anyio.create_task_group() as group:
        for _ in range(6):
            group.start_soon(ask)
    await ask()  # after the look, within the recheck interval: its result, no new look

    assert looks == 1
    assert refused == ["SERVICE_UNAVAILABLE"] * 7
    assert gate.open is False


async def test_a_postgresql_database_that_does_not_exist_is_503_not_500(
    database_url: str, tmp_path: Path
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's own refusal (3D000) at connect")
    missing = make_url(database_url).set(database="mkt_no_such_database")
    url = missing.render_as_string(hide_password=False)
    application = create_app(make_settings(url, tmp_path))
    try:
        async with await _client(application) as http:
            response = await http.post("/api/v1/auth/login", json=LOGIN)
    finally:
        await shutdown(application)

    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "SERVICE_UNAVAILABLE"


async def test_a_first_burst_on_a_ready_database_is_served(
    unmigrated: FastAPI, scratch_url: str
) -> None:
    # A new worker's first requests arrive together: none may be refused while the first
    # of them looks at a schema that is ready.
    await anyio.to_thread.run_sync(upgrade, scratch_url)
    statuses: list[int] = []
    async with await _client(unmigrated) as http:

        async def browse() -> None:
            statuses.append((await http.get("/api/v1/plugins/browse")).status_code)

        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(browse)

    assert statuses == [200] * 8
