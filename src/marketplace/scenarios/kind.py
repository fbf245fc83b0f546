"""Scenarios as a kind of reviewed item: what the publishing core needs to know."""

from __future__ import annotations

from typing import Any

from marketplace.config import Settings
from marketplace.errors import (
    ScenarioNotFound,
    ScenarioNotOwned,
    ScenarioPackageTooLarge,
    ScenarioValidationFailed,
    ScenarioVersionExists,
)
from marketplace.models import ReviewStatus, Scenario, ScenarioVersion
from marketplace.publishing.kinds import ItemKind

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
)
