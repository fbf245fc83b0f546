"""Which blobs rows still point at: for `marketplace storage gc` and for orphan cleanup.

Keys are content addressed, so a plugin version and a scenario version with the same
bytes share one blob: every question here looks at every table that holds a blob key.
"""

from __future__ import annotations

from collections.abc import Iterable

import anyio
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import PluginVersion, ScenarioVersion
from marketplace.storage.base import BlobStore

# Every column that references a blob.
BLOB_KEY_COLUMNS = (PluginVersion.blob_key, ScenarioVersion.blob_key)


async def referenced_blob_keys(session: AsyncSession) -> set[str]:
    keys: set[str] = set()
    for column in BLOB_KEY_COLUMNS:
        rows = await session.scalars(select(column).where(column.is_not(None)).distinct())
        keys.update(k for k in rows if k)
    return keys


async def unreferenced(session: AsyncSession, keys: Iterable[str]) -> list[str]:
    """The given keys that no row references (sorted)."""
    wanted = set(keys)
    if not wanted:
        return []
    used: set[str] = set()
    for column in BLOB_KEY_COLUMNS:
        used.update(k for k in await session.scalars(select(column).where(column.in_(wanted))) if k)
    return sorted(wanted - used)


async def forget_blob(
    sessionmaker: async_sessionmaker[AsyncSession], store: BlobStore, key: str
) -> None:
    """Delete a just-stored blob unless some row uses the same bytes (shielded from cancel)."""
    with anyio.CancelScope(shield=True):
        async with sessionmaker() as session:
            orphan = bool(await unreferenced(session, [key]))
        if orphan:
            await store.delete(key)
