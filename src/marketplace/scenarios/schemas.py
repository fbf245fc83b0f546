"""Scenario and scenario-version shapes (CONTRACT 8)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from marketplace.kit.schemas import InputModel, OutputModel, RequiredText, SafeText
from marketplace.models import ReviewStatus
from marketplace.packages.manifest import is_valid_plugin_key, parse_version
from marketplace.publishing.schemas import FindingOut, StatusCounts
from marketplace.trust.schemas import ReleaseRecord
from marketplace_rules.limits import PLUGIN_KEY_MAX_LENGTH, PLUGIN_KEY_MIN_LENGTH
from marketplace_rules.manifest import plugin_key_exclusions
from marketplace_rules.versions import SEMVER_PATTERN
from marketplace_rules.vocabulary import PLUGIN_KEY_PATTERN, RESERVED_KEYS

# Words the paths use; an id spelled so would be unreachable (the plugin key's own rule).
RESERVED_IDS = RESERVED_KEYS
TYPE_PATTERN = r"^[a-z]+(-[a-z]+)*$"


def is_valid_scenario_id(value: object) -> bool:
    """The pluginKey rule (3-64, ^[a-z][a-z0-9-]*$, not UUID-shaped), minus reserved words."""
    return is_valid_plugin_key(value) and value not in RESERVED_IDS


def _scenario_id(value: str) -> str:
    if value in RESERVED_IDS:
        raise ValueError(f'"{value}" is reserved')
    if not is_valid_plugin_key(value):
        raise ValueError(
            "must be 3-64 lowercase letters, digits and hyphens, start with a letter, "
            "and not look like a UUID"
        )
    return value


def _semver(value: str) -> str:
    parse_version(value)  # ValueError says what is wrong
    return value


# The documents say what the validators check: a plugin key's shape, not a UUID, not a word
# of the paths; a semver version.
ScenarioId = Annotated[
    str,
    AfterValidator(_scenario_id),
    Field(
        json_schema_extra={
            "pattern": f"^{PLUGIN_KEY_PATTERN.pattern}$",
            "minLength": PLUGIN_KEY_MIN_LENGTH,
            "maxLength": PLUGIN_KEY_MAX_LENGTH,
            "not": plugin_key_exclusions(),
        }
    ),
]
SemVer = Annotated[
    str,
    Field(min_length=1, max_length=100, json_schema_extra={"pattern": SEMVER_PATTERN}),
    AfterValidator(_semver),
]
Title = Annotated[RequiredText, Field(min_length=1, max_length=200)]
Description = Annotated[RequiredText, Field(min_length=1, max_length=20_000)]
Changelog = Annotated[SafeText, Field(max_length=20_000)]
ScenarioType = Annotated[
    str, Field(min_length=1, max_length=32, pattern=TYPE_PATTERN, examples=["programmatic"])
]
CategoryKey = Annotated[str, Field(min_length=1, max_length=64, examples=["development"])]
Permission = Annotated[
    RequiredText, Field(min_length=1, max_length=100, examples=["filesystem:read"])
]
Permissions = Annotated[list[Permission], Field(max_length=50)]


# ---------- inputs ----------


class ScenarioPublishIn(InputModel):
    """A new scenario, or a new version of one the caller owns.

    For a new version, nameZh, description and descriptionZh that are left out keep the
    scenario's current values; permissions and changelog belong to the version alone.
    """

    id: ScenarioId
    version: SemVer
    name: Title
    name_zh: Title | None = None
    description: Description | None = None
    description_zh: Description | None = None
    type: ScenarioType
    category: CategoryKey
    permissions: Permissions = Field(default_factory=list)
    changelog: Changelog | None = None


class ScenarioUpdateIn(InputModel):
    """Metadata of the newest version; type and permissions change only with a new version."""

    name: Title | None = None
    name_zh: Title | None = None
    description: Description | None = None
    description_zh: Description | None = None
    category: CategoryKey | None = None
    changelog: Changelog | None = None

    never_null = ("name", "category")

    @model_validator(mode="after")
    def _no_null_required(self) -> ScenarioUpdateIn:
        for name in ("name", "category"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self


# ---------- outputs ----------


class ScenarioOut(OutputModel):
    """A scenario as its owner and administrators see it: its newest version, any state."""

    id: str
    version: str
    name: str
    name_zh: str | None
    description: str | None
    description_zh: str | None
    type: str
    category: str
    permissions: list[str]
    changelog: str | None
    review_status: ReviewStatus
    sha256: str | None
    size: int | None
    owner_id: str
    created_at: datetime
    updated_at: datetime


class ScenarioVersionOut(OutputModel):
    id: str
    scenario_id: str
    version: str
    name: str
    name_zh: str | None
    description: str | None
    description_zh: str | None
    type: str
    category: str
    permissions: list[str]
    changelog: str | None
    sha256: str | None
    size: int | None
    is_latest: bool
    review_status: ReviewStatus
    review_note: str | None
    reviewed_by: str | None
    created_at: datetime
    findings: list[FindingOut]


class AdminScenarioVersionOut(ScenarioVersionOut):
    scenario_name: str
    reviewer_label: str | None


class ScenarioDetail(ScenarioOut):
    versions: list[ScenarioVersionOut]


class DeveloperScenarioList(OutputModel):
    items: list[ScenarioOut]
    total: int
    page: int
    page_size: int


class AdminScenarioList(OutputModel):
    items: list[ScenarioOut]
    total: int
    page: int
    limit: int
    counts: StatusCounts


class AdminScenarioVersionList(OutputModel):
    items: list[AdminScenarioVersionOut]
    total: int
    page: int
    limit: int
    counts: StatusCounts


class ScenarioVersionItems(OutputModel):
    items: list[ScenarioVersionOut]


class DeveloperRef(OutputModel):
    id: str
    name: str


class PublicScenarioOut(OutputModel):
    """The public view: the newest approved version; no owner id, the developer's name."""

    id: str
    version: str
    name: str
    name_zh: str | None
    description: str | None
    description_zh: str | None
    type: str
    category: str
    permissions: list[str]
    changelog: str | None
    review_status: ReviewStatus
    sha256: str | None
    size: int | None
    developer: DeveloperRef
    created_at: datetime
    updated_at: datetime


class PublicScenarioList(OutputModel):
    items: list[PublicScenarioOut]
    total: int
    page: int
    page_size: int


class ScenarioDownloadOut(OutputModel):
    url: str
    sha256: str
    size: int
    expires_at: datetime
    version: str
    # The signed release record (CONTRACT 11); null for a version never approved.
    release: ReleaseRecord | None


class ScenarioTakedownOut(OutputModel):
    id: str
    review_status: ReviewStatus
