"""The upload pipeline, top to bottom: stream → hash + inspect → manifest checks → blob → row.

The request's checks (token, role, ownership) run first in a short transaction that is
committed before the body is read, so no lock or pooled connection is held while up to
100 MiB arrive. The blob is stored before the version row commits (DESIGN invariant 3);
if the row cannot be written, a blob that no row references is deleted again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from fastapi import Request
from pydantic import TypeAdapter, ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.config import Settings
from marketplace.errors import (
    IconTooLarge,
    PackageInvalid,
    PackageTooLarge,
    ValidationFailed,
)
from marketplace.kit.upload import ReceivedUpload, receive_upload
from marketplace.media.icons import icon_data_url
from marketplace.models import Distribution, Plugin, PluginVersion, User
from marketplace.packages.archive import ArchiveInfo, ArchiveLimits, inspect_archive
from marketplace.plugins import service
from marketplace.plugins.lookup import find_plugin
from marketplace.plugins.schemas import Changelog
from marketplace.storage.pipeline import store_then_commit

FILE_REQUIRED = "Plugin package file is required"


def upload_dir(settings: Settings) -> Path:
    path = settings.data_dir / "uploads"
    path.mkdir(parents=True, exist_ok=True)
    return path


async def _receive_package(request: Request, settings: Settings) -> ReceivedUpload:
    limits = ArchiveLimits.for_package(settings.plugin_package_max_bytes)
    upload = await receive_upload(
        request,
        max_file_bytes=settings.plugin_package_max_bytes,
        too_large=PackageTooLarge,
        temp_dir=upload_dir(settings),
        text_fields=("version", "changelog"),
        inspector=functools.partial(inspect_archive, limits=limits),
    )
    if not upload.has_file:
        upload.cleanup()
        raise PackageInvalid(FILE_REQUIRED)
    if upload.inspection_error is not None:
        upload.cleanup()
        raise PackageInvalid(upload.inspection_error)
    return upload


@dataclass(frozen=True)
class Package:
    path: Path
    sha256: str
    size: int
    archive: ArchiveInfo


def _package(upload: ReceivedUpload) -> Package:
    if upload.file_path is None or upload.sha256 is None or upload.inspection is None:
        raise PackageInvalid(FILE_REQUIRED)  # unreachable after _receive_package's checks
    return Package(upload.file_path, upload.sha256, upload.size, upload.inspection)


def _manifest(package: Package) -> dict[str, Any]:
    if package.archive.manifest is None:  # unreachable: plugin inspection requires one
        raise PackageInvalid("manifest.json not found at the package root")
    return package.archive.manifest


_CHANGELOG: TypeAdapter[str] = TypeAdapter(Changelog)


def _changelog(upload: ReceivedUpload) -> str | None:
    """The form field follows create-version's rules for the same text."""
    raw = (upload.fields.get("changelog") or "").strip()
    if not raw:
        return None
    try:
        return _CHANGELOG.validate_python(raw)
    except ValidationError as exc:
        message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise ValidationFailed.field("changelog", message) from None


def _required_version(upload: ReceivedUpload) -> str:
    version = upload.fields.get("version", "").strip()
    if not version:
        raise ValidationFailed.field("version", "field required")
    return version


async def upload_version(
    request: Request,
    session: AsyncSession,
    plugin: Plugin,
    *,
    released_by_admin: User | None,
) -> PluginVersion:
    settings: Settings = request.app.state.settings
    plugin_id = plugin.id
    # Release the checks' transaction (and its lock) before the body streams in.
    await session.commit()
    async with await _receive_package(request, settings) as upload:
        package = _package(upload)
        version = _required_version(upload)
        changelog = _changelog(upload)
        manifest = _manifest(package)
        plugin = await find_plugin(session, plugin_id, lock=True)
        await service.check_manifest(session, plugin, manifest, version)
        if not isinstance(manifest.get("main"), str) or not manifest["main"]:
            raise PackageInvalid(
                "manifest.main is empty: a configuration-only plugin is created with "
                "create-version, not uploaded"
            )

        async def write_version(key: str) -> PluginVersion:
            return await service.add_version(
                session,
                plugin,
                version=version,
                changelog=changelog,
                manifest=manifest,
                distribution=Distribution.TARBALL,
                archive=package.archive,
                sha256=package.sha256,
                size=package.size,
                blob_key=key,
                released_by_admin=released_by_admin,
            )

        row = await store_then_commit(
            request, session, path=package.path, sha256=package.sha256, write_rows=write_version
        )
    return row


async def upload_icon(request: Request, session: AsyncSession, plugin: Plugin) -> Plugin:
    settings: Settings = request.app.state.settings
    plugin_id = plugin.id
    await session.commit()
    upload = await receive_upload(
        request,
        max_file_bytes=settings.icon_max_bytes,
        too_large=IconTooLarge,
        temp_dir=upload_dir(settings),
    )
    async with upload:
        if upload.file_path is None:
            raise ValidationFailed.field("file", "an icon file is required")
        data = await anyio.Path(upload.file_path).read_bytes()
    data_url = icon_data_url(data, max_bytes=settings.icon_max_bytes)
    plugin = await find_plugin(session, plugin_id, lock=True)
    return await service.set_icon(session, plugin, data_url)
