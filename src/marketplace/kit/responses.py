"""A JSON response rendered with orjson (fast, and the shape we already built)."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import JSONResponse


def _default(value: Any) -> Any:
    from decimal import Decimal

    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class JSONBytes(JSONResponse):
    """JSONResponse rendered by orjson. A JSONResponse subclass, so FastAPI documents the
    response model in OpenAPI (for any other class it writes `{"type": "string"}`)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        if isinstance(content, bytes):
            return content
        return orjson.dumps(content, default=_default)
