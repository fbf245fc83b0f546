"""aiosqlite's interface without its thread: SQLite reads run on the event loop's thread.

aiosqlite hands every call (cursor, execute, fetch, close; BEGIN and ROLLBACK too) to a
thread of its own and back: a dozen handoffs for one cached-miss read, each two context
switches and a wake-up of the loop. On the embedded default a read takes tenths of a
millisecond and a process has one core's worth of Python, so the handoffs cost more than
the reads (measured: docs/performance.md, issue 30).

Only for connections that never write (the engine of read sessions, PRAGMA query_only):
in WAL mode a reader never waits for a lock, so running it inline cannot stall the loop
behind another transaction. Writes keep aiosqlite's thread, where waiting for SQLite's one
write lock blocks nothing else.

SQLAlchemy's aiosqlite dialect drives the connection through aiosqlite's `_execute`, its
`_tx` queue (the isolation level) and `_connection`; this class keeps those names.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
from collections.abc import Callable
from typing import Any

import aiosqlite

_Call = tuple[asyncio.Future[Any] | None, Callable[[], Any]]


class _InlineQueue(queue.SimpleQueue[_Call]):
    """Stands for the worker thread's queue: a queued call runs at once, here."""

    def put_nowait(self, item: _Call) -> None:
        future, function = item
        try:
            result = function()
        except BaseException as exc:  # handed to the waiter, as the thread would
            if future is not None and not future.done():
                future.set_exception(exc)
            return
        if future is not None and not future.done():
            future.set_result(result)


class InlineConnection(aiosqlite.Connection):
    """An aiosqlite connection whose calls run on the caller's thread."""

    def __init__(self, connector: Callable[[], sqlite3.Connection]) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._tx = _InlineQueue()  # no thread takes from it

    def __await__(self) -> Any:
        return self._connect().__await__()  # no thread to start

    async def _connect(self) -> InlineConnection:
        if self._connection is None:
            self._connection = self._connector()
        return self

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._running or not self._connection:
            raise ValueError("Connection closed")
        return fn(*args, **kwargs)

    def stop(self) -> asyncio.Future[Any] | None:
        self._running = False
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()
        return None


def inline_creator(path: str, timeout: float) -> Callable[[], Any]:
    """`create_async_engine(async_creator=...)` for read-only connections to `path`."""

    def connect() -> sqlite3.Connection:
        # check_same_thread off: the pool may close a connection from a finaliser's thread.
        return sqlite3.connect(path, timeout=timeout, check_same_thread=False)

    async def create() -> InlineConnection:
        return await InlineConnection(connect)._connect()

    return create
