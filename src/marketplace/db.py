"""Engine, sessions and the request transaction: one per request, committed at the edge."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import create_engine, event, make_url
from sqlalchemy.engine import Connection, Engine, ExceptionContext
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import NullPool

from marketplace.errors import AppError, DatabaseUnavailable
from marketplace.kit.log_sql import register_sqlite_functions

# Execution option that asks SQLite for BEGIN IMMEDIATE: a write transaction takes the
# write lock up front, so two writers never deadlock upgrading shared locks.
IMMEDIATE = "marketplace_immediate"


# A reader in WAL mode waits only in rare moments (recovery after a crash, the last
# connection closing): on the event loop's thread (kit.sqlite_inline) not for long. Past
# it, "database is locked" is a 503 with Retry-After (is_database_outage).
READ_BUSY_MS = 250


def _install_sqlite_pragmas(engine: AsyncEngine, *, read_only: bool = False) -> None:
    sync_engine: Engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, emit BEGIN (pysqlite's legacy autobegin is off).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={READ_BUSY_MS if read_only else 30000}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        if read_only:
            # A write through it fails at once instead of waiting for the write lock on
            # the event loop's thread (kit.sqlite_inline).
            cursor.execute("PRAGMA query_only=ON")
        cursor.close()
        register_sqlite_functions(dbapi_conn)

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(IMMEDIATE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


# SQLite's ANALYZE reads every index whole (about 0.1 s per 20,000 plugins). Not limited:
# with `PRAGMA analysis_limit=1000` the row estimates stop near the limit, so the status
# index looked as selective as a sort index and browse sorted 100,000 rows again.
SQLITE_ANALYSIS_LIMIT = 0


def _sqlite_analyzable(connection: Connection) -> list[str]:
    """Ordinary tables, without the FTS tables and their shadow tables. FTS5 reaches its
    shadow tables by key only; statistics taken on them while nearly empty made SQLite plan
    the search triggers' inserts badly (seeding 20,000 plugins: 79 s instead of 16 s)."""
    rows = connection.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
    tables = [(str(name), str(sql or "")) for name, sql in rows]
    virtual = [name for name, sql in tables if sql.upper().startswith("CREATE VIRTUAL TABLE")]
    return [
        name
        for name, _ in tables
        if not name.startswith("sqlite_")
        and name not in virtual
        and not any(name.startswith(f"{v}_") for v in virtual)
    ]


def analyze(connection: Connection, *, commit_each: bool = False) -> None:
    """Refresh the planner's statistics: after migrations and bulk changes, and (SQLite) at
    start. Without them SQLite guesses, and picked an index matching every row for
    `/versions/:id` (120 ms at 100,000 plugins instead of 0.1 ms). `commit_each`: one
    SQLite table per transaction (ANALYZE holds the write lock while it reads)."""
    if connection.dialect.name != "sqlite":
        connection.exec_driver_sql("ANALYZE")
        return
    connection.exec_driver_sql(f"PRAGMA analysis_limit={SQLITE_ANALYSIS_LIMIT}")
    for table in _sqlite_analyzable(connection):
        connection.exec_driver_sql(f'ANALYZE "{table}"')
        if commit_each:
            connection.commit()


def analyze_sqlite(database_url: str) -> None:
    """`analyze` on a SQLite database from synchronous code (the server, beside its
    workers), one table per transaction: ANALYZE holds the write lock while it reads, 2 s
    for the plugins table at 1,000,000 plugins, and writers wait that long at most."""
    url = make_url(database_url).set(drivername="sqlite")
    engine = create_engine(url, connect_args={"timeout": 30})
    try:
        with engine.connect() as connection:
            analyze(connection, commit_each=True)
    except Exception:  # as at start: statistics are an optimisation
        logging.getLogger(__name__).warning("ANALYZE beside the workers failed", exc_info=True)
    finally:
        engine.dispose()


async def analyze_at_start(engine: AsyncEngine) -> None:
    """SQLite keeps no statistics by itself: take them when a process starts, so rows loaded
    while it was stopped (imports, restores, a bulk seed) are known. PostgreSQL's autovacuum
    keeps its own. A failure only costs plan quality: logged, never fatal."""
    if engine.dialect.name != "sqlite":
        return
    try:
        async with engine.connect() as conn:
            await conn.run_sync(analyze)
            await conn.commit()
    except Exception:  # statistics are an optimisation; serving must not depend on them
        logging.getLogger(__name__).warning("ANALYZE at start failed", exc_info=True)


@dataclass(frozen=True, slots=True)
class DbTimeouts:
    """Bounds on every wait for the database, in seconds (MARKETPLACE_DB_*_TIMEOUT_SECONDS)."""

    connect: float
    statement: float
    pool: float


# PostgreSQL error classes that mean "not now" rather than "wrong": statement_timeout or
# a cancel (57014), lock_timeout (55P03), shutdown or starting up (57P01-57P03), too many
# connections (53300); class 08 is the connection itself failing.
_UNAVAILABLE_SQLSTATES = frozenset({"57014", "55P03", "57P01", "57P02", "57P03", "53300"})


def is_database_outage(exc: BaseException) -> bool:
    """The database cannot answer now (unreachable, timed out, busy), as opposed to refusing
    what was asked (a constraint, a bad statement)."""
    # OSError covers TimeoutError (asyncpg's command_timeout) and a dropped socket.
    if isinstance(exc, OSError):
        return True
    sqlstate = str(getattr(exc, "sqlstate", None) or "")
    if sqlstate in _UNAVAILABLE_SQLSTATES or sqlstate.startswith("08"):
        return True
    # SQLite's busy timeout ran out waiting for another writer's lock.
    return isinstance(exc, sqlite3.OperationalError) and "database is locked" in str(exc)


def _install_outage_translation(engine: AsyncEngine) -> None:
    """Turn "the database cannot answer now" into DatabaseUnavailable (503 with Retry-After);
    every other database error (a constraint, a bad statement) stays what it was."""
    sync_engine: Engine = engine.sync_engine

    @event.listens_for(sync_engine, "do_connect")
    def _connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        # A failed connect never reaches handle_error: asyncpg raises OSError/TimeoutError
        # (refused, unreachable, no answer within the connect timeout) straight through.
        try:
            return dialect.connect(*cargs, **cparams)
        except OSError as exc:
            raise DatabaseUnavailable() from exc

    @event.listens_for(sync_engine, "handle_error")
    def _on_error(context: ExceptionContext) -> BaseException | None:
        original = context.original_exception
        if context.is_disconnect or is_database_outage(original):
            return DatabaseUnavailable()
        return None


def make_read_engine(url: str) -> AsyncEngine | None:
    """SQLite: an engine for read sessions whose statements run on the event loop's thread
    (kit.sqlite_inline) and refuse to write; None for other databases, whose driver needs
    no thread (the sessions then share the one engine)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    from marketplace.kit.sqlite_inline import inline_creator

    creator = inline_creator(parsed.database, READ_BUSY_MS / 1000)
    engine = create_async_engine(url, async_creator=creator)
    _install_sqlite_pragmas(engine, read_only=True)
    _install_outage_translation(engine)
    return engine


def make_engine(
    url: str,
    *,
    pool_size: int = 10,
    timeouts: DbTimeouts | None = None,
    random_page_cost: float | None = None,
    work_mem_mb: int | None = None,
) -> AsyncEngine:
    """The engine; `timeouts` bound connecting, each statement and the wait for a pooled
    connection (the server passes them; migrations and one-off commands may run long).
    `random_page_cost` and `work_mem_mb` are PostgreSQL settings for the server's
    connections."""
    if url.startswith("sqlite"):
        # The busy timeout is SQLite's only wait (for another writer's lock); it stays 30 s.
        engine = create_async_engine(url, connect_args={"timeout": 30})
        _install_sqlite_pragmas(engine)
        _install_outage_translation(engine)
        return engine
    options: dict[str, Any] = {}
    if url.split(":", 1)[0] == "postgresql+asyncpg":
        connect_args: dict[str, Any] = {}
        server_settings: dict[str, str] = {}
        if timeouts is not None:
            connect_args["timeout"] = timeouts.connect
            # Client side: a server that stops answering mid-query.
            connect_args["command_timeout"] = timeouts.statement
            # Server side: the query is cancelled, so it stops holding locks too.
            server_settings["statement_timeout"] = str(int(timeouts.statement * 1000))
        if random_page_cost is not None:
            server_settings["random_page_cost"] = repr(random_page_cost)
        if work_mem_mb is not None:
            server_settings["work_mem"] = f"{work_mem_mb}MB"
        if server_settings:
            connect_args["server_settings"] = server_settings
        if connect_args:
            options["connect_args"] = connect_args
    if pool_size <= 0:
        engine = create_async_engine(url, poolclass=NullPool, **options)
    else:
        if timeouts is not None:
            options["pool_timeout"] = timeouts.pool
        engine = create_async_engine(
            url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True, **options
        )
    _install_outage_translation(engine)
    return engine


def make_sessionmaker(
    engine: AsyncEngine, *, write: bool = False, info: dict[str, Any] | None = None
) -> async_sessionmaker[AsyncSession]:
    """`info` is every session's `session.info` to start with (hooks read it: the app's
    inspection queue, `inspection.ledger`)."""
    bind = engine.execution_options(**{IMMEDIATE: True}) if write else engine
    return async_sessionmaker(bind, expire_on_commit=False, autoflush=False, info=info or {})


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def is_write_request(request: Request) -> bool:
    """Whether the request's session is a write transaction (see request_session)."""
    route = request.scope.get("route")
    if request.method in SAFE_METHODS or getattr(route, "reads_only", False):
        return False
    return not getattr(route, "streams_body", False)


async def request_session(request: Request) -> AsyncIterator[AsyncSession]:
    """The request's one session; committed when the endpoint returns, rolled back on error
    (except an `AppError` that `keeps_writes`).

    Unsafe methods get BEGIN IMMEDIATE on SQLite (taken lazily at the first statement).
    A route that streams its body (`kit.routing.streams_body`) only reads here: it ends
    this transaction before the body arrives (`end_checks`) and writes in its own.
    """
    write = is_write_request(request)
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


async def write_sessions(request: Request) -> async_sessionmaker[AsyncSession]:
    """For a route that opens its own write transaction (`async with sessions.begin()`)."""
    factory: async_sessionmaker[AsyncSession] = request.app.state.write_sessionmaker
    return factory


WriteSessions = Annotated[async_sessionmaker[AsyncSession], Depends(write_sessions)]
