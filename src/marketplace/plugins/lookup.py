"""The plugin dependencies: ownership and the order of checks live in the core's lookup;
these name the path parameter (`plugin_id`) and the caller each route needs."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from marketplace.auth.deps import Admin, Developer, TokenGrant, VerifiedDeveloper
from marketplace.db import DbSession
from marketplace.models import Plugin
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.lookup import (
    declare_admin,
    declare_owned,
    find_item,
    owned_item,
    owned_item_for_write,
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
