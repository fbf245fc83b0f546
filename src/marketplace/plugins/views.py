"""ORM rows → response shapes."""

from __future__ import annotations

from marketplace.models import Plugin, PluginVersion
from marketplace.plugins.schemas import (
    AdminPluginOut,
    AdminVersionOut,
    PluginOut,
    VersionOut,
)


def plugin_out(plugin: Plugin) -> PluginOut:
    return PluginOut.model_validate(plugin)


def admin_plugin_out(plugin: Plugin, labels: dict[str, str]) -> AdminPluginOut:
    label = labels.get(plugin.reviewed_by) if plugin.reviewed_by else None
    return AdminPluginOut(**dict(plugin_out(plugin)), reviewer_label=label)


def version_out(version: PluginVersion) -> VersionOut:
    return VersionOut.model_validate(version)


def admin_version_out(
    version: PluginVersion, plugin: Plugin, labels: dict[str, str]
) -> AdminVersionOut:
    label = labels.get(version.reviewed_by) if version.reviewed_by else None
    return AdminVersionOut(
        **dict(version_out(version)),
        plugin_key=plugin.plugin_key,
        plugin_name=plugin.name,
        reviewer_label=label,
    )
