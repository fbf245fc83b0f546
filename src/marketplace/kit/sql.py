"""Small query helpers shared by the list endpoints."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, func


def escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def icontains(column: Any, text: str) -> ColumnElement[bool]:
    """Case-insensitive substring match that treats % and _ in the input literally."""
    result: ColumnElement[bool] = func.lower(column).like(
        f"%{escape_like(text.lower())}%", escape="\\"
    )
    return result
