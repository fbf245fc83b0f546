"""Download counts (CONTRACT 16: `downloads` counts download-info answers), batched.

A download-info answer is a read (GET): writing a counter in each would make every download
a writer, and on SQLite every writer waits for the one write lock, behind uploads and
installs (under the benchmark's mix, download answers went from milliseconds to 200-450 ms).
So each process adds its answers up in memory and writes them at most once a second, in one
short transaction of its own, and when the app stops. The stored counts are at most a
second behind; a process killed outright loses its last second of download counts (never
any other counter: installs, signals and purchases are counted in their own transactions).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from datetime import date

import structlog
from fastapi import FastAPI
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.delivery import counters

log = structlog.get_logger("marketplace.delivery")

FLUSH_SECONDS = 1.0


class DownloadCounts:
    """This process's download answers not yet written, by plugin and UTC day."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], interval: float = FLUSH_SECONDS
    ) -> None:
        self.sessions = sessions
        self.interval = interval
        self.pending: Counter[tuple[str, date]] = Counter()
        self._flusher: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def add(self, plugin_id: str) -> None:
        self.pending[(plugin_id, counters.today())] += 1
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_soon())

    async def _flush_soon(self) -> None:
        while self.pending:
            await asyncio.sleep(self.interval)
            await self.flush()

    async def flush(self) -> None:
        """Write what is pending now (one transaction; a row per plugin and day)."""
        async with self._lock:
            batch, self.pending = self.pending, Counter()
            if not batch:
                return
            try:
                async with self.sessions() as session, session.begin():
                    for (plugin_id, day), count in batch.items():
                        try:
                            async with session.begin_nested():
                                amounts = {"downloads": count}
                                await counters.add_daily(session, plugin_id, amounts, day=day)
                        except IntegrityError:
                            pass  # the plugin was deleted meanwhile: its counts went with it
            except Exception as exc:
                # Nothing was written: the batch waits for the next flush.
                self.pending.update(batch)
                log.warning("download counts not written yet", error=type(exc).__name__)

    async def close(self) -> None:
        flusher, self._flusher = self._flusher, None
        if flusher is not None and not flusher.done():
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
        await self.flush()


def download_counts(app: FastAPI) -> DownloadCounts:
    """This process's counts, made on first use."""
    counts: DownloadCounts | None = getattr(app.state, "download_counts", None)
    if counts is None:
        counts = DownloadCounts(app.state.write_sessionmaker)
        app.state.download_counts = counts
    return counts


async def close_download_counts(app: FastAPI) -> None:
    counts: DownloadCounts | None = getattr(app.state, "download_counts", None)
    if counts is not None:
        await counts.close()
