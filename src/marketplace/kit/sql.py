"""Small query helpers shared by the list endpoints."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import ColumnElement, func
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import AppError

_CANONICAL_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def is_row_id(value: str) -> bool:
    """Only the canonical form our ids take; `uuid.UUID()` would also accept 32 bare hex
    digits, which is a valid pluginKey (CONTRACT 3: an id or a pluginKey in paths)."""
    return _CANONICAL_ID.match(value) is not None


def plugin_named(ref: str) -> dict[str, str]:
    """An error's details naming the plugin as the request named it: `pluginKey`, or
    `pluginId` for an id (CONTRACT 3: a path takes either; keys never look like ids)."""
    return {"pluginId": ref} if is_row_id(ref) else {"pluginKey": ref}


def escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def icontains(column: Any, text: str) -> ColumnElement[bool]:
    """Case-insensitive substring match that treats % and _ in the input literally."""
    result: ColumnElement[bool] = func.lower(column).like(
        f"%{escape_like(text.lower())}%", escape="\\"
    )
    return result


async def insert_unique(session: AsyncSession, row: object, conflict: AppError) -> None:
    """Insert inside a savepoint so a unique violation (a lost race) becomes `conflict`
    and leaves the request's transaction usable."""
    try:
        async with session.begin_nested():
            session.add(row)
            await session.flush()
    except IntegrityError as exc:
        raise conflict from exc
