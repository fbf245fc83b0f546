"""Plugins as a kind of reviewed item: what the publishing core needs to know."""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload
from sqlalchemy.sql.elements import ColumnElement, SQLColumnExpression

from marketplace.config import Settings
from marketplace.errors import (
    AppError,
    InternalError,
    PackageInvalid,
    PackageTooLarge,
    PluginNotFound,
    PluginNotOwned,
    VersionExists,
    VersionNotFound,
)
from marketplace.kit.sql import is_row_id, plugin_named
from marketplace.models import (
    Channel,
    Distribution,
    Plugin,
    PluginVersion,
    ReviewStatus,
    RolloutState,
)
from marketplace.packages.manifest import version_sort_key
from marketplace.publishing.kinds import (
    ItemColumns,
    ItemKind,
    ReviewSubject,
    ServedContent,
    VersionColumns,
    package_content,
    string_items,
)
from marketplace_rules.canonical import canonical_json

FILE_REQUIRED = "Plugin package file is required"


class PluginKind(ItemKind[Plugin, PluginVersion]):
    name = "plugin"
    title = "Plugin"
    item_model = Plugin
    version_model = PluginVersion
    items = ItemColumns(
        id=Plugin.id,
        owner_id=Plugin.owner_id,
        review_status=Plugin.review_status,
        created_at=Plugin.created_at,
        search=(Plugin.plugin_key, Plugin.name, Plugin.name_zh),
        org_id=Plugin.org_id,
    )
    versions = VersionColumns(
        id=PluginVersion.id,
        item_id=PluginVersion.plugin_id,
        version=PluginVersion.version,
        review_status=PluginVersion.review_status,
        is_latest=PluginVersion.is_latest,
        created_at=PluginVersion.created_at,
        release=PluginVersion.release,
        search=(PluginVersion.version, Plugin.plugin_key, Plugin.name, Plugin.name_zh),
    )
    manifest_required = True
    package_too_large = PackageTooLarge
    versions_wait_with_item = True
    version_loads = (selectinload(PluginVersion.inspection),)

    def lookup_column(self, ref: str) -> SQLColumnExpression[str]:
        # CONTRACT 3: paths take an id or a pluginKey (keys never look like ids).
        return Plugin.id if is_row_id(ref) else Plugin.plugin_key

    def key_of(self, item: Plugin) -> str:
        return item.plugin_key

    def org_id_of(self, item: Plugin) -> str | None:
        return item.org_id

    def token_key(self, item: Plugin) -> str:
        return item.plugin_key

    def item_id_of(self, version: PluginVersion) -> str:
        return version.plugin_id

    def names(self, ref: str) -> dict[str, str]:
        return plugin_named(ref)

    def package_max_bytes(self, settings: Settings) -> int:
        return settings.plugin_package_max_bytes

    def not_found(self) -> AppError:
        return PluginNotFound()

    def not_owned(self) -> AppError:
        return PluginNotOwned()

    def version_not_found(self) -> AppError:
        return VersionNotFound()

    def version_exists(self, message: str) -> AppError:
        return VersionExists(message)

    def package_invalid(self, message: str) -> AppError:
        return PackageInvalid(message)

    def file_required(self) -> AppError:
        return PackageInvalid(FILE_REQUIRED)

    def package_missing(self, message: str) -> AppError:
        # Invariant 3 says a tarball version always has its blob: refuse rather than guess.
        return InternalError()

    def after_take_down(self, item: Plugin) -> None:
        item.enabled = False  # a taken-down plugin stops being distributed

    def becomes_current(self, version: PluginVersion) -> bool:
        return version.channel == Channel.STABLE

    def may_be_current(self) -> ColumnElement[bool]:
        # A halted rollout is offered to nobody: a takedown never hands over to it.
        return and_(
            PluginVersion.channel == Channel.STABLE.value,
            PluginVersion.rollout_state != RolloutState.HALTED.value,
        )

    async def after_versions_change(self, session: AsyncSession, item: Plugin) -> None:
        """latestPrerelease follows the newest approved prerelease (CONTRACT 16)."""
        rows = await session.scalars(
            select(PluginVersion.version).where(
                PluginVersion.plugin_id == item.id,
                PluginVersion.channel == Channel.PRERELEASE.value,
                PluginVersion.review_status == ReviewStatus.APPROVED.value,
            )
        )
        item.latest_prerelease = max(rows, key=version_sort_key, default=None)

    def review_subject(self, version: PluginVersion, package_manifest: Any) -> ReviewSubject:
        """The stored manifest: the package's own for a tarball (checked equal at upload),
        and the only one a config_only or inline version has."""
        manifest = dict(version.manifest)
        return ReviewSubject(manifest, string_items(manifest.get("permissions")))

    def served_content(self, version: PluginVersion) -> ServedContent:
        """A tarball's package; config_only and inline versions serve their stored manifest
        (`plugins.downloads`), so the record names the canonical JSON of that manifest."""
        if version.distribution == Distribution.TARBALL:
            return package_content(version.sha256, version.size)
        data = canonical_json(version.manifest)
        return ServedContent(version.distribution, hashlib.sha256(data).hexdigest(), len(data))


PLUGINS = PluginKind()
