"""Plugin, version, category and audit shapes for the developer and admin groups."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    Strict,
    StrictBool,
    field_validator,
    model_validator,
)

from marketplace.inspection.schemas import InspectionOut, inspection_out
from marketplace.kit.jsonsafe import check_json_safe
from marketplace.kit.schemas import (
    INTEGRAL_FLOATS,
    InputModel,
    Money,
    MoneyIn,
    OutputModel,
    RequiredText,
    SafeText,
    never_null_schema,
)
from marketplace.models import Channel, Distribution, PluginInspection, PluginType, ReviewStatus
from marketplace.orgs.schemas import OrgRef, OrgSlug
from marketplace.packages.manifest import is_valid_plugin_key
from marketplace.publishing.schemas import FindingOut, RolloutOut, StatusCounts
from marketplace_rules.limits import PLUGIN_KEY_MAX_LENGTH, PLUGIN_KEY_MIN_LENGTH
from marketplace_rules.manifest import manifest_json_schema, plugin_key_exclusions
from marketplace_rules.versions import SEMVER_PATTERN, version_problem
from marketplace_rules.vocabulary import PLUGIN_KEY_PATTERN, RESERVED_KEYS


def _plugin_key(value: str) -> str:
    # Also refuses UUID-shaped keys: paths accept an id or a pluginKey.
    if value in RESERVED_KEYS:
        raise ValueError(f'"{value}" is reserved: a path of the API has that name')
    if not is_valid_plugin_key(value):
        raise ValueError(
            "must be 3-64 lowercase letters, digits and hyphens, start with a letter, "
            "and not look like a UUID"
        )
    return value


PluginKey = Annotated[
    str,
    AfterValidator(_plugin_key),
    Field(
        json_schema_extra={
            "pattern": f"^{PLUGIN_KEY_PATTERN.pattern}$",
            "minLength": PLUGIN_KEY_MIN_LENGTH,
            "maxLength": PLUGIN_KEY_MAX_LENGTH,
            "not": plugin_key_exclusions(),
        }
    ),
]
Title = Annotated[RequiredText, Field(min_length=1, max_length=200)]
# The categories table holds 100 characters a name (a longer one was a 500 on PostgreSQL).
CategoryName = Annotated[RequiredText, Field(min_length=1, max_length=100)]
Description = Annotated[RequiredText, Field(min_length=1, max_length=20_000)]
OptionalShort = Annotated[SafeText, Field(max_length=500)] | None
Tag = Annotated[RequiredText, Field(min_length=1, max_length=50)]
Tags = Annotated[list[Tag], Field(max_length=30)]
Platform = Literal["darwin", "win32", "linux"]
Platforms = Annotated[list[Platform], Field(max_length=3)]
# The shape every category key has (CategoryIn); whether it exists is the server's answer.
CATEGORY_KEY_PATTERN = r"^[a-z][a-z0-9-]*$"
CategoryKey = Annotated[str, Field(min_length=1, max_length=64, pattern=CATEGORY_KEY_PATTERN)]
ValidityDays = Annotated[int, Strict(), Field(ge=0, le=36_500), INTEGRAL_FLOATS]
VERSION_MAX_CHARS = 100
CHANGELOG_MAX_CHARS = 20_000


def _version_text(value: str) -> str:
    # As sent: the documented pattern has no room for spaces around the version.
    problem = version_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


VersionText = Annotated[
    str,
    Field(
        min_length=1, max_length=VERSION_MAX_CHARS, json_schema_extra={"pattern": SEMVER_PATTERN}
    ),
    AfterValidator(_version_text),
]
Note = Annotated[SafeText, Field(max_length=5000)]
SortOrder = Annotated[int, Strict(), Field(ge=-1_000_000, le=1_000_000), INTEGRAL_FLOATS]


# ---------- outputs ----------


class PluginOut(OutputModel):
    id: str
    plugin_key: str
    name: str
    name_zh: str
    description: str
    description_zh: str
    type: PluginType
    category: str
    is_free: bool
    price: Money
    validity_days: int | None
    tags: list[str]
    license: str | None
    homepage: str | None
    repository: str | None
    icon: str | None
    source: str
    platforms: list[str]
    featured: bool
    enabled: bool
    review_status: ReviewStatus
    review_note: str | None
    reviewed_by: str | None
    latest_version: str | None
    latest_prerelease: str | None
    download_count: int
    rating_average: Money | None
    rating_count: int
    owner_id: str
    created_at: datetime
    updated_at: datetime
    org: OrgRef | None


class AdminPluginOut(PluginOut):
    reviewer_label: str | None


class VersionOut(OutputModel):
    id: str
    plugin_id: str
    version: str
    changelog: str | None
    manifest: dict[str, Any]
    sha256: str | None
    size: int | None
    distribution: Distribution
    channel: Channel
    rollout: RolloutOut
    is_latest: bool
    review_status: ReviewStatus
    review_note: str | None
    reviewed_by: str | None
    created_at: datetime
    findings: list[FindingOut]
    inspection: InspectionOut

    @field_validator("inspection", mode="before")
    @classmethod
    def _inspection_of_row(cls, value: Any) -> Any:
        # From the ORM: the version's inspection row (None: not applicable).
        if value is None or isinstance(value, PluginInspection):
            return inspection_out(value)
        return value


class AdminVersionOut(VersionOut):
    plugin_key: str
    plugin_name: str
    reviewer_label: str | None


class PurchaseSummary(OutputModel):
    id: str
    user_id: str
    price: Money
    purchased_at: datetime
    expires_at: datetime | None


class DeveloperPluginDetail(PluginOut):
    versions: list[VersionOut]
    recent_purchases: list[PurchaseSummary]


class DeveloperPluginList(OutputModel):
    items: list[PluginOut]
    total: int
    page: int
    page_size: int


class AdminPluginList(OutputModel):
    items: list[AdminPluginOut]
    total: int
    page: int
    limit: int
    counts: StatusCounts


class AdminVersionList(OutputModel):
    items: list[AdminVersionOut]
    total: int
    page: int
    limit: int
    counts: StatusCounts


class VersionItems(OutputModel):
    items: list[VersionOut]


class TakedownOut(OutputModel):
    id: str
    review_status: ReviewStatus


class DeletedOut(OutputModel):
    id: str
    deleted: bool


class CategoryOut(OutputModel):
    key: str
    name: str
    name_zh: str
    sort_order: int


class CategoryItems(OutputModel):
    items: list[CategoryOut]


class PublicCategoryOut(OutputModel):
    key: str
    name: str
    name_zh: str
    count: int


class PublicCategoryItems(OutputModel):
    items: list[PublicCategoryOut]


# ---------- inputs ----------


def _price_rule(is_free: bool, price: Decimal) -> None:
    if is_free and price > 0:
        raise ValueError("isFree is true but price is greater than 0")
    if not is_free and price <= 0:
        raise ValueError("price must be greater than 0 when isFree is false")


# The same rule for OpenAPI readers and generators: isFree (true when left out) means price
# 0; isFree false needs a price above 0.
PRICE_RULE_SCHEMA: dict[str, Any] = {
    "allOf": [
        {
            "if": {"properties": {"isFree": {"const": False}}, "required": ["isFree"]},
            "then": {"required": ["price"], "properties": {"price": {"exclusiveMinimum": 0}}},
            "else": {"properties": {"price": {"maximum": 0}}},
        }
    ]
}


def _publish_schema(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    never_null_schema(schema, cls)
    schema.update(PRICE_RULE_SCHEMA)


class PluginFieldsIn(InputModel):
    """What a developer's publish and an administrator's creation both send."""

    plugin_key: PluginKey
    name: Title
    name_zh: Title
    description: Description
    description_zh: Description
    type: PluginType
    category: CategoryKey = "productivity"
    is_free: StrictBool = True
    price: MoneyIn = Field(default=Decimal("0"), json_schema_extra={"default": 0})
    validity_days: ValidityDays | None = None
    tags: Tags = Field(default_factory=list)
    license: Annotated[SafeText, Field(max_length=100)] | None = None
    homepage: OptionalShort = None
    repository: OptionalShort = None

    model_config = InputModel.model_config | {"json_schema_extra": _publish_schema}

    @model_validator(mode="after")
    def _check_price(self) -> PluginFieldsIn:
        _price_rule(self.is_free, self.price)
        return self


class PublishIn(PluginFieldsIn):
    # The organization the plugin belongs to (CONTRACT 17); the caller must be a member.
    org: OrgSlug | None = None


class AdminCreateIn(PluginFieldsIn):
    icon: Annotated[SafeText, Field(max_length=200)] | None = None
    source: Annotated[RequiredText, Field(min_length=1, max_length=50)] = "official"
    platforms: Platforms = Field(default_factory=list)
    featured: StrictBool = False


def _refuse_null(value: Any) -> Any:
    if value is None:
        raise ValueError("cannot be null")
    return value


class DeveloperUpdateIn(InputModel):
    name: Title | None = None
    name_zh: Title | None = None
    description: Description | None = None
    description_zh: Description | None = None
    category: CategoryKey | None = None
    tags: Tags | None = None
    license: Annotated[SafeText, Field(max_length=100)] | None = None
    homepage: OptionalShort = None
    repository: OptionalShort = None
    platforms: Platforms | None = None

    never_null: ClassVar[tuple[str, ...]] = (
        "name",
        "name_zh",
        "description",
        "description_zh",
        "category",
        "tags",
        "platforms",
    )

    # Optional to send, but never cleared (license, homepage and repository may be null).
    @field_validator(
        "name", "name_zh", "description", "description_zh", "category", "tags", "platforms"
    )
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        return _refuse_null(value)


class AdminUpdateIn(DeveloperUpdateIn):
    featured: StrictBool | None = None
    enabled: StrictBool | None = None
    icon: Annotated[SafeText, Field(max_length=200)] | None = None

    never_null: ClassVar[tuple[str, ...]] = (*DeveloperUpdateIn.never_null, "featured", "enabled")

    @field_validator("featured", "enabled")
    @classmethod
    def _flags_not_null(cls, value: Any) -> Any:
        return _refuse_null(value)


def _price_schema(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    # A free plugin (price 0) has no validity period.
    schema["allOf"] = [
        {
            "if": {"properties": {"price": {"const": 0}}, "required": ["price"]},
            "then": {"properties": {"validityDays": {"enum": [None, 0]}}},
        }
    ]


class PriceIn(InputModel):
    price: MoneyIn
    validity_days: ValidityDays | None = None

    model_config = InputModel.model_config | {"json_schema_extra": _price_schema}

    @model_validator(mode="after")
    def _validity_only_when_paid(self) -> PriceIn:
        if self.price == 0 and self.validity_days:
            raise ValueError("validityDays applies to paid plugins only")
        return self


class PluginReviewIn(InputModel):
    approved: StrictBool
    review_note: Note | None = None
    approve_pending_version: StrictBool | None = None


def _json_safe(manifest: dict[str, Any]) -> dict[str, Any]:
    check_json_safe(manifest)
    return manifest


Changelog = Annotated[SafeText, Field(max_length=CHANGELOG_MAX_CHARS)]


class CreateVersionIn(InputModel):
    version: VersionText
    changelog: Changelog | None = None
    channel: Channel = Channel.STABLE
    manifest: Annotated[
        dict[str, Any],
        AfterValidator(_json_safe),
        Field(json_schema_extra=manifest_json_schema()),
    ]


class CategoryIn(InputModel):
    key: Annotated[str, Field(min_length=2, max_length=64, pattern=CATEGORY_KEY_PATTERN)]
    name: CategoryName
    name_zh: CategoryName
    sort_order: SortOrder = 0


class CategoryUpdateIn(InputModel):
    name: CategoryName | None = None
    name_zh: CategoryName | None = None
    sort_order: SortOrder | None = None
