"""The counters statistics read (CONTRACT 16), moved in the transaction of each event.

One upsert per counter row (`INSERT ... ON CONFLICT DO UPDATE`, on both databases): the
row is created by the first event of its day or version, and concurrent events add up
under the row's lock instead of losing one another. Statistics never count raw events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import PluginDailyStats, PluginVersionStats

DAILY: Table = PluginDailyStats.__table__  # type: ignore[assignment]
VERSIONS: Table = PluginVersionStats.__table__  # type: ignore[assignment]


def today() -> date:
    """Days are UTC dates (CONTRACT 16)."""
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class VersionCounts:
    """A version's counters since its rollout was last resumed, as the automatic halt
    judges them."""

    installs: int  # distinct users who reported installing it
    uninstalls: int  # distinct users among them who uninstalled it
    crash_users: int  # distinct users among them who reported a crash


def _upsert(
    session: AsyncSession, table: Table, keys: dict[str, Any], amounts: Mapping[str, Any]
) -> Any:
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(table).values(**keys, **amounts)
    return statement.on_conflict_do_update(
        index_elements=list(keys),
        set_={name: table.c[name] + statement.excluded[name] for name in amounts},
    )


async def add_daily(
    session: AsyncSession,
    plugin_id: str,
    amounts: Mapping[str, int | Decimal],
    *,
    day: date | None = None,
) -> None:
    """Add to a plugin's counters of a day (today, UTC, by default): `{"downloads": 1}`."""
    keys = {"plugin_id": plugin_id, "day": day or today()}
    await session.execute(_upsert(session, DAILY, keys, amounts))


async def add_version(
    session: AsyncSession, plugin_id: str, version: str, **amounts: int
) -> VersionCounts:
    """Add to a version's all-time counters; answers them as they are now (the automatic
    halt judges from them in the same transaction)."""
    keys = {"plugin_id": plugin_id, "version": version}
    c = VERSIONS.c
    statement = _upsert(session, VERSIONS, keys, amounts).returning(
        c.installs - c.judged_installs,
        c.uninstalls - c.judged_uninstalls,
        c.crash_users - c.judged_crash_users,
    )
    installs, uninstalls, crash_users = (await session.execute(statement)).one()
    return VersionCounts(int(installs), int(uninstalls), int(crash_users))


async def judge_afresh(session: AsyncSession, plugin_id: str, version: str) -> None:
    """A resumed rollout: the automatic halt judges only the signals that come after."""
    c = VERSIONS.c
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(VERSIONS).values(plugin_id=plugin_id, version=version)
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["plugin_id", "version"],
            set_={
                "judged_installs": c.installs,
                "judged_uninstalls": c.uninstalls,
                "judged_crash_users": c.crash_users,
            },
        )
    )
