"""Audit records (seed 2.6): written in the same transaction as the change they describe."""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from datetime import datetime

from sqlalchemy import Select, and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.kit.pagination import Page
from marketplace.models import AuditLog


class Action(enum.StrEnum):
    APPROVE = "REVIEW_APPROVE"
    REJECT = "REVIEW_REJECT"
    TAKEDOWN = "TAKEDOWN"
    ROLLOUT_SET = "ROLLOUT_SET"
    ROLLOUT_HALT = "ROLLOUT_HALT"
    ROLLOUT_RESUME = "ROLLOUT_RESUME"


class Trigger(enum.StrEnum):
    ADMIN = "admin"
    LINKAGE = "linkage"
    AUTO_VALIDATION = "auto-validation"
    DEVELOPER = "developer"  # the owner's own version takedown or rollout move
    AUTOMATIC = "automatic"  # a rollout halted by its users' signals


TAKEN_DOWN_OUTCOME = "taken_down"


SYSTEM_REVIEWER = "system"


def record_review(
    session: AsyncSession,
    *,
    approved: bool,
    actor_id: str | None,
    resource_type: str,
    resource_id: str,
    trigger: Trigger,
    note: str | None,
) -> AuditLog:
    entry = AuditLog(
        action=(Action.APPROVE if approved else Action.REJECT).value,
        actor_id=actor_id,
        resource_type=resource_type,
        resource_id=resource_id,
        outcome="approved" if approved else "rejected",
        trigger=trigger.value,
        note=note,
    )
    session.add(entry)
    return entry


def record_takedown(
    session: AsyncSession,
    *,
    actor_id: str | None,
    resource_type: str,
    resource_id: str,
    trigger: Trigger,
    reason: str,
) -> AuditLog:
    """A version withdrawn by an administrator or its owner; the reason is the note."""
    entry = AuditLog(
        action=Action.TAKEDOWN.value,
        actor_id=actor_id,
        resource_type=resource_type,
        resource_id=resource_id,
        outcome=TAKEN_DOWN_OUTCOME,
        trigger=trigger.value,
        note=reason,
    )
    session.add(entry)
    return entry


# Newest first; the id breaks ties, so pages never overlap.
NEWEST_FIRST = (AuditLog.created_at.desc(), AuditLog.id)


def audit_query(
    *,
    resource_type: str | None,
    resource_id: str | None,
    action: str | None,
    actor_id: str | None = None,
    since: datetime | None = None,
    before: datetime | None = None,
) -> Select[AuditLog]:
    """The records filtered by resource, action, actor and time (since <= t < before),
    unordered: a caller may join more to it (the console names actors and resources)."""
    query = select(AuditLog)
    if resource_type:
        query = query.where(AuditLog.resource_type == resource_type)
    if resource_id:
        query = query.where(AuditLog.resource_id == resource_id)
    if action:
        query = query.where(AuditLog.action == action)
    if actor_id:
        query = query.where(AuditLog.actor_id == actor_id)
    if since is not None:
        query = query.where(AuditLog.created_at >= since)
    if before is not None:
        query = query.where(AuditLog.created_at < before)
    return query


async def count_of(session: AsyncSession, query: Select[AuditLog]) -> int:
    # Keep the FROM: without a filter, count() alone names no table ("SELECT count(*)": 1).
    counting = query.with_only_columns(func.count(), maintain_column_froms=True)
    return await session.scalar(counting.order_by(None)) or 0


async def audit_logs(
    session: AsyncSession,
    page: Page,
    *,
    resource_type: str | None,
    resource_id: str | None,
    action: str | None,
    actor_id: str | None = None,
    since: datetime | None = None,
    before: datetime | None = None,
) -> tuple[list[AuditLog], int]:
    """A page of `audit_query`, newest first, and its total."""
    query = audit_query(
        resource_type=resource_type,
        resource_id=resource_id,
        action=action,
        actor_id=actor_id,
        since=since,
        before=before,
    )
    rows = await session.scalars(query.order_by(*NEWEST_FIRST).offset(page.offset).limit(page.size))
    return list(rows), await count_of(session, query)


def history_query(resources: Mapping[str, Collection[str]]) -> Select[AuditLog] | None:
    """The records of several resources, by type (an item and its versions), unordered;
    None when no resource is named."""
    wanted = [
        and_(AuditLog.resource_type == resource_type, AuditLog.resource_id.in_(ids))
        for resource_type, ids in resources.items()
        if ids
    ]
    return select(AuditLog).where(or_(*wanted)) if wanted else None
