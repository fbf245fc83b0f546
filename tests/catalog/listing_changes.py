"""Real changes to listed data, for tests that need the catalogue generation to move: the
database's triggers move it (migration 0016), as they do for every writer."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

# A seeded category moved one place down (the test database's reset puts it back).
_TOUCH_A_CATEGORY = text(
    "UPDATE categories SET sort_order = sort_order + 1 "
    "WHERE key = (SELECT min(key) FROM categories)"
)


async def change_listing(session: AsyncSession) -> None:
    """A change to listed data in the session's transaction: at its commit, both numbers
    have moved."""
    await session.execute(_TOUCH_A_CATEGORY)


async def count_a_download(session: AsyncSession, plugin_id: str) -> None:
    """A change of a plugin's counters only: at its commit, the generation has moved and the
    listing number has not."""
    await session.execute(
        text("UPDATE plugins SET download_count = download_count + 1 WHERE id = :id"),
        {"id": plugin_id},
    )
