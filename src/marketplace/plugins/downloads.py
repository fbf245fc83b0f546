"""Download information for a version (CONTRACT 7): presigned URL, or the manifest itself."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from marketplace.models import Distribution, Plugin, PluginVersion


async def download_info(request: Request, plugin: Plugin, version: PluginVersion) -> dict[str, Any]:
    if version.distribution == Distribution.TARBALL and version.blob_key is not None:
        settings = request.app.state.settings
        url, expires_at = await request.app.state.blob_store.presigned_url(
            version.blob_key,
            filename=f"{plugin.plugin_key}-{version.version}.tar.gz",
            expires_in=settings.download_url_seconds,
        )
        return {
            "distribution": Distribution.TARBALL.value,
            "url": url,
            "sha256": version.sha256,
            "size": version.size,
            "expiresAt": expires_at,
        }
    if version.distribution == Distribution.CONFIG_ONLY:
        return {
            "distribution": Distribution.CONFIG_ONLY.value,
            "configOnly": True,
            "manifest": version.manifest,
        }
    return {"distribution": Distribution.INLINE.value, "manifest": version.manifest}
