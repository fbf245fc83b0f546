"""Free-form JSON from clients (manifests) that every store and client can hold."""

from __future__ import annotations

import re
from typing import Any

from marketplace_rules.limits import MANIFEST_MAX_DEPTH
from marketplace_rules.manifest import unsafe_number

_SURROGATE = re.compile("[\ud800-\udfff]")


def check_json_safe(value: Any, path: str = "manifest") -> None:
    """ValueError naming the first value no JSON document can carry faithfully, or the
    first place nesting deeper than the manifest rules allow."""
    stack: list[tuple[str, Any, int]] = [(path, value, 1)]
    while stack:  # iterative: nesting may be deep
        where, item, depth = stack.pop()
        if isinstance(item, dict | list) and depth > MANIFEST_MAX_DEPTH:
            raise ValueError(f"{where}: nests deeper than {MANIFEST_MAX_DEPTH} levels")
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int | float):
            if unsafe_number(item):
                raise ValueError(f"{where}: number out of the 64-bit range")
        elif isinstance(item, str):
            if _SURROGATE.search(item):
                raise ValueError(f"{where}: text with an unpaired surrogate")
        elif isinstance(item, dict):
            for key, child in item.items():
                if _SURROGATE.search(key):
                    raise ValueError(f"{where}: key with an unpaired surrogate")
                stack.append((f"{where}.{key}", child, depth + 1))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", child, depth + 1) for i, child in enumerate(item))


def storable(value: Any) -> Any:
    """NUL cannot be stored in PostgreSQL text or JSONB: keep it visible as U+FFFD.

    Only reached for manifests already refused by automatic validation (a NUL is a
    control-character finding), so nothing that is served changes."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(v) for v in value]
    return value
