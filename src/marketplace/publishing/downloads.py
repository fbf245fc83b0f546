"""Download information for a version's package: a presigned URL with its SHA-256 and size."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from marketplace.publishing.kinds import ItemKind, ItemT, VersionT


class PresignedUrls(Protocol):
    """The part of the blob store (marketplace.storage) that downloads need."""

    async def presigned_url(
        self, key: str, *, filename: str, expires_in: int
    ) -> tuple[str, datetime]: ...


@dataclass(frozen=True)
class PackageLink:
    url: str
    sha256: str
    size: int
    expires_at: datetime
    version: str


async def package_link(
    store: PresignedUrls,
    expires_in: int,
    kind: ItemKind[ItemT, VersionT],
    item: ItemT,
    version: VersionT,
) -> PackageLink:
    """The version's package; the kind's package error when the version has none."""
    if version.blob_key is None or version.sha256 is None or version.size is None:
        raise kind.package_missing(kind.version_label(item, version.version) + " has no package")
    url, expires_at = await store.presigned_url(
        version.blob_key,
        filename=f"{kind.key_of(item)}-{version.version}.tar.gz",
        expires_in=expires_in,
    )
    return PackageLink(url, version.sha256, version.size, expires_at, version.version)
