"""Plugins as a kind of reviewed item: what the publishing core needs to know."""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy.orm import selectinload

from marketplace.config import Settings
from marketplace.errors import (
    InternalError,
    PackageInvalid,
    PackageTooLarge,
    PluginNotFound,
    PluginNotOwned,
    VersionExists,
    VersionNotFound,
)
from marketplace.kit.sql import is_row_id, plugin_named
from marketplace.models import Distribution, Plugin, PluginVersion
from marketplace.publishing.kinds import (
    ItemKind,
    ReviewSubject,
    ServedContent,
    package_content,
    string_items,
)
from marketplace_rules.canonical import canonical_json

FILE_REQUIRED = "Plugin package file is required"


def _lookup_column(ref: str) -> Any:
    # CONTRACT 3: paths take an id or a pluginKey (keys never look like ids).
    return Plugin.id if is_row_id(ref) else Plugin.plugin_key


def _stop_distribution(plugin: Plugin) -> None:
    plugin.enabled = False


def _package_max_bytes(settings: Settings) -> int:
    return settings.plugin_package_max_bytes


def review_subject(version: PluginVersion, _package_manifest: Any) -> ReviewSubject:
    """The stored manifest: the package's own for a tarball (checked equal at upload), and
    the only one a config_only or inline version has."""
    manifest = dict(version.manifest)
    return ReviewSubject(manifest, string_items(manifest.get("permissions")))


def served_content(version: PluginVersion) -> ServedContent:
    """A tarball's package; config_only and inline versions serve their stored manifest
    (`plugins.downloads`), so the record names the canonical JSON of that manifest."""
    if version.distribution == Distribution.TARBALL:
        return package_content(version)
    data = canonical_json(version.manifest)
    return ServedContent(version.distribution, hashlib.sha256(data).hexdigest(), len(data))


PLUGINS = ItemKind(
    name="plugin",
    title="Plugin",
    item_model=Plugin,
    version_model=PluginVersion,
    parent=PluginVersion.plugin_id,
    lookup_column=_lookup_column,
    key_of=lambda plugin: plugin.plugin_key,
    token_key=lambda plugin: plugin.plugin_key,
    not_found=PluginNotFound,
    not_owned=PluginNotOwned,
    names=plugin_named,
    version_not_found=VersionNotFound,
    version_exists=VersionExists,
    package_invalid=PackageInvalid,
    file_required=lambda: PackageInvalid(FILE_REQUIRED),
    # Invariant 3 says a tarball version always has its blob: refuse rather than guess.
    package_missing=lambda _message: InternalError(),
    package_too_large=PackageTooLarge,
    package_max_bytes=_package_max_bytes,
    manifest_required=True,
    item_search=lambda: (Plugin.plugin_key, Plugin.name, Plugin.name_zh),
    version_search=lambda: (PluginVersion.version, Plugin.plugin_key, Plugin.name, Plugin.name_zh),
    versions_wait_with_item=True,
    after_take_down=_stop_distribution,
    review_subject=review_subject,
    served_content=served_content,
    version_loads=(selectinload(PluginVersion.inspection),),
)
