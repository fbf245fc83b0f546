"""The read engine of the embedded default (db.make_read_engine, kit.sqlite_inline): its
statements run on the event loop's thread, it cannot write, and another connection's
write lock never holds it up."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import event, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from marketplace.db import make_engine, make_read_engine, make_sessionmaker
from marketplace.kit.sqlite_inline import InlineConnection


def _thread_reporting(engine: AsyncEngine) -> None:
    """SQL function thread_id(): the thread the statement runs on."""

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.create_function("thread_id", 0, threading.get_ident)


@pytest.fixture
async def engines(tmp_path: Path) -> AsyncIterator[tuple[AsyncEngine, AsyncEngine]]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'inline.db'}"
    write = make_engine(url)
    async with write.begin() as conn:
        await conn.execute(text("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
        await conn.execute(text("INSERT INTO notes (body) VALUES ('first')"))
    read = make_read_engine(url)
    assert read is not None
    yield write, read
    await read.dispose()
    await write.dispose()


async def test_a_read_session_runs_on_the_loop_thread_and_a_write_session_does_not(
    engines: tuple[AsyncEngine, AsyncEngine],
) -> None:
    write, read = engines
    for engine in (write, read):
        _thread_reporting(engine)
        await engine.dispose()  # new connections, which hear the listener
    async with make_sessionmaker(read)() as session:
        assert await session.scalar(text("SELECT body FROM notes")) == "first"
        assert await session.scalar(text("SELECT thread_id()")) == threading.get_ident()
        raw = await (await session.connection()).get_raw_connection()
        assert isinstance(raw.driver_connection, InlineConnection)
    async with make_sessionmaker(write, write=True)() as session:
        # aiosqlite's own thread, as before: a writer waiting for the lock blocks nothing.
        assert await session.scalar(text("SELECT thread_id()")) != threading.get_ident()


async def test_a_write_through_a_read_session_fails_at_once_and_writes_nothing(
    engines: tuple[AsyncEngine, AsyncEngine],
) -> None:
    write, read = engines
    async with make_sessionmaker(read)() as session:
        with pytest.raises(OperationalError, match="readonly"):
            await session.execute(text("INSERT INTO notes (body) VALUES ('second')"))
        await session.rollback()
    async with write.connect() as conn:
        assert (await conn.execute(text("SELECT body FROM notes"))).scalars().all() == ["first"]


async def test_a_read_goes_on_while_another_connection_holds_the_write_lock(
    engines: tuple[AsyncEngine, AsyncEngine],
) -> None:
    """WAL: the reader sees the last commit and never waits for the lock (on the loop's
    thread a wait would stall every request; the bound only turns a hang into a failure)."""
    write, read = engines
    async with make_sessionmaker(write, write=True)() as writer:
        await writer.execute(text("INSERT INTO notes (body) VALUES ('uncommitted')"))
        async with make_sessionmaker(read)() as reader:
            bodies = await asyncio.wait_for(
                reader.execute(text("SELECT body FROM notes ORDER BY id")), timeout=10
            )
            assert bodies.scalars().all() == ["first"]
        await writer.commit()
    async with make_sessionmaker(read)() as reader:
        assert (await reader.execute(text("SELECT count(*) FROM notes"))).scalar() == 2


async def test_a_closed_inline_connection_refuses_calls(tmp_path: Path) -> None:
    import sqlite3

    connection = await InlineConnection(lambda: sqlite3.connect(tmp_path / "closed.db"))
    await connection.close()
    with pytest.raises(ValueError, match=r"no active connection|closed"):
        await connection.execute("SELECT 1")


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+asyncpg://nobody@127.0.0.1:1/none",
        "sqlite+aiosqlite://",
        "sqlite+aiosqlite:///:memory:",
    ],
)
def test_only_a_sqlite_file_gets_a_read_engine(url: str) -> None:
    assert make_read_engine(url) is None


def test_the_app_reads_through_the_read_engine_on_sqlite(app: FastAPI) -> None:
    read_engine = app.state.read_engine
    bound = app.state.sessionmaker.kw["bind"]
    if app.state.engine.dialect.name == "sqlite":
        assert read_engine is not None and bound is read_engine
        write_bind = app.state.write_sessionmaker.kw["bind"]
        assert write_bind.sync_engine.pool is app.state.engine.sync_engine.pool
    else:
        assert read_engine is None and bound is app.state.engine
