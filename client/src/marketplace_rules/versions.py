"""Plugin and scenario versions: semver 2.0 without build metadata, in canonical spelling.

Parsing and ordering come from the `semver` package (DESIGN: never hand-rolled); it is
pure Python and one of the CLI's own dependencies.
"""

from __future__ import annotations

import semver

from marketplace_rules.limits import VERSION_MAX_LENGTH

SEMVER_EXPECTED = "must be a semver version such as 1.2.3 or 1.2.3-beta.1"
# semver.org's own expression, less the build part: for documents (JSON Schema `pattern`);
# parse_version stays the judge.
_NUMBER = r"(?:0|[1-9][0-9]*)"
_IDENTIFIER = r"(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
SEMVER_PATTERN = rf"^{_NUMBER}\.{_NUMBER}\.{_NUMBER}(?:-{_IDENTIFIER}(?:\.{_IDENTIFIER})*)?$"


def parse_version(text: str) -> semver.Version:
    """A semver 2.0 version without build metadata; ValueError says what is wrong."""
    if len(text) > VERSION_MAX_LENGTH:
        raise ValueError(f"must be at most {VERSION_MAX_LENGTH} characters")
    try:
        version = semver.Version.parse(text)
    except (ValueError, TypeError):
        raise ValueError(SEMVER_EXPECTED) from None
    if version.build is not None:
        raise ValueError("must not carry build metadata (+...)")
    if str(version) != text:  # only the canonical ASCII spelling is stored
        raise ValueError(SEMVER_EXPECTED)
    return version


def version_problem(text: str) -> str | None:
    """What is wrong with a version string, or None when it is valid."""
    try:
        parse_version(text)
    except ValueError as exc:
        return str(exc)
    return None


def is_valid_version(text: object) -> bool:
    return isinstance(text, str) and version_problem(text) is None


def version_sort_key(text: str) -> semver.Version:
    """Sort key for "newest" = highest semver precedence (1.0.0-alpha.10 > 1.0.0-alpha.9)."""
    return semver.Version.parse(text)
