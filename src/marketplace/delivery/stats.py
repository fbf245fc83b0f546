"""A plugin's statistics for its owner (CONTRACT 16), read from the counters alone: two
indexed reads, whatever the number of events behind them."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.catalog.service import version_key
from marketplace.delivery.counters import today
from marketplace.delivery.schemas import DayStats, PluginStats, VersionStats
from marketplace.models import PluginDailyStats, PluginVersionStats

ZERO = Decimal("0.00")


async def plugin_stats(session: AsyncSession, plugin_id: str, days: int) -> PluginStats:
    """`days` days ending today (UTC), oldest first, every day present. Download counts are
    written at most a second late (`delivery.downloads`)."""
    last = today()
    first = last - timedelta(days=days - 1)
    counted: dict[date, PluginDailyStats] = {
        row.day: row
        for row in await session.scalars(
            select(PluginDailyStats).where(
                PluginDailyStats.plugin_id == plugin_id, PluginDailyStats.day >= first
            )
        )
    }
    series = []
    for offset in range(days):
        day = first + timedelta(days=offset)
        row = counted.get(day)
        series.append(
            DayStats(
                date=day.isoformat(),
                installs=row.installs if row else 0,
                uninstalls=row.uninstalls if row else 0,
                downloads=row.downloads if row else 0,
                crash_reports=row.crash_reports if row else 0,
                purchases=row.purchases if row else 0,
                revenue=row.revenue if row else ZERO,
            )
        )
    versions = sorted(
        await session.scalars(
            select(PluginVersionStats).where(PluginVersionStats.plugin_id == plugin_id)
        ),
        key=lambda row: version_key(row.version),
        reverse=True,
    )
    return PluginStats(
        days=series,
        versions=[
            VersionStats(
                version=row.version,
                # As CONTRACT 16 says: an uninstall needs no install first, so it can
                # be negative when users uninstall what they never reported installing.
                active_installs=row.installs - row.uninstalls,
                installs=row.installs,
                uninstalls=row.uninstalls,
                crash_reports=row.crash_reports,
            )
            for row in versions
        ],
    )
