"""The plugin dependencies: ownership and the order of checks live in the core's lookup;
these name the path parameter (`plugin_id`) and the caller each route needs."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from marketplace.auth.deps import Admin, Developer, TokenGrant, VerifiedDeveloper
from marketplace.db import DbSession
from marketplace.models import Plugin, PluginVersion
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.lookup import (
    declare_admin,
    declare_owned,
    declare_version_write,
    find_item,
    locked_version_with_item,
    owned_item,
    owned_item_for_write,
    owned_version,
)


async def owned_plugin(plugin_id: str, caller: Developer, session: DbSession) -> Plugin:
    return await owned_item(PLUGINS, plugin_id, caller, session)


async def owned_plugin_for_write(
    plugin_id: str, caller: VerifiedDeveloper, session: DbSession, grant: TokenGrant
) -> Plugin:
    return await owned_item_for_write(PLUGINS, plugin_id, caller, session, grant)


async def owned_plugin_for_upload(
    plugin_id: str, caller: VerifiedDeveloper, session: DbSession, grant: TokenGrant
) -> Plugin:
    """Checked without a lock: the upload's own transaction locks the row."""
    return await owned_item_for_write(PLUGINS, plugin_id, caller, session, grant, lock=False)


async def admin_plugin(plugin_id: str, _admin: Admin, session: DbSession) -> Plugin:
    return await find_item(session, PLUGINS, plugin_id)


async def admin_plugin_for_write(plugin_id: str, _admin: Admin, session: DbSession) -> Plugin:
    return await find_item(session, PLUGINS, plugin_id, lock=True)


declare_owned(owned_plugin, PLUGINS, write=False)
for _write in (owned_plugin_for_write, owned_plugin_for_upload):
    declare_owned(_write, PLUGINS, write=True)
for _admin in (admin_plugin, admin_plugin_for_write):
    declare_admin(_admin, PLUGINS)

OwnedPlugin = Annotated[Plugin, Depends(owned_plugin)]
OwnedPluginForWrite = Annotated[Plugin, Depends(owned_plugin_for_write)]
OwnedPluginForUpload = Annotated[Plugin, Depends(owned_plugin_for_upload)]
AdminPlugin = Annotated[Plugin, Depends(admin_plugin)]
AdminPluginForWrite = Annotated[Plugin, Depends(admin_plugin_for_write)]


async def admin_plugin_version_for_write(
    version_id: str, _admin: Admin, session: DbSession
) -> tuple[Plugin, PluginVersion]:
    """Any version with its plugin, both locked (item first) for a review move."""
    return await locked_version_with_item(session, PLUGINS, version_id)


async def owned_plugin_version_for_write(
    version_id: str, plugin: OwnedPluginForWrite, session: DbSession
) -> tuple[Plugin, PluginVersion]:
    """A version of the caller's own plugin, locked after it."""
    return plugin, await owned_version(session, PLUGINS, plugin, version_id)


for _version_write in (admin_plugin_version_for_write, owned_plugin_version_for_write):
    declare_version_write(_version_write, PLUGINS)

AdminPluginVersionForWrite = Annotated[
    tuple[Plugin, PluginVersion], Depends(admin_plugin_version_for_write)
]
OwnedPluginVersionForWrite = Annotated[
    tuple[Plugin, PluginVersion], Depends(owned_plugin_version_for_write)
]
