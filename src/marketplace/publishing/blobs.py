"""Which blobs rows still point at: for `marketplace storage gc` and for orphan cleanup.

Keys are content addressed, so versions of different kinds with the same bytes share one
blob: every question here looks at every table that has a `blob_key` column.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import anyio
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import Base
from marketplace.storage.base import BlobStore


def blob_key_columns() -> list[Any]:
    """Every column that references a blob (a new kind's table is found by its name)."""
    return [table.c.blob_key for table in Base.metadata.sorted_tables if "blob_key" in table.c]


async def referenced_blob_keys(session: AsyncSession) -> set[str]:
    keys: set[str] = set()
    for column in blob_key_columns():
        rows = await session.scalars(select(column).where(column.is_not(None)).distinct())
        keys.update(k for k in rows if k)
    return keys


async def unreferenced(session: AsyncSession, keys: Iterable[str]) -> list[str]:
    """The given keys that no row references (sorted)."""
    wanted = set(keys)
    if not wanted:
        return []
    used: set[str] = set()
    for column in blob_key_columns():
        used.update(k for k in await session.scalars(select(column).where(column.in_(wanted))) if k)
    return sorted(wanted - used)


def _lock_id(key: str) -> int:
    # 60 bits of the key's own hash: a positive PostgreSQL bigint.
    return int(hashlib.sha256(key.encode()).hexdigest()[:15], 16)


async def lock_blob_key(session: AsyncSession, key: str) -> None:
    """Serialise, per blob, storing it for a new row and forgetting it: without this, a
    failed upload could delete the bytes a concurrent upload of the same content is about
    to commit a row for. PostgreSQL: a transaction advisory lock; SQLite's write
    transactions (BEGIN IMMEDIATE) are serialised already. Take it after any item lock."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_advisory_xact_lock(_lock_id(key))))


async def forget_blobs(
    sessions: async_sessionmaker[AsyncSession], store: BlobStore, keys: Iterable[str]
) -> None:
    """Delete blobs unless some row uses the same bytes (shielded from cancellation).

    `sessions` must open write transactions: each blob is checked and deleted under its
    lock (`lock_blob_key`), so an upload storing the same bytes waits for us and re-stores.
    """
    with anyio.CancelScope(shield=True):
        for key in sorted(set(keys)):
            async with sessions.begin() as session:
                await lock_blob_key(session, key)
                if await unreferenced(session, [key]):
                    await store.delete(key)
