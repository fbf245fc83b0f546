"""Shared fixtures: a migrated database and one app per worker; each test gets its own
settings and blob folder on that app, and finds the database as the migrations left it.

Building an app per test cost about 70 ms (its first request builds the middleware stack
and route caches); clearing every table after every test cost 4-8 ms. Now the app is built
once per session and `reset_database` clears only what a test changed (tests/README.md).
Tests that need settings of their own (rate limits) or per-app state of their own (metrics,
a second process's cache) build their own app with `create_app`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import settings as hypothesis_settings
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from marketplace.app import create_app, shutdown
from marketplace.config import Settings
from marketplace.db import make_engine
from marketplace.migrate import upgrade
from marketplace.storage.factory import make_blob_store
from marketplace.trust.keyring import Keyring
from tests.dbreset import reset_database
from tests.dbsetup import (
    create_postgres_database,
    database_label,
    drop_postgres_database,
    postgres_admin_url,
    sqlite_url,
)
from tests.factories import Factory
from tests.helpers import TEST_SECRET

# Shared, loaded machines (CI runs both databases on 2 cores): time per example is not
# what these properties test, so no deadline; the example count stays at the default.
hypothesis_settings.register_profile("marketplace", deadline=None)
hypothesis_settings.load_profile("marketplace")


def pytest_report_header() -> str:
    return f"marketplace database: {database_label()}"


def pytest_sessionstart(session: pytest.Session) -> None:
    # `-q` hides report headers; the database a run used must show in every CI log.
    config = session.config
    if config.get_verbosity() < 0 and not hasattr(config, "workerinput"):
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"marketplace database: {database_label()}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(f"marketplace database: {database_label()}")


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    admin_url = postgres_admin_url()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if admin_url:
        url = create_postgres_database(admin_url, worker)
        upgrade(url)
        yield url
        drop_postgres_database(admin_url, url)
    else:
        url = sqlite_url(tmp_path_factory.mktemp("db"))
        upgrade(url)
        yield url


@pytest.fixture
def scratch_url(database_url: str, tmp_path: Path) -> Iterator[str]:
    """A database of the test's own (same kind as the run's), to migrate down and up
    without disturbing any other test."""
    admin_url = postgres_admin_url()
    if database_url.startswith("postgresql") and admin_url:
        url = create_postgres_database(admin_url, "scratch")
        yield url
        drop_postgres_database(admin_url, url)
    else:
        yield f"sqlite+aiosqlite:///{tmp_path / 'scratch.db'}"


@pytest.fixture(scope="session")
async def reset_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(database_url, pool_size=1)
    yield engine
    await engine.dispose()


@pytest.fixture
async def clean_database(reset_engine: AsyncEngine) -> AsyncIterator[None]:
    """After the test, the database is back to its migrated state, whoever wrote to it."""
    yield
    await reset_database(reset_engine)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """For S3 stores (tests/storage, tests/test_bounded_waits.py): dummy credentials, and no real AWS configuration or metadata service is consulted."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def is_postgres(database_url: str) -> bool:
    return database_url.startswith("postgresql")


def make_settings(database_url: str, folder: Path) -> Settings:
    return Settings(
        data_dir=folder / "data",
        database_url=database_url,
        storage_url=f"file://{folder / 'blobs'}",
        secret_key=TEST_SECRET,  # type: ignore[arg-type]
        public_url="http://test",
        rate_limit_enabled=False,
        log_json=True,
        log_level="WARNING",
    )


@pytest.fixture
def settings(database_url: str, tmp_path: Path, clean_database: None) -> Settings:
    """This test's settings: its own data and blob folders under tmp_path."""
    return make_settings(database_url, tmp_path)


@pytest.fixture(scope="session")
async def session_app(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[FastAPI]:
    application = create_app(make_settings(database_url, tmp_path_factory.mktemp("app")))
    yield application
    await shutdown(application)


@pytest.fixture
async def app(session_app: FastAPI, settings: Settings) -> AsyncIterator[FastAPI]:
    """The worker's app, wearing this test's settings and blob store, with a cold catalogue
    cache; whatever the test puts in `app.state` or adds to its routes is undone afterwards."""
    state = session_app.state._state
    saved = dict(state)
    routes = list(session_app.router.routes)
    openapi_schema = session_app.openapi_schema
    store = make_blob_store(settings)
    session_app.state.settings = settings
    session_app.state.blob_store = store
    # Each test's own keyring (created on first use in its data folder): rotations stay local.
    session_app.state.keyring = Keyring.from_settings(settings)
    try:
        yield session_app
    finally:
        cache = state.get("catalog_cache")
        if cache is not None and cache.reader is not None:
            cache.reader.close()
        index = state.get("search_index")
        if index is not None:
            index.close()  # its follower and writer lock
        state.clear()
        state.update(saved)
        if session_app.router.routes != routes:
            # A test added routes: drop them, and the OpenAPI document that may list them
            # (otherwise it is kept: building it takes most of a second).
            session_app.router.routes[:] = routes
            session_app.openapi_schema = openapi_schema
        await store.aclose()


@pytest.fixture
async def own_app(settings: Settings) -> AsyncIterator[FastAPI]:
    """An app of this test's own, for per-app state the shared one accumulates (metrics)."""
    application = create_app(settings)
    yield application
    await shutdown(application)


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


@pytest.fixture
def sessionmaker(app: FastAPI) -> async_sessionmaker[AsyncSession]:
    factory: async_sessionmaker[AsyncSession] = app.state.write_sessionmaker
    return factory


@pytest.fixture
def factory(app: FastAPI) -> Factory:
    return Factory(app)
