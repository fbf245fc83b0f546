"""What download info reads before it answers (the plugin, the chosen version, its signed
release record), cached per catalogue generation like the public reads.

Every change to a plugin or a version moves the generation in its own transaction (the
database's triggers, migration 0016), so a cached target is served only while nothing it
holds can have changed. Only successes are cached: an unknown, unlisted or unapproved
target takes the full path and its error every time. What depends on the caller (the
purchase) is never cached. The plugin and version rows are expunged from the session that
loaded them (its rollback must not expire them under other requests) and no code writes to
them.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.catalog.cache import catalog_cache
from marketplace.catalog.service import find_plugin
from marketplace.commerce import service
from marketplace.errors import PluginNotFound
from marketplace.kit.sql import plugin_named
from marketplace.models import Plugin, PluginVersion
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.releases import Releases, needs_completing, release_for_download
from marketplace.trust.schemas import ReleaseRecord


@dataclass(frozen=True)
class DownloadTarget:
    plugin: Plugin
    version: PluginVersion
    release: ReleaseRecord | None


async def download_target(
    request: Request, session: AsyncSession, releases: Releases, ref: str, version_ref: str
) -> DownloadTarget:
    """The plugin (id or pluginKey) and its downloadable version, as
    `service.downloadable_version` decides (404 PLUGIN_NOT_FOUND first)."""
    cache = catalog_cache(request.app)
    # Read before the rows it guards, so a cached target is never older than its number.
    generation = await cache.generation(session)
    key = ("download", ref, version_ref)
    target: DownloadTarget | None = cache.lookup(generation, key)
    if target is not None:
        return target
    plugin = await find_plugin(session, ref)
    if plugin is None:
        raise PluginNotFound(details=plugin_named(ref))
    chosen = await service.downloadable_version(session, plugin, version_ref)
    if needs_completing(chosen.release):
        # The record is completed in a write transaction of its own: the request's read
        # ends first, so no request holds one pooled connection while waiting for another
        # (as many concurrent first downloads would starve the pool).
        await session.commit()
    release = await release_for_download(releases, PLUGINS, plugin, chosen)
    # Out of the session: its rollback (a 402 on this request) would expire them for all.
    session.expunge(plugin)
    session.expunge(chosen)
    target = DownloadTarget(plugin, chosen, release)
    cache.store_lookup(generation, key, target)
    return target
