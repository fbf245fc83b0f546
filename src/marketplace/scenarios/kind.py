"""Scenarios as a kind of reviewed item: what the publishing core needs to know."""

from __future__ import annotations

from typing import Any

from pydantic.alias_generators import to_camel
from sqlalchemy.sql.elements import SQLColumnExpression

from marketplace.config import Settings
from marketplace.errors import (
    AppError,
    ScenarioNotFound,
    ScenarioNotOwned,
    ScenarioPackageTooLarge,
    ScenarioValidationFailed,
    ScenarioVersionExists,
)
from marketplace.models import ReviewStatus, Scenario, ScenarioVersion
from marketplace.publishing.kinds import (
    ItemColumns,
    ItemKind,
    ReviewSubject,
    ServedContent,
    VersionColumns,
    package_content,
    string_items,
)

FILE_REQUIRED = "Scenario package file is required"
VERSION_NOT_FOUND = "Scenario version does not exist"


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


class ScenarioKind(ItemKind[Scenario, ScenarioVersion]):
    name = "scenario"
    title = "Scenario"
    item_model = Scenario
    version_model = ScenarioVersion
    items = ItemColumns(
        id=Scenario.id,
        owner_id=Scenario.owner_id,
        review_status=Scenario.review_status,
        created_at=Scenario.created_at,
        search=(Scenario.id, Scenario.name, Scenario.name_zh),
    )
    versions = VersionColumns(
        id=ScenarioVersion.id,
        item_id=ScenarioVersion.scenario_id,
        version=ScenarioVersion.version,
        review_status=ScenarioVersion.review_status,
        is_latest=ScenarioVersion.is_latest,
        created_at=ScenarioVersion.created_at,
        release=ScenarioVersion.release,
        search=(
            ScenarioVersion.version,
            Scenario.id,
            ScenarioVersion.name,
            ScenarioVersion.name_zh,
        ),
    )
    manifest_required = False
    package_too_large = ScenarioPackageTooLarge

    def lookup_column(self, ref: str) -> SQLColumnExpression[str]:
        return Scenario.id  # by id only, case-sensitive as stored

    def key_of(self, item: Scenario) -> str:
        return item.id

    def item_id_of(self, version: ScenarioVersion) -> str:
        return version.scenario_id

    def names(self, ref: str) -> dict[str, str]:
        return {"scenarioId": ref}

    def package_max_bytes(self, settings: Settings) -> int:
        return settings.scenario_package_max_bytes

    def not_found(self) -> AppError:
        return ScenarioNotFound()

    def not_owned(self) -> AppError:
        return ScenarioNotOwned()

    def version_not_found(self) -> AppError:
        return ScenarioNotFound(VERSION_NOT_FOUND)

    def version_exists(self, message: str) -> AppError:
        return ScenarioVersionExists(message)

    def package_invalid(self, message: str) -> AppError:
        return ScenarioValidationFailed(message)

    def file_required(self) -> AppError:
        return ScenarioValidationFailed(
            FILE_REQUIRED, details={"fields": [{"field": "file", "message": "field required"}]}
        )

    def package_missing(self, message: str) -> AppError:
        return ScenarioNotFound(message)

    def after_version_decision(self, item: Scenario, version: ScenarioVersion) -> None:
        """A scenario's reviewStatus is its newest version's, until it is taken down."""
        if version.version == item.version and item.review_status != ReviewStatus.TAKEN_DOWN:
            item.review_status = version.review_status

    def review_subject(
        self, version: ScenarioVersion, package_manifest: dict[str, Any] | None
    ) -> ReviewSubject:
        """The version's metadata (camelCase, unset fields left out) plus its package's
        manifest.json keys as `package.<key>`: kept apart, so a package that disagrees with
        the metadata shows rather than hides behind it. The permissions are both sources'
        together."""
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

    def served_content(self, version: ScenarioVersion) -> ServedContent:
        return package_content(version.sha256, version.size)  # always its package


SCENARIOS = ScenarioKind()
