"""Every blob key a row still points at (for `marketplace storage gc`)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import PluginVersion


async def referenced_blob_keys(session: AsyncSession) -> set[str]:
    keys = await session.scalars(
        select(PluginVersion.blob_key).where(PluginVersion.blob_key.is_not(None)).distinct()
    )
    return {k for k in keys if k}
