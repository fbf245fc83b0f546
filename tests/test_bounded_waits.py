"""Bounded waits (issue 12): a dependency that accepts connections and never answers costs a
request its timeout, then 503 SERVICE_UNAVAILABLE with Retry-After; /readyz says so within
its own bound; a genuine bug is still 500.

The outer `asyncio.wait_for(..., GUARD)` is only a safety net so a regression fails instead
of hanging the suite; no test asserts how long anything took.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.app import create_app, shutdown
from marketplace.config import Settings
from marketplace.db import DbTimeouts, is_database_outage, make_engine, make_sessionmaker
from marketplace.errors import DatabaseUnavailable, StorageUnavailable
from marketplace.models import PluginVersion
from marketplace.storage.base import blob_key
from marketplace.storage.s3 import S3BlobStore, parse_s3_url
from tests.factories import Factory
from tests.helpers import err, silent_server
from tests.packages.tarballs import package
from tests.plugins.helpers import publish

pytestmark = pytest.mark.fault

GUARD = 30.0
T = TypeVar("T")


async def guarded(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, GUARD)


def unavailable(response: httpx.Response) -> dict[str, Any]:
    """The 503 envelope, with the Retry-After header and details.retryAfter agreeing."""
    error = err(response, 503, "SERVICE_UNAVAILABLE")
    assert response.headers["retry-after"] == "5"
    assert error["details"] == {"retryAfter": 5}
    return error


@pytest.fixture
def silent_port() -> Iterator[int]:
    with silent_server() as port:
        yield port


@pytest.fixture
async def hung_database_app(settings: Settings, silent_port: int) -> AsyncIterator[FastAPI]:
    """An app whose PostgreSQL accepts connections and never answers."""
    app = create_app(
        settings.model_copy(
            update={
                "database_url": f"postgresql+asyncpg://x@127.0.0.1:{silent_port}/db",
                "db_connect_timeout_seconds": 0.5,
                "db_statement_timeout_seconds": 0.5,
                "db_pool_timeout_seconds": 0.5,
            }
        )
    )
    yield app
    await shutdown(app)


def _client(app: FastAPI) -> httpx.AsyncClient:
    # raise_app_exceptions=False: an exception that escaped would show as a 500 here
    # rather than as a raised error, so the status assertions are what catches it.
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://test")


# --- the database hangs -----------------------------------------------------------------


async def test_public_read_answers_503_when_the_database_never_answers(
    hung_database_app: FastAPI,
) -> None:
    async with _client(hung_database_app) as http:
        response = await guarded(http.get("/api/v1/plugins/browse"))
    error = unavailable(response)
    assert error["message"] == "The database is unavailable; retry later"


async def test_write_answers_503_when_the_database_never_answers(
    hung_database_app: FastAPI,
) -> None:
    async with _client(hung_database_app) as http:
        response = await guarded(
            http.post(
                "/api/v1/auth/login", json={"email": "a@example.com", "password": "whatever1"}
            )
        )
    unavailable(response)


async def test_readyz_answers_503_within_its_own_bound_when_the_database_hangs(
    settings: Settings, silent_port: int
) -> None:
    # The connect timeout alone would hold the probe for a minute: /readyz's bound ends it.
    app = create_app(
        settings.model_copy(
            update={
                "database_url": f"postgresql+asyncpg://x@127.0.0.1:{silent_port}/db",
                "db_connect_timeout_seconds": 60,
                "ready_check_timeout_seconds": 0.5,
            }
        )
    )
    try:
        async with _client(app) as http:
            response = await guarded(http.get("/readyz"))
    finally:
        await shutdown(app)
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "error: no answer within 0.5 s"
    assert body["checks"]["storage"] == "ok"


async def test_readyz_reports_a_database_connect_timeout(hung_database_app: FastAPI) -> None:
    async with _client(hung_database_app) as http:
        response = await guarded(http.get("/readyz"))
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == "error: DatabaseUnavailable"


async def test_an_exhausted_pool_answers_503(settings: Settings, is_postgres: bool) -> None:
    if not is_postgres:
        pytest.skip("SQLite's engine does not pool connections to a limit")
    # One pooled connection and one overflow, both held by the test: the request waits the
    # pool timeout, then 503.
    app = create_app(settings)
    engine = make_engine(
        settings.database_url, pool_size=1, timeouts=DbTimeouts(connect=5, statement=5, pool=0.5)
    )
    await app.state.engine.dispose()
    app.state.engine = engine
    app.state.sessionmaker = make_sessionmaker(engine)
    app.state.write_sessionmaker = make_sessionmaker(engine, write=True)
    try:
        async with engine.connect(), engine.connect(), _client(app) as http:
            response = await guarded(http.get("/api/v1/plugins/browse"))
    finally:
        await shutdown(app)
    unavailable(response)


async def test_a_statement_past_the_statement_timeout_is_database_unavailable(
    database_url: str, is_postgres: bool
) -> None:
    if not is_postgres:
        pytest.skip("statement_timeout is PostgreSQL's")
    engine = make_engine(database_url, timeouts=DbTimeouts(connect=5, statement=0.5, pool=5))
    try:
        async with engine.connect() as conn:
            with pytest.raises(DatabaseUnavailable):
                await guarded(conn.execute(text("SELECT pg_sleep(20)")))
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    ("error", "outage"),
    [
        (sqlite3.OperationalError("database is locked"), True),
        (TimeoutError(), True),
        (ConnectionResetError(), True),
        (sqlite3.OperationalError('near "SELEC": syntax error'), False),
        (sqlite3.IntegrityError("UNIQUE constraint failed: t.id"), False),
        (ValueError("database is locked"), False),
    ],
    ids=["sqlite-busy", "timeout", "reset", "syntax", "constraint", "not-a-db-error"],
)
def test_only_waits_and_lost_connections_are_database_outages(
    error: BaseException, outage: bool
) -> None:
    assert is_database_outage(error) is outage


async def test_a_constraint_violation_is_not_an_outage(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}")
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
            await conn.execute(text("INSERT INTO t VALUES (1)"))
            with pytest.raises(IntegrityError):
                await conn.execute(text("INSERT INTO t VALUES (1)"))
    finally:
        await engine.dispose()


# --- a bug is not an outage ---------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [RuntimeError("a bug"), FileNotFoundError("a missing local file")],
    ids=["RuntimeError", "local-OSError"],
)
async def test_a_plain_bug_is_still_500(app: FastAPI, error: Exception) -> None:
    # A local OSError is not a dependency outage: only the database's connect and the
    # store's calls turn theirs into 503.
    @app.get("/test-only/bug")
    async def bug() -> None:
        raise error

    async with _client(app) as http:
        response = await guarded(http.get("/test-only/bug"))
    err(response, 500, "INTERNAL_ERROR")
    assert "retry-after" not in response.headers


# --- the blob store hangs ---------------------------------------------------------------


async def upload_a_version(
    client: httpx.AsyncClient, factory: Factory
) -> tuple[dict[str, Any], httpx.Response]:
    """A new developer's plugin, and the answer to uploading its version 1.0.0."""
    dev = await factory.developer()
    plugin = await publish(client, dev, type="tool", category="utility")
    manifest = {"id": plugin["pluginKey"], "version": "1.0.0", "main": "index.js"}
    data = package({**manifest, "category": "utility", "type": "tool"}, {"index.js": b"1\n"})
    response = await guarded(
        client.post(
            f"/api/v1/developer/plugins/{plugin['id']}/upload-version",
            data={"version": "1.0.0", "changelog": "first"},
            files={"file": ("plugin.tar.gz", data, "application/gzip")},
            headers=dev.headers,
        )
    )
    return plugin, response


async def versions_of(sessionmaker: async_sessionmaker[AsyncSession], plugin_id: str) -> int:
    async with sessionmaker() as session:
        count = await session.scalar(
            select(func.count())
            .select_from(PluginVersion)
            .where(PluginVersion.plugin_id == plugin_id)
        )
    return count or 0


def silent_store(port: int, **bounds: Any) -> S3BlobStore:
    """An S3 store whose endpoint accepts connections and never answers."""
    url = f"s3://bucket?endpoint_url=http://127.0.0.1:{port}&region=us-east-1"
    return S3BlobStore(parse_s3_url(url), **bounds)


@pytest.fixture
async def hung_s3_store(aws_env: None, silent_port: int) -> AsyncIterator[S3BlobStore]:
    store = silent_store(
        silent_port,
        connect_timeout=0.5,
        read_timeout=0.5,
    )
    yield store
    await store.aclose()


async def test_a_store_call_that_never_answers_is_storage_unavailable(
    hung_s3_store: S3BlobStore,
) -> None:
    with pytest.raises(StorageUnavailable):
        await guarded(hung_s3_store.exists(blob_key("0" * 64)))


async def test_an_upload_answers_503_when_the_store_never_answers(
    app: FastAPI,
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    hung_s3_store: S3BlobStore,
) -> None:
    app.state.blob_store = hung_s3_store
    plugin, response = await upload_a_version(client, factory)
    error = unavailable(response)
    assert error["message"] == "The file store is unavailable; retry later"
    # Nothing was recorded: the version can be uploaded once the store is back.
    assert await versions_of(sessionmaker, plugin["id"]) == 0


async def test_an_upload_ends_at_the_store_write_deadline_when_the_store_hangs(
    app: FastAPI,
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    settings: Settings,
    aws_env: None,
    silent_port: int,
) -> None:
    # Each read's timeout alone would hold the upload for minutes (60 s, two attempts, for
    # each call); the whole write's deadline ends it, well inside the guard.
    store = silent_store(
        silent_port,
        connect_timeout=60,
        read_timeout=60,
        write_deadline=1.0,
    )
    app.state.blob_store = store
    try:
        plugin, response = await upload_a_version(client, factory)
    finally:
        await store.aclose()

    error = unavailable(response)
    assert error["message"] == "The file store did not take the package within 1 s; retry later"
    assert await versions_of(sessionmaker, plugin["id"]) == 0
    # The upload's temporary file is gone with the request.
    assert list((settings.data_dir / "uploads").glob("upload-*")) == []


async def test_writes_abandoned_at_their_deadline_are_bounded(
    aws_env: None, silent_port: int, tmp_path: Path
) -> None:
    # Each abandoned call keeps its thread until its own timeouts (60 s here): past the cap a
    # write is refused at once instead of starting one more.
    store = silent_store(
        silent_port,
        connect_timeout=60,
        read_timeout=60,
        write_deadline=0.3,
        max_write_calls=2,
    )
    package_file = tmp_path / "package.tar.gz"
    package_file.write_bytes(b"x" * 10)
    sha = "ab" * 32
    messages = []
    try:
        for _ in range(3):
            with pytest.raises(StorageUnavailable) as refused:
                await guarded(
                    store.put_file(
                        blob_key(sha), package_file, content_type="application/gzip", sha256=sha
                    )
                )
            messages.append(refused.value.message)
        assert store.write_calls_in_flight == 2
    finally:
        await store.aclose()

    assert messages == [
        "The file store did not take the package within 0.3 s; retry later",
        "The file store did not take the package within 0.3 s; retry later",
        "The file store is still busy with earlier writes; retry later",
    ]


def test_the_default_write_deadline_is_the_largest_package_at_a_slow_healthy_link() -> None:
    settings = Settings(plugin_package_max_mb=100, scenario_package_max_mb=50)
    assert settings.storage_write_deadline_seconds == 10 + 100 / 4
    larger = Settings(plugin_package_max_mb=400)
    assert larger.storage_write_deadline_seconds == 10 + 400 / 4
    assert Settings(storage_write_timeout_seconds=7).storage_write_deadline_seconds == 7


async def test_readyz_answers_within_its_bound_when_the_store_hangs(
    app: FastAPI, client: httpx.AsyncClient, aws_env: None, silent_port: int
) -> None:
    # The store's own timeouts would hold the probe past the guard: /readyz's bound, and
    # abandoning the probe's thread to them, end it.
    store = silent_store(
        silent_port,
        connect_timeout=60,
        read_timeout=60,
    )
    app.state.blob_store = store
    app.state.settings = app.state.settings.model_copy(update={"ready_check_timeout_seconds": 0.5})
    try:
        response = await guarded(client.get("/readyz"))
    finally:
        await store.aclose()
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["storage"] == "error: no answer within 0.5 s"
