"""What a reviewer reads before deciding: the item's versions, the developer's earlier
rejections, and the audit records of the item and its versions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import AuditLog, ReviewStatus
from marketplace.publishing import queries
from marketplace.publishing.audit import resource_history
from marketplace.publishing.kinds import ItemKind

REJECTIONS_SHOWN = 10


@dataclass(frozen=True)
class AuditRow:
    entry: AuditLog
    actor: str


async def developer_rejections(
    db: AsyncSession, kind: ItemKind[Any, Any], owner_id: str, item_id: str
) -> list[tuple[Any, Any]]:
    """The developer's latest rejected versions of their other items of this kind."""
    rows = await db.execute(
        select(kind.version_model, kind.item_model)
        .join(kind.item_model, kind.item_column("id") == kind.parent)
        .where(
            kind.item_column("owner_id") == owner_id,
            kind.item_column("id") != item_id,
            kind.version_column("review_status") == ReviewStatus.REJECTED.value,
        )
        .order_by(kind.version_column("created_at").desc(), kind.version_column("id"))
        .limit(REJECTIONS_SHOWN)
    )
    return [(version, item) for version, item in rows.all()]


async def item_audit(
    db: AsyncSession, kind: ItemKind[Any, Any], item_id: str, version_ids: list[str]
) -> list[AuditRow]:
    entries = await resource_history(db, {kind.name: [item_id], kind.version_resource: version_ids})
    return await with_actors(db, entries)


async def with_actors(db: AsyncSession, entries: list[AuditLog]) -> list[AuditRow]:
    labels = await queries.reviewer_labels(db, (e.actor_id for e in entries))
    return [
        AuditRow(e, labels.get(e.actor_id, e.actor_id) if e.actor_id else "system") for e in entries
    ]
