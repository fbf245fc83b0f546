"""Which version is current: semver order, approved only, one per plugin."""

from __future__ import annotations

from collections.abc import Iterable

import semver


def parse_version(text: str) -> semver.Version | None:
    """Semver 2.0 without build metadata; None when invalid."""
    if "+" in text:
        return None
    try:
        return semver.Version.parse(text)
    except (ValueError, TypeError):
        return None


def version_key(text: str) -> semver.Version:
    parsed = parse_version(text)
    # Rows only hold validated versions; the fallback keeps sorting total regardless.
    return parsed if parsed is not None else semver.Version(0)


def newest(versions: Iterable[str]) -> str | None:
    ordered = sorted(versions, key=version_key)
    return ordered[-1] if ordered else None


def is_newer(candidate: str, current: str | None) -> bool:
    return current is None or version_key(candidate) > version_key(current)
