"""Finding plugins and versions, and the ownership rule, in one place (no route can forget it)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.auth.deps import Admin, Developer, VerifiedDeveloper
from marketplace.db import DbSession
from marketplace.errors import PluginNotFound, PluginNotOwned, VersionNotFound
from marketplace.kit.sql import is_row_id
from marketplace.models import Plugin, PluginVersion, User


async def find_plugin(session: AsyncSession, plugin_id: str, *, lock: bool = False) -> Plugin:
    """By id first, then by pluginKey (CONTRACT 3); 404 PLUGIN_NOT_FOUND otherwise."""
    column = Plugin.id if is_row_id(plugin_id) else Plugin.plugin_key
    query = select(Plugin).where(column == plugin_id)
    if lock:
        # Refresh: an object already in the session would otherwise keep pre-lock values.
        query = query.with_for_update().execution_options(populate_existing=True)
    plugin = await session.scalar(query)
    if plugin is None:
        raise PluginNotFound()
    return plugin


async def find_version(
    session: AsyncSession, version_id: str, *, lock: bool = False
) -> PluginVersion:
    if not is_row_id(version_id):
        raise VersionNotFound()
    query = select(PluginVersion).where(PluginVersion.id == version_id)
    if lock:
        query = query.with_for_update().execution_options(populate_existing=True)
    version = await session.scalar(query)
    if version is None:
        raise VersionNotFound()
    return version


def _check_owner(plugin: Plugin, user: User) -> Plugin:
    if plugin.owner_id != user.id:
        raise PluginNotOwned()
    return plugin


async def _owned_for_read(plugin_id: str, user: Developer, session: DbSession) -> Plugin:
    return _check_owner(await find_plugin(session, plugin_id), user)


async def _owned_for_write(plugin_id: str, user: VerifiedDeveloper, session: DbSession) -> Plugin:
    # Locked: writes to one plugin are serialised (PostgreSQL row lock; SQLite is already).
    return _check_owner(await find_plugin(session, plugin_id, lock=True), user)


async def _admin_plugin(plugin_id: str, _admin: Admin, session: DbSession) -> Plugin:
    return await find_plugin(session, plugin_id, lock=True)


# Order of checks (CONTRACT 1): token → role → verified → 404 → not owned, by construction.
OwnedPlugin = Annotated[Plugin, Depends(_owned_for_read)]
OwnedPluginForWrite = Annotated[Plugin, Depends(_owned_for_write)]
AdminPlugin = Annotated[Plugin, Depends(_admin_plugin)]
