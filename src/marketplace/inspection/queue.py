"""The inspection queue: huey, on a SQLite file in the data folder by default, on Redis
(`MARKETPLACE_INSPECTION_QUEUE_URL=redis://...`) when inspectors run on other hosts.

The queue carries only version ids. What a job may do is decided by its version's row
(`ledger`): huey's own retries cover a job that raised (the database was away), and the
sweep covers a worker that was killed mid-job (huey has already taken the message off the
queue then), so each version gets at most MAX_ATTEMPTS runs whatever happens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis
import structlog
from huey import Huey, RedisHuey, SqliteHuey

from marketplace.config import Settings

log = structlog.get_logger(__name__)

QUEUE_NAME = "marketplace-inspections"
TASK_NAME = "inspect_version"
# A job that raised (not the server's failure: the runner reports those) is tried again
# after this long, at most twice; the ledger's attempt count bounds the whole.
RETRY_DELAY_SECONDS = 5
READ_TIMEOUT_SECONDS = 1  # an idle inspector's blocking read on Redis


def make_huey(settings: Settings) -> Huey:
    url = settings.inspection_queue_url
    if url:
        # Every call bounded; an inspector's blocking read waits READ_TIMEOUT_SECONDS, so a
        # call may take that long more. (Enqueueing runs off the event loop.) Named under
        # the deployment's key prefix: two deployments on one Redis keep their queues apart.
        pool = redis.ConnectionPool.from_url(
            url,
            socket_timeout=settings.redis_timeout_seconds + 2 * READ_TIMEOUT_SECONDS,
            socket_connect_timeout=settings.redis_timeout_seconds,
        )
        return RedisHuey(
            f"{settings.redis_key_prefix}.{QUEUE_NAME}",
            connection_pool=pool,
            read_timeout=READ_TIMEOUT_SECONDS,
        )
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return SqliteHuey(
        QUEUE_NAME, filename=str(settings.data_dir / "inspection-queue.sqlite3"), timeout=5
    )


class InspectionQueue:
    """The huey instance with the inspection task registered (the same in API processes,
    which enqueue, and in inspectors, which run)."""

    def __init__(self, settings: Settings, run: Callable[[str], Any] | None = None) -> None:
        self.huey = make_huey(settings)
        job = run or _not_here

        def inspect_version(version_id: str) -> Any:
            return job(version_id)

        # huey names a task by its function's module: the same name wherever it is
        # registered (API processes enqueue it, inspectors run it).
        inspect_version.__module__ = __name__
        self._task = self.huey.task(retries=2, retry_delay=RETRY_DELAY_SECONDS, name=TASK_NAME)(
            inspect_version
        )

    def enqueue(self, version_id: str) -> None:
        """Put the version's job on the queue; never raises (the sweep picks up a version
        whose enqueue failed)."""
        try:
            self._task(version_id)
        except Exception as exc:  # any storage failure: the sweep recovers
            log.warning("inspection enqueue failed", version_id=version_id, error=str(exc))

    def pending(self) -> int:
        try:
            return int(self.huey.pending_count())
        except Exception:  # a metric, not a request's failure
            return -1


def _not_here(version_id: str) -> None:  # pragma: no cover - only inspectors run jobs
    raise RuntimeError(f"inspection of {version_id} taken by a process that enqueues only")
