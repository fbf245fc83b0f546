"""The counters statistics read (CONTRACT 16), moved in the transaction of each event.

One upsert per counter row (`INSERT ... ON CONFLICT DO UPDATE`, on both databases): the
row is created by the first event of its day or version, and concurrent events add up
under the row's lock instead of losing one another. Statistics never count raw events.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import structlog
from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request

from marketplace.models import PluginDailyStats, PluginVersionStats

log = structlog.get_logger("marketplace.delivery")

DAILY: Table = PluginDailyStats.__table__  # type: ignore[assignment]
VERSIONS: Table = PluginVersionStats.__table__  # type: ignore[assignment]


def today() -> date:
    """Days are UTC dates (CONTRACT 16)."""
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class VersionCounts:
    """A version's all-time counters, as the automatic halt reads them."""

    installs: int  # distinct users who reported installing it
    uninstalls: int  # distinct users who uninstalled it
    crash_users: int  # distinct users who reported a crash


def _upsert(
    session: AsyncSession, table: Table, keys: dict[str, Any], amounts: dict[str, Any]
) -> Any:
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(table).values(**keys, **amounts)
    return statement.on_conflict_do_update(
        index_elements=list(keys),
        set_={name: table.c[name] + statement.excluded[name] for name in amounts},
    )


async def add_daily(session: AsyncSession, plugin_id: str, **amounts: int | Decimal) -> None:
    """Add to a plugin's counters of today (UTC), e.g. `downloads=1`."""
    keys = {"plugin_id": plugin_id, "day": today()}
    await session.execute(_upsert(session, DAILY, keys, amounts))


async def add_version(
    session: AsyncSession, plugin_id: str, version: str, **amounts: int
) -> VersionCounts:
    """Add to a version's all-time counters; answers them as they are now (the automatic
    halt judges from them in the same transaction)."""
    keys = {"plugin_id": plugin_id, "version": version}
    statement = _upsert(session, VERSIONS, keys, amounts).returning(
        VERSIONS.c.installs, VERSIONS.c.uninstalls, VERSIONS.c.crash_users
    )
    installs, uninstalls, crash_users = (await session.execute(statement)).one()
    return VersionCounts(int(installs), int(uninstalls), int(crash_users))


async def count_download(request: Request, plugin_id: str) -> None:
    """A download-info answer, counted in a write transaction of its own: the answer is a
    read (GET), which on SQLite must not turn into a write halfway. A failure to count is
    logged, not answered: the download itself succeeded."""
    sessions: async_sessionmaker[AsyncSession] = request.app.state.write_sessionmaker
    try:
        async with sessions() as session, session.begin():
            await add_daily(session, plugin_id, downloads=1)
    except SQLAlchemyError as exc:
        log.warning("download not counted", plugin_id=plugin_id, error=type(exc).__name__)
