"""ORM rows → response shapes."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import Plugin, PluginVersion
from marketplace.orgs import service as orgs
from marketplace.orgs.schemas import OrgRef
from marketplace.plugins.schemas import (
    AdminPluginOut,
    AdminVersionOut,
    PluginOut,
    VersionOut,
)
from marketplace.publishing.queries import label_of

_ROW_FIELDS = tuple(name for name in PluginOut.model_fields if name != "org")


def plugin_out(plugin: Plugin, org: OrgRef | None) -> PluginOut:
    """The plugin with the organization it belongs to (`plugin_view` looks it up)."""
    fields = {name: getattr(plugin, name) for name in _ROW_FIELDS}
    return PluginOut.model_validate({**fields, "org": org})


async def plugin_view(session: AsyncSession, plugin: Plugin) -> PluginOut:
    return plugin_out(plugin, await orgs.org_ref(session, plugin.org_id))


async def plugin_views(session: AsyncSession, plugins: Sequence[Plugin]) -> list[PluginOut]:
    """A page of plugins, their organizations read in one query."""
    refs = await orgs.org_refs(session, (p.org_id for p in plugins))
    return [plugin_out(p, orgs.pick(refs, p.org_id)) for p in plugins]


def admin_plugin_out(plugin: Plugin, labels: dict[str, str], org: OrgRef | None) -> AdminPluginOut:
    return AdminPluginOut(
        **dict(plugin_out(plugin, org)), reviewer_label=label_of(labels, plugin.reviewed_by)
    )


def version_out(version: PluginVersion) -> VersionOut:
    return VersionOut.model_validate(version)


def admin_version_out(
    version: PluginVersion, plugin: Plugin, labels: dict[str, str]
) -> AdminVersionOut:
    return AdminVersionOut(
        **dict(version_out(version)),
        plugin_key=plugin.plugin_key,
        plugin_name=plugin.name,
        reviewer_label=label_of(labels, version.reviewed_by),
    )
