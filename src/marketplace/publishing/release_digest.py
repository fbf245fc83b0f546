"""The SHA-256 and size a release record states for a version (CONTRACT 11), in one place.

A tarball's are those of its package bytes. A config_only or inline version has no package:
what a client receives and checks is the manifest in the download information, so its
digest is that of the manifest's canonical JSON. The release signer and the revocation list
must agree on this number, or a client could not match a revocation to what it installed.
"""

from __future__ import annotations

import hashlib
from typing import Any

from marketplace.models import Distribution
from marketplace.trust.canonical import canonical_json

MANIFEST_DISTRIBUTIONS = frozenset({Distribution.CONFIG_ONLY.value, Distribution.INLINE.value})


def manifest_digest(manifest: dict[str, Any]) -> tuple[str, int]:
    """SHA-256 (lowercase hex) and size of the manifest's canonical JSON."""
    data = canonical_json(manifest)
    return hashlib.sha256(data).hexdigest(), len(data)


def served_digest(version: Any) -> tuple[str | None, int | None]:
    """(sha256, size) of what the version serves; (None, None) for no package at all.

    `version` is any reviewed version; only plugin versions have a `distribution` (scenario
    versions are packages or nothing).
    """
    distribution = getattr(version, "distribution", Distribution.TARBALL.value)
    if distribution in MANIFEST_DISTRIBUTIONS:
        return manifest_digest(version.manifest)
    sha256: str | None = version.sha256
    size: int | None = version.size
    return sha256, size
