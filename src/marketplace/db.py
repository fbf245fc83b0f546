"""Engine, sessions and the request transaction: one per request, committed at the edge."""

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

from marketplace.errors import AppError

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


def make_sessionmaker(
    engine: AsyncEngine, *, write: bool = False
) -> async_sessionmaker[AsyncSession]:
    bind = engine.execution_options(**{IMMEDIATE: True}) if write else engine
    return async_sessionmaker(bind, expire_on_commit=False, autoflush=False)


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def request_session(request: Request) -> AsyncIterator[AsyncSession]:
    """The request's one session; committed when the endpoint returns, rolled back on error
    (except an `AppError` that `keeps_writes`).

    Unsafe methods get BEGIN IMMEDIATE on SQLite (taken lazily at the first statement).
    A route that streams its body (`kit.routing.streams_body`) only reads here: it ends
    this transaction before the body arrives (`end_checks`) and writes in its own.
    """
    route = request.scope.get("route")
    write = request.method not in SAFE_METHODS and not getattr(route, "streams_body", False)
    factory: async_sessionmaker[AsyncSession] = (
        request.app.state.write_sessionmaker if write else request.app.state.sessionmaker
    )
    async with factory() as session:
        try:
            yield session
            await session.commit()
        except AppError as exc:
            await (session.commit() if exc.keeps_writes else session.rollback())
            raise
        except BaseException:
            await session.rollback()
            raise


# scope="function": commit before the response is sent, so a failed commit is reported.
DbSession = Annotated[AsyncSession, Depends(request_session, scope="function")]


async def end_checks(session: AsyncSession) -> None:
    """End the read transaction a streaming route's checks ran in (token, role, owner),
    so no connection, snapshot or lock is held while its body arrives."""
    await session.commit()


def write_sessions(request: Request) -> async_sessionmaker[AsyncSession]:
    """For a route that opens its own write transaction (`async with sessions.begin()`)."""
    factory: async_sessionmaker[AsyncSession] = request.app.state.write_sessionmaker
    return factory


WriteSessions = Annotated[async_sessionmaker[AsyncSession], Depends(write_sessions)]
