"""Whether a granted permission covers one a plugin needs, for what a server does when it
runs (CONTRACT 13) and what a user accepted: the service's `undeclared` and the install
client's consent use this one rule.

`network:<pattern>` is matched as a host name, not as dotted segments: `network:*` covers
every host; `network:*.example.com` covers `example.com`'s subdomains at any depth (not
`example.com` itself, nor `example.com.evil.net`); any other pattern covers exactly that
host, case-insensitively (an address only itself). Every other permission is compared by
scope as findings.md says (`marketplace_rules.changes.covers`).
"""

from __future__ import annotations

from collections.abc import Iterable

from marketplace_rules.changes import covers

NETWORK = "network:"


def _host(text: str) -> str:
    return text.strip().rstrip(".").lower()


def host_covers(pattern: str, host: str) -> bool:
    """Whether the host pattern of a `network:` permission covers `host`."""
    wanted, seen = _host(pattern), _host(host)
    if wanted == "*":
        return True
    if wanted.startswith("*."):
        return seen.endswith(wanted[1:]) and len(seen) > len(wanted) - 1
    return wanted == seen


def grants(granted: str, needed: str) -> bool:
    """Whether permission `granted` covers permission `needed`."""
    if needed.startswith(NETWORK) and granted.startswith(NETWORK):
        return host_covers(granted[len(NETWORK) :], needed[len(NETWORK) :])
    return covers(granted, needed)


def granted_by_any(granted: Iterable[str], needed: str) -> bool:
    return any(grants(permission, needed) for permission in granted)
