"""The public capabilities of an approved version (CONTRACT 13): what the install client
shows before it installs or updates, and what a user consents to."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from marketplace.catalog.service import listed_plugin
from marketplace.db import DbSession
from marketplace.errors import PluginNotFound, VersionNotApproved, VersionNotFound
from marketplace.inspection.schemas import (
    CapabilitiesOut,
    inspection_json,
)
from marketplace.kit.error_codes import raises
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.models import PluginVersion, ReviewStatus
from marketplace.plugins.kind import PLUGINS
from marketplace_rules.changes import permissions_of
from marketplace_rules.model_text import AI_CODES

router = api_router(prefix="/api/v1/plugins", tags=["marketplace: public"])

LATEST = "latest"


@router.get("/capabilities/{plugin_id}/{version}")
@raises(PluginNotFound, VersionNotFound, VersionNotApproved)
async def capabilities(
    plugin_id: str, version: str, session: DbSession
) -> Envelope[CapabilitiesOut]:
    """The tools, prompts and observed behaviour of an approved version of a listed plugin
    (`latest`: the current version), with the permissions it declares and those its
    behaviour needs beyond them, and the findings about the text it gives a model
    (`warnings`). An unlisted plugin is 404, like an unknown one."""
    plugin = await listed_plugin(session, plugin_id)
    query = PLUGINS.loading_versions(
        select(PluginVersion).where(PluginVersion.plugin_id == plugin.id)
    )
    if version == LATEST:
        chosen = await session.scalar(query.where(PluginVersion.is_latest.is_(True)))
        if chosen is None:
            raise VersionNotApproved("This plugin has no approved version")
    else:
        chosen = await session.scalar(query.where(PluginVersion.version == version))
        if chosen is None:
            raise VersionNotFound()
    if chosen.review_status != ReviewStatus.APPROVED:
        raise VersionNotApproved()
    inspection = inspection_json(chosen.inspection)
    data: dict[str, Any] = {
        "pluginKey": plugin.plugin_key,
        "version": chosen.version,
        "status": inspection["status"],
        "server": inspection["server"],
        "tools": [_summary(tool) for tool in inspection["tools"]],
        "prompts": [_summary(prompt) for prompt in inspection["prompts"]],
        "declared": list(dict.fromkeys(permissions_of(chosen.manifest))),
        "observed": inspection["observed"],
        "undeclared": inspection["undeclared"],
        "warnings": [f for f in chosen.findings if f.get("code") in AI_CODES],
    }
    return Envelope(data=CapabilitiesOut.model_validate(data))


def _summary(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": item.get("name"),
        "description": item.get("description"),
        "fingerprint": item.get("fingerprint"),
    }
