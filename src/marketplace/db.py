"""Engine, sessions and the request transaction: one request, one transaction, committed at the edge."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import NullPool

# Execution option that asks SQLite for BEGIN IMMEDIATE: a write transaction takes the
# write lock up front, so two writers never deadlock upgrading shared locks.
IMMEDIATE = "marketplace_immediate"


def _install_sqlite_pragmas(engine: AsyncEngine) -> None:
    sync_engine: Engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, emit BEGIN (pysqlite's legacy autobegin is off).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(IMMEDIATE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def make_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": 30})
        _install_sqlite_pragmas(engine)
        return engine
    if pool_size <= 0:
        return create_async_engine(url, poolclass=NullPool)
    return create_async_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)


async def _session(request: Request, *, write: bool) -> AsyncIterator[AsyncSession]:
    factory: async_sessionmaker[AsyncSession] = request.app.state.sessionmaker
    async with factory() as session:
        if write:
            await session.connection(execution_options={IMMEDIATE: True})
        try:
            yield session
            if write:
                await session.commit()
        except BaseException:
            await session.rollback()
            raise


async def read_session(request: Request) -> AsyncIterator[AsyncSession]:
    async for session in _session(request, write=False):
        yield session


async def write_session(request: Request) -> AsyncIterator[AsyncSession]:
    async for session in _session(request, write=True):
        yield session


ReadSession = Annotated[AsyncSession, Depends(read_session, scope="function")]
# scope="function": commit before the response is sent, so a failed commit is reported.
WriteSession = Annotated[AsyncSession, Depends(write_session, scope="function")]
