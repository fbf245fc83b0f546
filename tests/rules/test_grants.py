"""Host-aware coverage of `network:` permissions (marketplace_rules.grants)."""

from __future__ import annotations

import pytest

from marketplace_rules.grants import granted_by_any, grants


@pytest.mark.parametrize(
    ("granted", "needed", "expected"),
    [
        ("network:*", "network:evil.example.net", True),
        ("network:*", "network:93.184.216.34", True),
        ("network:api.example.com", "network:api.example.com", True),
        ("network:API.Example.com", "network:api.example.com.", True),
        ("network:api.example.com", "network:api.example.com.evil.net", False),
        ("network:api.example.com", "network:example.com", False),
        ("network:*.example.com", "network:a.example.com", True),
        ("network:*.example.com", "network:a.b.example.com", True),
        ("network:*.example.com", "network:example.com", False),
        ("network:*.example.com", "network:badexample.com", False),
        ("network:*.example.com", "network:example.com.evil.net", False),
        ("network:93.184.216.34", "network:93.184.216.34", True),
        ("network:93.184.216.*", "network:93.184.216.34", False),
        ("network", "network:anything.example", True),  # a scope covers its segments
        ("*", "network:anything.example", True),
        ("fs.*", "fs.write", True),
        ("fs.read", "fs.write", False),
        ("process.spawn", "process.spawn", True),
        ("secrets.read", "fs.write", False),
    ],
)
def test_grants(granted: str, needed: str, expected: bool) -> None:
    assert grants(granted, needed) is expected


def test_granted_by_any() -> None:
    assert granted_by_any(["fs.write", "network:*.example.com"], "network:x.example.com")
    assert not granted_by_any([], "process.spawn")
