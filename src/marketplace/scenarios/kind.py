"""Scenarios as a kind of reviewed item: what the publishing core needs to know."""

from __future__ import annotations

from typing import Any

from pydantic.alias_generators import to_camel

from marketplace.config import Settings
from marketplace.errors import (
    ScenarioNotFound,
    ScenarioNotOwned,
    ScenarioPackageTooLarge,
    ScenarioValidationFailed,
    ScenarioVersionExists,
)
from marketplace.models import ReviewStatus, Scenario, ScenarioVersion
from marketplace.publishing.kinds import ItemKind, ReviewSubject, string_items

FILE_REQUIRED = "Scenario package file is required"
VERSION_NOT_FOUND = "Scenario version does not exist"


def _lookup_column(_ref: str) -> Any:
    return Scenario.id  # by id only, case-sensitive as stored


def _file_required() -> ScenarioValidationFailed:
    return ScenarioValidationFailed(
        FILE_REQUIRED, details={"fields": [{"field": "file", "message": "field required"}]}
    )


def sync_status(scenario: Scenario, version: ScenarioVersion) -> None:
    """A scenario's reviewStatus is its newest version's, until it is taken down."""
    if version.version == scenario.version and scenario.review_status != ReviewStatus.TAKEN_DOWN:
        scenario.review_status = version.review_status


def _package_max_bytes(settings: Settings) -> int:
    return settings.scenario_package_max_bytes


# The version's metadata a reviewer compares, by API name; the changelog describes the
# change rather than the scenario, so it is left out (`marketplace review show` prints it).
REVIEWED_METADATA = (
    "version",
    "name",
    "name_zh",
    "description",
    "description_zh",
    "type",
    "category",
    "permissions",
)
PACKAGE_KEY_PREFIX = "package."


def review_subject(
    version: ScenarioVersion, package_manifest: dict[str, Any] | None
) -> ReviewSubject:
    """The version's metadata (camelCase, unset fields left out) plus its package's
    manifest.json keys as `package.<key>`: kept apart, so a package that disagrees with the
    metadata shows rather than hides behind it. The permissions are both sources' together.
    """
    manifest: dict[str, Any] = {}
    for name in REVIEWED_METADATA:
        value = getattr(version, name)
        if value is not None:
            manifest[to_camel(name)] = value
    package = package_manifest or {}
    for key, value in package.items():
        manifest[PACKAGE_KEY_PREFIX + key] = value
    permissions = string_items(version.permissions) | string_items(package.get("permissions"))
    return ReviewSubject(manifest, permissions)


SCENARIOS = ItemKind(
    name="scenario",
    title="Scenario",
    item_model=Scenario,
    version_model=ScenarioVersion,
    parent=ScenarioVersion.scenario_id,
    lookup_column=_lookup_column,
    key_of=lambda scenario: scenario.id,
    not_found=ScenarioNotFound,
    not_owned=ScenarioNotOwned,
    names=lambda ref: {"scenarioId": ref},
    version_not_found=lambda: ScenarioNotFound(VERSION_NOT_FOUND),
    version_exists=ScenarioVersionExists,
    package_invalid=ScenarioValidationFailed,
    file_required=_file_required,
    package_missing=ScenarioNotFound,
    package_too_large=ScenarioPackageTooLarge,
    package_max_bytes=_package_max_bytes,
    manifest_required=False,
    item_search=lambda: (Scenario.id, Scenario.name, Scenario.name_zh),
    version_search=lambda: (
        ScenarioVersion.version,
        Scenario.id,
        ScenarioVersion.name,
        ScenarioVersion.name_zh,
    ),
    after_version_decision=sync_status,
    review_subject=review_subject,
)
