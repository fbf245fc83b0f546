"""Small query helpers shared by the list endpoints."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, func
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import AppError


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
