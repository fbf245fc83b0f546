"""ORM rows → response shapes."""

from __future__ import annotations

from marketplace.models import Plugin, PluginVersion
from marketplace.plugins.schemas import (
    AdminPluginOut,
    AdminVersionOut,
    PluginOut,
    VersionOut,
)
from marketplace.publishing.queries import label_of


def plugin_out(plugin: Plugin) -> PluginOut:
    return PluginOut.model_validate(plugin)


def admin_plugin_out(plugin: Plugin, labels: dict[str, str]) -> AdminPluginOut:
    return AdminPluginOut(
        **dict(plugin_out(plugin)), reviewer_label=label_of(labels, plugin.reviewed_by)
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
