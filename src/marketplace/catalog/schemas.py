"""Public group shapes (CONTRACT 3 and 6): the public plugin view and the list envelopes."""

from __future__ import annotations

import enum
from datetime import datetime
from decimal import Decimal
from typing import Any

from marketplace.kit.schemas import Money, OutputModel
from marketplace.models import (
    Channel,
    Distribution,
    Plugin,
    PluginType,
    PluginVersion,
    ReviewStatus,
    RolloutState,
)
from marketplace.orgs.schemas import OrgRef
from marketplace.publishing.schemas import RolloutOut


class BrowseSort(enum.StrEnum):
    POPULAR = "popular"
    NEWEST = "newest"
    RATING = "rating"
    NAME = "name"
    UPDATED = "updated"


class DeveloperRef(OutputModel):
    id: str
    name: str


class PurchaseStateOut(OutputModel):
    """The caller's standing with a plugin: `active` decides downloads of a paid plugin.

    purchased: a paid purchase exists (expired ones included); active: one is permanent or
    not yet expired; expiresAt: the latest expiry, null when permanent or never bought.
    """

    purchased: bool
    active: bool
    expires_at: datetime | None


class PublicPluginOut(OutputModel):
    """The plugin minus reviewNote, reviewedBy and ownerId, plus developer (the account
    that published it), org (the organization it belongs to, null for a personal plugin)
    and purchase.

    `purchase` is null for an anonymous caller and filled for a logged-in one.
    `ratingAverage` is null until the first rating.
    """

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
    latest_version: str | None
    latest_prerelease: str | None
    download_count: int
    rating_average: Money | None
    rating_count: int
    created_at: datetime
    updated_at: datetime
    developer: DeveloperRef
    org: OrgRef | None
    purchase: PurchaseStateOut | None


class BrowsePage(OutputModel):
    items: list[PublicPluginOut]
    total: int
    page: int
    page_size: int


class PluginItems(OutputModel):
    items: list[PublicPluginOut]


class CategoryCountOut(OutputModel):
    key: str
    name: str
    name_zh: str
    count: int


class CategoryCounts(OutputModel):
    items: list[CategoryCountOut]


class PublicVersionOut(OutputModel):
    """An approved version. The manifest never carries deliverables here: inline code only
    comes with download information, and a paid plugin's `mcp` launch block too."""

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
    created_at: datetime


class VersionItems(OutputModel):
    items: list[PublicVersionOut]


class ReviewOut(OutputModel):
    id: str
    user_name: str
    score: int
    comment: str | None
    created_at: datetime


class ReviewPage(OutputModel):
    items: list[ReviewOut]
    total: int
    page: int
    page_size: int
    average: Money | None
    count: int


def rating_average(rating_sum: int, rating_count: int) -> Decimal | None:
    """Mean score to 2 decimals; None until someone rates."""
    if not rating_count:
        return None
    return (Decimal(rating_sum) / Decimal(rating_count)).quantize(Decimal("0.01"))


def public_plugin(
    plugin: Plugin,
    developer_name: str,
    org: OrgRef | None,
    purchase: PurchaseStateOut | None = None,
) -> PublicPluginOut:
    """The representation of a row read from our own database: built without validation
    (model_construct), as the hottest public reads make dozens per request; the types
    below are the fields' own, and a test checks the result against a validated copy."""
    return PublicPluginOut.model_construct(
        id=plugin.id,
        plugin_key=plugin.plugin_key,
        name=plugin.name,
        name_zh=plugin.name_zh,
        description=plugin.description,
        description_zh=plugin.description_zh,
        type=PluginType(plugin.type),
        category=plugin.category,
        is_free=plugin.is_free,
        price=plugin.price,
        validity_days=plugin.validity_days,
        tags=list(plugin.tags),
        license=plugin.license,
        homepage=plugin.homepage,
        repository=plugin.repository,
        icon=plugin.icon,
        source=plugin.source,
        platforms=list(plugin.platforms),
        featured=plugin.featured,
        enabled=plugin.enabled,
        review_status=ReviewStatus(plugin.review_status),
        latest_version=plugin.latest_version,
        latest_prerelease=plugin.latest_prerelease,
        download_count=plugin.download_count,
        rating_average=rating_average(plugin.rating_sum, plugin.rating_count),
        rating_count=plugin.rating_count,
        created_at=plugin.created_at,
        updated_at=plugin.updated_at,
        developer=DeveloperRef.model_construct(id=plugin.owner_id, name=developer_name),
        org=org,
        purchase=purchase,
    )


# Manifest keys that are the plugin itself rather than a description of it.
_CODE_KEYS = ("inlineCode", "inlineUiCode")


def public_manifest(manifest: dict[str, Any], *, paid: bool) -> dict[str, Any]:
    hidden = (*_CODE_KEYS, "mcp") if paid else _CODE_KEYS
    return {key: value for key, value in manifest.items() if key not in hidden}


def public_version(version: PluginVersion, *, paid: bool) -> PublicVersionOut:
    """As public_plugin: a row of our own, built without validation."""
    return PublicVersionOut.model_construct(
        id=version.id,
        plugin_id=version.plugin_id,
        version=version.version,
        changelog=version.changelog,
        manifest=public_manifest(version.manifest, paid=paid),
        sha256=version.sha256,
        size=version.size,
        distribution=Distribution(version.distribution),
        channel=Channel(version.channel),
        rollout=rollout_out(version),
        is_latest=version.is_latest,
        review_status=ReviewStatus(version.review_status),
        created_at=version.created_at,
    )


def rollout_out(version: PluginVersion) -> RolloutOut:
    return RolloutOut.model_construct(
        percent=version.rollout_percent,
        state=RolloutState(version.rollout_state),
        halted_reason=version.rollout_halted_reason,
        updated_at=version.rollout_updated_at or version.created_at,
    )
