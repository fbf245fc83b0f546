"""The plugin dependencies: ownership and the order of checks live in the core's lookup."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from marketplace.models import Plugin
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.lookup import for_admin, owned_for_read, owned_for_write

PARAM = "plugin_id"

OwnedPlugin = Annotated[Plugin, Depends(owned_for_read(PLUGINS, PARAM))]
OwnedPluginForWrite = Annotated[Plugin, Depends(owned_for_write(PLUGINS, PARAM))]
# Streamed uploads: checked without a lock; the upload's own transaction locks the row.
OwnedPluginForUpload = Annotated[Plugin, Depends(owned_for_write(PLUGINS, PARAM, lock=False))]
AdminPlugin = Annotated[Plugin, Depends(for_admin(PLUGINS, PARAM))]
AdminPluginForWrite = Annotated[Plugin, Depends(for_admin(PLUGINS, PARAM, lock=True))]
