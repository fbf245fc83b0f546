"""The inspection rows as the job's ledger: queueing a version, claiming an attempt,
finishing it once, and the sweep that hands killed attempts back to the queue.

Every move is one transaction. Claims and finishes are conditional UPDATEs, so two workers
that got the same job (a duplicate enqueue, a sweep racing a slow worker) cannot both run
it to its end: the second claim finds the row running under a live lease, and a finish
whose lease token is no longer the row's writes nothing (DESIGN invariant 12).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, event, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from marketplace.kit.dbtypes import utcnow
from marketplace.models import (
    Distribution,
    InspectionStatus,
    PluginInspection,
    PluginVersion,
)
from marketplace.models.inspections import MAX_ATTEMPTS

_TO_ENQUEUE = "inspections_to_enqueue"
ENQUEUE = "inspection_enqueue"  # session.info key: the app's enqueue function, if any
_INSPECTED = (Distribution.TARBALL.value, Distribution.INLINE.value)


def is_applicable(manifest: Any, distribution: str) -> bool:
    """A stdio MCP server shipped as a package or inline code (CONTRACT 13)."""
    if distribution not in _INSPECTED or not isinstance(manifest, dict):
        return False
    mcp = manifest.get("mcp")
    return isinstance(mcp, dict) and mcp.get("transport", "stdio") == "stdio"


def attach(session: AsyncSession, version: PluginVersion, *, inspect: bool) -> None:
    """Give a new version its inspection: queued (enqueued when the transaction commits) if
    it is applicable and `inspect`, else none (not_applicable). Always sets the attribute,
    so a new row is never lazily loaded."""
    if not inspect or not is_applicable(version.manifest, version.distribution):
        version.inspection = None
        return
    version.inspection = PluginInspection(
        version_id=version.id, status=InspectionStatus.QUEUED.value, attempts=0, queued_at=utcnow()
    )
    session.info.setdefault(_TO_ENQUEUE, []).append(version.id)


def _enqueue_after_commit(session: Session) -> None:
    ids = session.info.pop(_TO_ENQUEUE, None)
    enqueue = session.info.get(ENQUEUE)
    if not ids or enqueue is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # a synchronous caller (scripts): enqueue here
        loop = None
    for version_id in ids:
        # Never raises: a version it misses waits for the sweep. Off the event loop: the
        # queue's storage (a SQLite file, Redis) may take a moment.
        if loop is None:
            enqueue(version_id)
        else:
            loop.run_in_executor(None, enqueue, version_id)


def _forget(session: Session, *_args: Any) -> None:
    session.info.pop(_TO_ENQUEUE, None)


def install() -> None:
    """Register the after-commit enqueue on every ORM session (idempotent)."""
    if not event.contains(Session, "after_commit", _enqueue_after_commit):
        event.listen(Session, "after_commit", _enqueue_after_commit)
        event.listen(Session, "after_rollback", _forget)


async def claim(
    sessions: async_sessionmaker[AsyncSession], version_id: str, token: str, lease: timedelta
) -> bool:
    """Take the version's next attempt: a queued row, or a running one whose worker's lease
    ran out (it was killed), while attempts remain. False: nothing for this worker to do."""
    now = utcnow()
    row = PluginInspection
    async with sessions.begin() as session:
        result = await session.execute(
            update(row)
            .where(
                row.version_id == version_id,
                row.attempts < MAX_ATTEMPTS,
                (row.status == InspectionStatus.QUEUED.value)
                | ((row.status == InspectionStatus.RUNNING.value) & (row.lease_until < now)),
            )
            .values(
                status=InspectionStatus.RUNNING.value,
                attempts=row.attempts + 1,
                lease_token=token,
                lease_until=now + lease,
                started_at=now,
                finished_at=None,
                error=None,
            )
        )
        return bool(getattr(result, "rowcount", 0) == 1)


async def holds(session: AsyncSession, version_id: str, token: str) -> PluginInspection | None:
    """The row, locked in the caller's transaction, if `token` still holds its claim."""
    row = await session.scalar(
        _locked(
            select(PluginInspection).where(
                PluginInspection.version_id == version_id,
                PluginInspection.status == InspectionStatus.RUNNING.value,
                PluginInspection.lease_token == token,
            )
        )
    )
    return row


async def expired(session: AsyncSession, version_id: str) -> PluginInspection | None:
    """The row, locked, if it is running under a lease that ran out (its worker died)."""
    row = await session.scalar(
        _locked(
            select(PluginInspection).where(
                PluginInspection.version_id == version_id,
                PluginInspection.status == InspectionStatus.RUNNING.value,
                PluginInspection.lease_until < utcnow(),
            )
        )
    )
    return row


def _locked(query: Select[PluginInspection]) -> Select[PluginInspection]:
    # Refreshed: the version's selectin load may hold the row with pre-lock values.
    return query.with_for_update().execution_options(populate_existing=True)


async def stale(
    sessions: async_sessionmaker[AsyncSession], *, queued_for: timedelta
) -> tuple[list[str], list[str]]:
    """The sweep's look: (versions to enqueue again, versions whose attempts ran out).

    To enqueue: running rows whose lease expired with attempts left (their worker died), and
    queued rows older than `queued_for` (their enqueue was lost). Duplicates are harmless:
    the claim lets one through."""
    now: datetime = utcnow()
    row = PluginInspection
    async with sessions.begin() as session:
        expired = (row.status == InspectionStatus.RUNNING.value) & (row.lease_until < now)
        retry = await session.scalars(
            select(row.version_id)
            .where(
                (expired & (row.attempts < MAX_ATTEMPTS))
                | (
                    (row.status == InspectionStatus.QUEUED.value)
                    & (row.queued_at < now - queued_for)
                )
            )
            .limit(1000)
        )
        retried = list(retry)
        exhausted = await session.scalars(
            select(row.version_id).where(expired & (row.attempts >= MAX_ATTEMPTS)).limit(1000)
        )
        # Re-enqueued queued rows count as queued now: a long backlog is not enqueued again
        # on every pass of every inspector.
        await session.execute(
            update(row)
            .where(row.version_id.in_(retried), row.status == InspectionStatus.QUEUED.value)
            .values(queued_at=now)
        )
        return retried, list(exhausted)
