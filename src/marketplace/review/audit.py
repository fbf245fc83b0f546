"""Audit records (seed 2.6): written in the same transaction as the change they describe."""

from __future__ import annotations

import enum

from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import AuditLog


class Action(enum.StrEnum):
    APPROVE = "REVIEW_APPROVE"
    REJECT = "REVIEW_REJECT"


class Trigger(enum.StrEnum):
    ADMIN = "admin"
    LINKAGE = "linkage"
    AUTO_VALIDATION = "auto-validation"


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
