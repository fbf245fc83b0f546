"""What a reviewer reads before deciding: the item's versions, the developer's earlier
rejections, and the audit records of the item and its versions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, and_, case, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from marketplace.kit.pagination import Page
from marketplace.models import (
    AuditLog,
    LogEntry,
    Plugin,
    PluginVersion,
    ReviewStatus,
    ScenarioVersion,
    User,
)
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.audit import NEWEST_FIRST, Action, history_query
from marketplace.publishing.kinds import ItemKind
from marketplace.scenarios.kind import SCENARIOS

REJECTIONS_SHOWN = 10
HISTORY_SHOWN = 200
SYSTEM = "system"


@dataclass(frozen=True)
class AuditRow:
    """An audit record with names where its ids point: the actor's name and e-mail, and
    what the record is about (a plugin's key, "key version" for a version; a scenario's id
    is its key). A name is None where its row is gone (records outlive what they describe):
    the page shows the id then."""

    entry: AuditLog
    actor: str  # name, else e-mail, else id (seed 2.1); "system" for the service itself
    actor_email: str | None
    subject: str | None
    # The decision's entry in the transparency log (a version's approval or takedown).
    log_index: int | None = None


async def developer_rejections(
    db: AsyncSession, kind: ItemKind[Any, Any], owner_id: str, item_id: str
) -> list[tuple[Any, Any]]:
    """The developer's latest rejected versions of their other items of this kind."""
    rows = await db.execute(
        select(kind.version_model, kind.item_model)
        .join(kind.item_model, kind.items.id == kind.versions.item_id)
        .where(
            kind.items.owner_id == owner_id,
            kind.items.id != item_id,
            kind.versions.review_status == ReviewStatus.REJECTED.value,
        )
        .order_by(kind.versions.created_at.desc(), kind.versions.id)
        .limit(REJECTIONS_SHOWN)
    )
    return [(version, item) for version, item in rows.all()]


async def item_audit(
    db: AsyncSession, kind: ItemKind[Any, Any], item_id: str, version_ids: list[str]
) -> list[AuditRow]:
    query = history_query({kind.name: [item_id], kind.version_resource: version_ids})
    if query is None:
        return []
    return await named_audit(db, query.order_by(*NEWEST_FIRST).limit(HISTORY_SHOWN))


async def named_audit_page(db: AsyncSession, query: Select[AuditLog], page: Page) -> list[AuditRow]:
    """A page of `query`'s records, newest first, with their names."""
    return await named_audit(db, query.order_by(*NEWEST_FIRST).offset(page.offset).limit(page.size))


def _with_names(query: Select[AuditLog]) -> Select[*tuple[Any, ...]]:
    """`query` with the actor and the record's subject joined: one query for a page."""
    actor = aliased(User)
    plugin = aliased(Plugin)
    plugin_version = aliased(PluginVersion)
    version_plugin = aliased(Plugin)
    scenario_version = aliased(ScenarioVersion)
    kind = AuditLog.resource_type
    # A version's approval and takedown are each one log entry, found by (action, subject):
    # the unique index of the log answers the join.
    logged_action = case(
        (AuditLog.action == Action.APPROVE.value, "approve"),
        (AuditLog.action == Action.TAKEDOWN.value, "takedown"),
        else_=None,
    )
    return (
        query.add_columns(
            actor.name,
            actor.email,
            func.coalesce(plugin.plugin_key, version_plugin.plugin_key),
            plugin_version.version,
            scenario_version.scenario_id,
            scenario_version.version,
            LogEntry.log_index,
        )
        .outerjoin(actor, actor.id == AuditLog.actor_id)
        .outerjoin(
            LogEntry,
            and_(
                kind.in_((PLUGINS.version_resource, SCENARIOS.version_resource)),
                LogEntry.subject == AuditLog.resource_id,
                LogEntry.action == logged_action,
            ),
        )
        .outerjoin(plugin, and_(kind == PLUGINS.name, plugin.id == AuditLog.resource_id))
        .outerjoin(
            plugin_version,
            and_(kind == PLUGINS.version_resource, plugin_version.id == AuditLog.resource_id),
        )
        .outerjoin(version_plugin, version_plugin.id == plugin_version.plugin_id)
        .outerjoin(
            scenario_version,
            and_(kind == SCENARIOS.version_resource, scenario_version.id == AuditLog.resource_id),
        )
    )


async def named_audit(db: AsyncSession, query: Select[AuditLog]) -> list[AuditRow]:
    rows = []
    for entry, name, email, plugin_key, version, scenario_id, scenario_version, log_index in (
        await db.execute(_with_names(query))
    ).all():
        if entry.resource_type == SCENARIOS.name:
            subject = entry.resource_id  # a scenario's id is its key
        elif scenario_id is not None:
            subject = f"{scenario_id} {scenario_version}"
        elif plugin_key is not None:
            subject = f"{plugin_key} {version}" if version is not None else plugin_key
        else:
            subject = None
        if entry.actor_id is None:
            actor = SYSTEM
        else:
            actor = name or email or entry.actor_id
        rows.append(AuditRow(entry, actor, email, subject, log_index))
    return rows
