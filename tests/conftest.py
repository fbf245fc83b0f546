"""Shared fixtures: a migrated database per worker, an app per test, clean rows after each test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import settings as hypothesis_settings
from sqlalchemy import delete, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.app import create_app, shutdown
from marketplace.config import Settings
from marketplace.migrate import upgrade
from marketplace.models import SEED_CATEGORIES, Base, Category
from tests.dbsetup import (
    create_postgres_database,
    database_label,
    drop_postgres_database,
    postgres_admin_url,
    sqlite_url,
)
from tests.factories import Factory

TEST_SECRET = "test-secret-key-not-for-production-0123456789"

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
def is_postgres(database_url: str) -> bool:
    return database_url.startswith("postgresql")


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=database_url,
        storage_url=f"file://{tmp_path / 'blobs'}",
        secret_key=TEST_SECRET,  # type: ignore[arg-type]
        public_url="http://test",
        rate_limit_enabled=False,
        log_json=True,
        log_level="WARNING",
    )


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(settings)
    yield application
    await _clean_database(application.state.write_sessionmaker)
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


async def _clean_database(factory: async_sessionmaker[AsyncSession]) -> None:
    async with factory() as session:
        for table in reversed(Base.metadata.sorted_tables):
            await session.execute(delete(table))
        session.add_all(
            Category(key=k, name=n, name_zh=z, sort_order=(i + 1) * 10)
            for i, (k, n, z) in enumerate(SEED_CATEGORIES)
        )
        if session.bind.dialect.name == "sqlite":
            await session.execute(text("PRAGMA optimize"))
        await session.commit()
