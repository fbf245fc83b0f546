"""Blob before row (DESIGN invariant 3), for every upload that stores a package.

The file is stored under its content-addressed key first; then the caller writes the rows
that reference it and the transaction commits. If writing or committing fails, the
transaction is rolled back and the blob deleted again unless another row uses the same
bytes. A crash in between leaves at most an unreferenced blob, which gc removes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.storage.base import PACKAGE_CONTENT_TYPE, blob_key
from marketplace.storage.references import forget_blob

T = TypeVar("T")


async def store_then_commit(
    request: Request,
    session: AsyncSession,
    *,
    path: Path,
    sha256: str,
    write_rows: Callable[[str], Awaitable[T]],
    content_type: str = PACKAGE_CONTENT_TYPE,
) -> T:
    """Put the file at `path` as a blob, then `write_rows(key)` and commit; returns its result."""
    key = blob_key(sha256)
    store = request.app.state.blob_store
    await store.put_file(key, path, content_type=content_type, sha256=sha256)
    try:
        result = await write_rows(key)
        await session.commit()
    except BaseException:
        await session.rollback()
        await forget_blob(request.app.state.sessionmaker, store, key)
        raise
    return result
