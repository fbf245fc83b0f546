"""The kinds of reviewed item the console shows, by the URL segment that names them.

One template serves every kind: the core's `ItemKind` says what the rows are, and this
adds what only a page needs (its path and what to show as the version's manifest).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic.alias_generators import to_camel

from marketplace.errors import NotFound
from marketplace.models import Plugin, PluginVersion, ScenarioVersion
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.kinds import ItemKind
from marketplace.scenarios.kind import SCENARIOS


@dataclass(frozen=True)
class ConsoleKind:
    slug: str  # the URL segment: /console/<slug>/versions/<id>
    kind: ItemKind[Any, Any]
    manifest_title: str
    manifest_of: Callable[[Any], dict[str, Any]]
    item_page: bool  # whether the item itself is reviewed (a page of its own)

    def version_url(self, version_id: str) -> str:
        return f"/console/{self.slug}/versions/{version_id}"

    def item_url(self, item_id: str) -> str | None:
        return f"/console/{self.slug}/{item_id}" if self.item_page else None


def _plugin_manifest(version: PluginVersion) -> dict[str, Any]:
    return dict(version.manifest)


# A scenario version keeps its metadata in columns (its package's manifest.json is
# optional and not stored): show those, by their API names.
_SCENARIO_FIELDS = (
    "version",
    "name",
    "name_zh",
    "description",
    "description_zh",
    "type",
    "category",
    "permissions",
)


def _scenario_metadata(version: ScenarioVersion) -> dict[str, Any]:
    return {to_camel(name): getattr(version, name) for name in _SCENARIO_FIELDS}


PLUGIN_PAGES = ConsoleKind("plugins", PLUGINS, "Manifest", _plugin_manifest, item_page=True)
SCENARIO_PAGES = ConsoleKind(
    "scenarios", SCENARIOS, "Metadata", _scenario_metadata, item_page=False
)
BY_SLUG = {k.slug: k for k in (PLUGIN_PAGES, SCENARIO_PAGES)}


def console_kind(slug: str) -> ConsoleKind:
    found = BY_SLUG.get(slug)
    if found is None:
        raise NotFound("There is no such page in the console")
    return found


def item_title(item: Any) -> str:
    """ "Name (key)" for a plugin, "Name (id)" for a scenario."""
    key = item.plugin_key if isinstance(item, Plugin) else item.id
    return f"{item.name} ({key})"


# Where an audit record's resource is shown in the console, by its resource type.
AUDIT_LINKS = {
    PLUGINS.name: "/console/plugins/{}",
    PLUGINS.version_resource: PLUGIN_PAGES.version_url("{}"),
    SCENARIOS.version_resource: SCENARIO_PAGES.version_url("{}"),
}
