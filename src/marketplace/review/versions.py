"""Which version is current: the highest semver precedence among approved versions."""

from __future__ import annotations

from collections.abc import Iterable

from marketplace.packages.manifest import version_sort_key


def newest(versions: Iterable[str]) -> str | None:
    ordered = sorted(versions, key=version_sort_key)
    return ordered[-1] if ordered else None


def is_newer(candidate: str, current: str | None) -> bool:
    return current is None or version_sort_key(candidate) > version_sort_key(current)
