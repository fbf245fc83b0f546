"""Audit records (seed 2.6): written in the same transaction as the change they describe."""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from datetime import datetime

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.kit.pagination import Page
from marketplace.models import AuditLog


class Action(enum.StrEnum):
    APPROVE = "REVIEW_APPROVE"
    REJECT = "REVIEW_REJECT"
    TAKEDOWN = "TAKEDOWN"


class Trigger(enum.StrEnum):
    ADMIN = "admin"
    LINKAGE = "linkage"
    AUTO_VALIDATION = "auto-validation"
    DEVELOPER = "developer"  # the owner's own version takedown


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
    actor_id: str,
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
    """Newest first, filtered by resource, action, actor and time (since <= t < before)."""
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
    total = await session.scalar(query.with_only_columns(func.count()).order_by(None)) or 0
    rows = await session.scalars(
        query.order_by(AuditLog.created_at.desc(), AuditLog.id).offset(page.offset).limit(page.size)
    )
    return list(rows), total


async def resource_history(
    session: AsyncSession, resources: Mapping[str, Collection[str]], *, limit: int = 200
) -> list[AuditLog]:
    """The records of several resources, by type (an item and its versions), newest first."""
    wanted = [
        and_(AuditLog.resource_type == resource_type, AuditLog.resource_id.in_(ids))
        for resource_type, ids in resources.items()
        if ids
    ]
    if not wanted:
        return []
    rows = await session.scalars(
        select(AuditLog)
        .where(or_(*wanted))
        .order_by(AuditLog.created_at.desc(), AuditLog.id)
        .limit(limit)
    )
    return list(rows)
