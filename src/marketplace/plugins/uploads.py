"""Plugin package and icon uploads on the core's pipeline (marketplace.publishing.uploads):
the form streams in outside any transaction; one transaction then locks the plugin, runs
the manifest checks, stores the blob and writes the version with its audit record."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import TypeAdapter, ValidationError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request

from marketplace.config import Settings
from marketplace.errors import IconTooLarge, PackageInvalid, ValidationFailed
from marketplace.kit.upload import receive_upload
from marketplace.media.icons import icon_data_url
from marketplace.models import Channel, Distribution, Plugin, PluginVersion, User
from marketplace.plugins import service
from marketplace.plugins.kind import PLUGINS
from marketplace.plugins.schemas import Changelog
from marketplace.publishing.lookup import check_owner, find_item
from marketplace.publishing.uploads import (
    Package,
    RowWriter,
    package_of,
    receive_package,
    refuse_leaked_tokens,
    store_package,
    upload_dir,
)
from marketplace.storage.base import BlobStore
from marketplace.trust.keyring import Keyring
from marketplace_rules.text import is_blank, trimmed

_CHANGELOG: TypeAdapter[str] = TypeAdapter(Changelog)
NO_MAIN = (
    "manifest.main is empty: a configuration-only plugin is created with create-version, "
    "not uploaded"
)


def _changelog(fields: dict[str, str]) -> str | None:
    """The form field follows create-version's rules for the same text: checked as sent,
    stored trimmed (kit.schemas.InputModel)."""
    raw = fields.get("changelog") or ""
    if is_blank(raw):
        return None
    try:
        return trimmed(_CHANGELOG.validate_python(raw))
    except ValidationError as exc:
        message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise ValidationFailed.field("changelog", message) from None


def _channel(fields: dict[str, str]) -> Channel:
    raw = fields.get("channel") or Channel.STABLE.value
    try:
        return Channel(raw)
    except ValueError:
        allowed = ", ".join(channel.value for channel in Channel)
        raise ValidationFailed.field("channel", f"must be one of: {allowed}") from None


def _required_version(fields: dict[str, str]) -> str:
    # As sent: the form documents the semver pattern, which has no surrounding spaces.
    version = fields.get("version", "")
    if not version:
        raise ValidationFailed.field("version", "field required")
    return version


@dataclass(frozen=True)
class NewPluginVersion:
    """A new version made from the package (the core's check-then-write step)."""

    package: Package
    version: str
    changelog: str | None
    channel: Channel
    released_by_admin: User | None
    keyring: Keyring | None  # signs the release of a version an admin approves at once

    @property
    def manifest(self) -> dict[str, Any]:
        if self.package.archive.manifest is None:  # unreachable: plugins require one
            raise PackageInvalid("manifest.json not found at the package root")
        return self.package.archive.manifest

    async def check(self, session: AsyncSession, plugin: Plugin) -> RowWriter[PluginVersion]:
        """The manifest checks under the plugin's lock; then the version row's writer."""
        await service.check_manifest(session, plugin, self.manifest, self.version)
        main = self.manifest.get("main")
        if not isinstance(main, str) or not main:
            raise PackageInvalid(NO_MAIN)
        return functools.partial(self.write, session, plugin)

    async def write(self, session: AsyncSession, plugin: Plugin, key: str) -> PluginVersion:
        return await service.add_version(
            session,
            plugin,
            version=self.version,
            changelog=self.changelog,
            manifest=self.manifest,
            distribution=Distribution.TARBALL,
            archive=self.package.archive,
            sha256=self.package.sha256,
            size=self.package.size,
            blob_key=key,
            channel=self.channel,
            released_by_admin=self.released_by_admin,
            keyring=self.keyring,
        )


async def upload_version(
    request: Request,
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    store: BlobStore,
    plugin_id: str,
    *,
    released_by_admin: User | None,
    operator: User | None = None,
    keyring: Keyring | None = None,
) -> PluginVersion:
    """Receive a package and make it a new (pending, or for an admin released) version.
    `operator`: the developer whose rights are checked again once the body arrived."""
    async with await receive_package(
        request, PLUGINS, settings, text_fields=("version", "changelog", "channel")
    ) as upload:
        package = package_of(PLUGINS, upload)
        await refuse_leaked_tokens(sessions, PLUGINS, package)
        plan = NewPluginVersion(
            package,
            _required_version(upload.fields),
            _changelog(upload.fields),
            _channel(upload.fields),
            released_by_admin,
            keyring,
        )
        return await store_package(
            sessions, store, PLUGINS, plugin_id, package, plan.check, operator=operator
        )


async def upload_icon(
    request: Request,
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    plugin_id: str,
    *,
    operator: User | None = None,
) -> Plugin:
    async with await receive_upload(
        request,
        max_file_bytes=settings.icon_max_bytes,
        too_large=IconTooLarge,
        temp_dir=upload_dir(settings),
    ) as upload:
        if upload.file_path is None:
            raise ValidationFailed.field("file", "an icon file is required")
        data = await anyio.Path(upload.file_path).read_bytes()
    data_url = icon_data_url(data, max_bytes=settings.icon_max_bytes)
    async with sessions.begin() as session:
        plugin = await find_item(session, PLUGINS, plugin_id, lock=True)
        if operator is not None:  # still theirs once the body arrived (see store_package)
            await check_owner(session, PLUGINS, plugin, operator)
        return await service.set_icon(session, plugin, data_url)
