"""What the public plugin page reads beyond the catalogue's own plugin row: its approved
versions and the current version's inspection, in one statement."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.catalog.service import version_key
from marketplace.models import PluginInspection, PluginVersion, ReviewStatus


@dataclass(frozen=True)
class ShownVersion:
    version: str
    created_at: datetime
    approved_at: datetime | None
    is_latest: bool
    channel: str


@dataclass(frozen=True)
class Inspection:
    status: str
    report: dict[str, Any] | None


@dataclass(frozen=True)
class PageVersions:
    """Approved versions, highest first, and the current one's inspection (None when there
    is no current version or it has no inspection: not applicable)."""

    versions: list[ShownVersion]
    current: ShownVersion | None
    inspection: Inspection | None


async def page_versions(session: AsyncSession, plugin_id: str) -> PageVersions:
    """Columns only (no manifest, findings or release record), and the inspection joined
    to the current version alone: a report (up to 1 MiB) is read once, not per version."""
    rows = await session.execute(
        select(
            PluginVersion.version,
            PluginVersion.created_at,
            PluginVersion.approved_at,
            PluginVersion.is_latest,
            PluginVersion.channel,
            PluginInspection.status,
            PluginInspection.report,
        )
        .outerjoin(
            PluginInspection,
            and_(PluginInspection.version_id == PluginVersion.id, PluginVersion.is_latest),
        )
        .where(
            PluginVersion.plugin_id == plugin_id,
            PluginVersion.review_status == ReviewStatus.APPROVED.value,
        )
    )
    versions: list[ShownVersion] = []
    current: ShownVersion | None = None
    inspection: Inspection | None = None
    for version, created_at, approved_at, is_latest, channel, status, report in rows:
        shown = ShownVersion(version, created_at, approved_at, bool(is_latest), channel)
        versions.append(shown)
        if shown.is_latest:
            current = shown
            inspection = Inspection(status, report) if status is not None else None
    versions.sort(key=lambda v: version_key(v.version), reverse=True)
    return PageVersions(versions, current, inspection)


def report_items(report: dict[str, Any] | None, key: str) -> list[dict[str, Any]]:
    """A report's list (`tools`, `prompts`) as stored: whatever the publisher's server sent,
    so every item is checked to be an object before it is read."""
    items = (report or {}).get(key)
    if not isinstance(items, list):
        return []
    return [item for item in items if isinstance(item, dict)]
