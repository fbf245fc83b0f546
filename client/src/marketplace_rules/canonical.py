"""Canonical JSON and base64 as CONTRACT 11 defines them, shared by the signer and the client."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    """UTF-8, keys sorted, no insignificant whitespace: the exact bytes that get signed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def b64encode(data: bytes) -> str:
    """Standard base64 with padding."""
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str) -> bytes:
    """Strict standard base64; ValueError for anything else (no silently skipped characters)."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise ValueError("not standard base64") from exc
