"""The scenario package upload, top to bottom, on the plugin pipeline's parts:
stream → hash + inspect → which version → manifest agreement → state → blob → row.

The checks' transaction is committed before the body is read; the archive is inspected
while it arrives, with the plugin packages' safety rules; the blob is stored before the
version row points at it, and removed again if that row cannot be written.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.config import Settings
from marketplace.errors import InvalidState, ScenarioPackageTooLarge, ScenarioValidationFailed
from marketplace.kit.upload import ReceivedUpload, receive_upload
from marketplace.models import ReviewStatus, Scenario, ScenarioVersion
from marketplace.packages.archive import ArchiveLimits, inspect_archive
from marketplace.packages.manifest import parse_version
from marketplace.plugins.uploads import upload_dir
from marketplace.scenarios import service
from marketplace.scenarios.lookup import find_scenario
from marketplace.storage.pipeline import store_then_commit

FILE_REQUIRED = "Scenario package file is required"


async def upload_package(
    request: Request, session: AsyncSession, scenario: Scenario
) -> ScenarioVersion:
    """Attach a package to a pending version (the `version` field, default the newest)."""
    settings: Settings = request.app.state.settings
    scenario_id = scenario.id
    # Release the checks' transaction (and its lock) before the body streams in.
    await session.commit()
    async with await _receive_package(request, settings) as upload:
        if upload.file_path is None or upload.sha256 is None or upload.inspection is None:
            raise _file_required()  # unreachable after _receive_package's checks
        path, sha256, size = upload.file_path, upload.sha256, upload.size
        scenario = await find_scenario(session, scenario_id, lock=True)
        version = await _target_version(session, scenario, upload.fields.get("version"))
        check_manifest_agrees(upload.inspection.manifest, scenario.id, version.version)
        _check_accepts_package(scenario, version)

        async def attach(key: str) -> ScenarioVersion:
            version.sha256, version.size, version.blob_key = sha256, size, key
            if version.version == scenario.version:
                service.mirror_newest(scenario, version)
            await session.flush()
            return version

        return await store_then_commit(
            request, session, path=path, sha256=sha256, write_rows=attach
        )


async def _receive_package(request: Request, settings: Settings) -> ReceivedUpload:
    limit = settings.scenario_package_max_bytes
    inspector = functools.partial(
        inspect_archive, limits=ArchiveLimits.for_package(limit), require_manifest=False
    )
    upload = await receive_upload(
        request,
        max_file_bytes=limit,
        too_large=ScenarioPackageTooLarge,
        temp_dir=upload_dir(settings),
        text_fields=("version",),
        inspector=inspector,
    )
    if not upload.has_file:
        upload.cleanup()
        raise _file_required()
    if upload.inspection_error is not None:
        upload.cleanup()
        raise ScenarioValidationFailed(upload.inspection_error)
    return upload


def _file_required() -> ScenarioValidationFailed:
    return ScenarioValidationFailed(
        FILE_REQUIRED, details={"fields": [{"field": "file", "message": "field required"}]}
    )


async def _target_version(
    session: AsyncSession, scenario: Scenario, requested: str | None
) -> ScenarioVersion:
    """The version named by the form's `version` field, or the newest one."""
    wanted = (requested or "").strip() or scenario.version
    try:
        parse_version(wanted)
    except ValueError as exc:
        raise ScenarioValidationFailed.field("version", str(exc)) from None
    for row in await service.versions_of(session, scenario.id):
        if row.version == wanted:
            return row
    raise ScenarioValidationFailed.field(
        "version", f"{wanted} is not a version of {scenario.id}; publish it first"
    )


def check_manifest_agrees(
    manifest: Mapping[str, Any] | None, scenario_id: str, version: str
) -> None:
    """A package need not have a manifest.json; one it has must name this id and version."""
    if manifest is None:
        return
    if manifest.get("id") != scenario_id:
        raise ScenarioValidationFailed.field("manifest.id", "does not match the scenario id")
    if manifest.get("version") != version:
        raise ScenarioValidationFailed.field(
            "manifest.version", "does not match the requested version"
        )


def _check_accepts_package(scenario: Scenario, version: ScenarioVersion) -> None:
    # The package is what the reviewer approves: it is set once, while the version is pending.
    service.check_not_taken_down(scenario)
    if version.review_status != ReviewStatus.PENDING:
        raise InvalidState(
            f"Version {version.version} is {version.review_status}; only a pending version "
            "takes a package (publish a new version)"
        )
    if version.blob_key is not None:
        raise InvalidState(
            f"Version {version.version} already has a package (publish a new version)"
        )
