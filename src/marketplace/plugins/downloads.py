"""What a client needs to install a plugin version, by distribution (CONTRACT 7):
tarball → a presigned URL with its SHA-256 and size; config_only and inline → the manifest."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from marketplace.kit.schemas import OutputModel
from marketplace.models import Distribution, Plugin, PluginVersion
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.downloads import PresignedUrls, package_link
from marketplace.trust.schemas import ReleaseRecord


class DownloadTarball(OutputModel):
    distribution: Literal["tarball"]
    url: str
    sha256: str | None
    size: int | None
    expires_at: datetime
    release: ReleaseRecord | None


class DownloadConfigOnly(OutputModel):
    distribution: Literal["config_only"]
    config_only: Literal[True]
    manifest: dict[str, Any]
    release: ReleaseRecord | None


class DownloadInline(OutputModel):
    distribution: Literal["inline"]
    manifest: dict[str, Any]
    release: ReleaseRecord | None


DownloadOut = Annotated[
    DownloadTarball | DownloadConfigOnly | DownloadInline, Field(discriminator="distribution")
]


async def download_info(
    store: PresignedUrls,
    expires_in: int,
    plugin: Plugin,
    version: PluginVersion,
    release: ReleaseRecord | None,
) -> DownloadOut:
    """`release` is the version's signed release record (null only for a version an
    administrator downloads before approving it)."""
    if version.distribution == Distribution.TARBALL:
        link = await package_link(store, expires_in, PLUGINS, plugin, version)
        return DownloadTarball(
            distribution="tarball",
            url=link.url,
            sha256=link.sha256,
            size=link.size,
            expires_at=link.expires_at,
            release=release,
        )
    if version.distribution == Distribution.CONFIG_ONLY:
        return DownloadConfigOnly(
            distribution="config_only",
            config_only=True,
            manifest=version.manifest,
            release=release,
        )
    return DownloadInline(distribution="inline", manifest=version.manifest, release=release)
