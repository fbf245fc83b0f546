"""An inspector: huey's consumer running inspection jobs, and the sweep beside it.

`marketplace inspector` runs one on its own host; `marketplace serve` starts one as a child
process (MARKETPLACE_INSPECTION_WORKERS threads; 0: none), so untrusted code is never
started by an API process. The sweep hands back to the queue the jobs whose worker died
(`ledger.stale`) and gives up those that ran out of attempts.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import structlog

from marketplace.config import Settings
from marketplace.db import make_engine, make_sessionmaker
from marketplace.inspection import job, ledger, verdict
from marketplace.inspection.job import db_timeouts
from marketplace.inspection.queue import InspectionQueue

log = structlog.get_logger(__name__)


def make_queue(settings: Settings) -> InspectionQueue:
    """The queue with the job this process runs."""
    return InspectionQueue(
        settings, run=lambda version_id: asyncio.run(job.run_job(settings, version_id))
    )


async def sweep_once(settings: Settings, queue: InspectionQueue) -> tuple[int, int]:
    """One look for lost jobs: (enqueued again, given up)."""
    engine = make_engine(settings.database_url, pool_size=1, timeouts=db_timeouts(settings))
    try:
        sessions = make_sessionmaker(engine, write=True)
        # A job queued this long ago and never claimed lost its enqueue (or waits behind
        # many others: enqueueing it twice is harmless, the claim lets one run).
        queued_for = timedelta(seconds=max(60.0, 3 * settings.inspection_seconds))
        retry, exhausted = await ledger.stale(sessions, queued_for=queued_for)
        for version_id in retry:
            queue.enqueue(version_id)
        for version_id in exhausted:
            await verdict.give_up(sessions, version_id)
        return len(retry), len(exhausted)
    finally:
        await engine.dispose()


def _sweep_forever(settings: Settings, queue: InspectionQueue, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            retried, given_up = asyncio.run(sweep_once(settings, queue))
            if retried or given_up:
                log.info("inspection sweep", enqueued_again=retried, given_up=given_up)
        except Exception as exc:  # the database may be away for a while: try again later
            log.warning("inspection sweep failed", error=str(exc))
        stop.wait(settings.inspection_sweep_seconds)


def run_inspector(settings: Settings, workers: int) -> None:
    """Run jobs until SIGINT or SIGTERM (huey's consumer handles both in the main thread)."""
    queue = make_queue(settings)
    stop = threading.Event()
    sweeper = threading.Thread(
        target=_sweep_forever, args=(settings, queue, stop), name="inspection-sweep", daemon=True
    )
    sweeper.start()
    consumer = queue.huey.create_consumer(workers=workers, worker_type="thread", periodic=False)
    log.info("inspector started", workers=workers)
    try:
        consumer.run()
    finally:
        stop.set()


def main() -> None:
    """`python -m marketplace.inspection.worker`: what `marketplace serve` starts."""
    from marketplace.config import get_settings
    from marketplace.observability import configure_logging

    settings = get_settings()
    configure_logging(json_logs=settings.log_json, level=settings.log_level)
    run_inspector(settings, max(1, settings.inspection_workers))


if __name__ == "__main__":
    main()
