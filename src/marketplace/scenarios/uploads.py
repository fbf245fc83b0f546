"""The scenario package upload on the core's pipeline (marketplace.publishing.uploads):
the package of an existing pending version (form field `version`, default the newest)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request

from marketplace.config import Settings
from marketplace.errors import InvalidState, ScenarioValidationFailed
from marketplace.models import ReviewStatus, Scenario, ScenarioVersion
from marketplace.packages.manifest import parse_version
from marketplace.publishing import queries
from marketplace.publishing.findings import settle
from marketplace.publishing.uploads import (
    Package,
    RowWriter,
    package_of,
    receive_package,
    refuse_leaked_tokens,
    store_package,
)
from marketplace.scenarios import service
from marketplace.scenarios.kind import SCENARIOS
from marketplace.storage.base import BlobStore


async def upload_package(
    request: Request,
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    store: BlobStore,
    scenario_id: str,
) -> ScenarioVersion:
    """Attach a package to a pending version (the `version` field, default the newest)."""
    async with await receive_package(
        request, SCENARIOS, settings, text_fields=("version",)
    ) as upload:
        package = package_of(SCENARIOS, upload)
        await refuse_leaked_tokens(sessions, SCENARIOS, package)
        check = functools.partial(_check, package)
        return await store_package(sessions, store, SCENARIOS, scenario_id, package, check)


async def _check(
    package: Package, session: AsyncSession, scenario: Scenario
) -> RowWriter[ScenarioVersion]:
    version = await _target_version(session, scenario, package.fields.get("version"))
    check_manifest_agrees(package.archive.manifest, scenario.id, version.version)
    _check_accepts_package(scenario, version)
    # The package's findings replace the version's: they cover its metadata again.
    findings = await service.version_findings(session, version, package.archive)

    async def attach(key: str) -> ScenarioVersion:
        version.sha256, version.size, version.blob_key = package.sha256, package.size, key
        if version.version == scenario.version:
            service.mirror_newest(scenario, version)
        await session.flush()
        await settle(session, SCENARIOS, scenario, version, findings)
        return version

    return attach


async def _target_version(
    session: AsyncSession, scenario: Scenario, requested: str | None
) -> ScenarioVersion:
    """The version named by the form's `version` field, or the newest one."""
    wanted = requested or scenario.version  # as sent: the form documents the semver pattern
    try:
        parse_version(wanted)
    except ValueError as exc:
        raise ScenarioValidationFailed.field("version", str(exc)) from None
    for row in await queries.versions_of(session, SCENARIOS, scenario.id):
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
