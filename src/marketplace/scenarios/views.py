"""ORM rows → scenario response shapes, and download information."""

from __future__ import annotations

from marketplace.models import Scenario, ScenarioVersion
from marketplace.publishing.downloads import PresignedUrls, package_link
from marketplace.publishing.queries import label_of
from marketplace.scenarios.kind import SCENARIOS
from marketplace.scenarios.schemas import (
    AdminScenarioVersionOut,
    DeveloperRef,
    PublicScenarioOut,
    ScenarioDetail,
    ScenarioDownloadOut,
    ScenarioOut,
    ScenarioVersionOut,
)
from marketplace.trust.schemas import ReleaseRecord


def scenario_out(scenario: Scenario) -> ScenarioOut:
    return ScenarioOut.model_validate(scenario)


def scenario_detail(scenario: Scenario, versions: list[ScenarioVersion]) -> ScenarioDetail:
    return ScenarioDetail(
        **dict(scenario_out(scenario)), versions=[version_out(v) for v in versions]
    )


def version_out(version: ScenarioVersion) -> ScenarioVersionOut:
    return ScenarioVersionOut.model_validate(version)


def admin_version_out(
    version: ScenarioVersion, scenario: Scenario, labels: dict[str, str]
) -> AdminScenarioVersionOut:
    return AdminScenarioVersionOut(
        **dict(version_out(version)),
        scenario_name=scenario.name,
        reviewer_label=label_of(labels, version.reviewed_by),
    )


def public_out(
    scenario: Scenario, current: ScenarioVersion, owner_id: str, owner_name: str
) -> PublicScenarioOut:
    """The newest approved version's metadata under the scenario's id and dates."""
    return PublicScenarioOut(
        id=scenario.id,
        version=current.version,
        name=current.name,
        name_zh=current.name_zh,
        description=current.description,
        description_zh=current.description_zh,
        type=current.type,
        category=current.category,
        permissions=current.permissions,
        changelog=current.changelog,
        review_status=current.review_status,
        sha256=current.sha256,
        size=current.size,
        developer=DeveloperRef(id=owner_id, name=owner_name),
        created_at=scenario.created_at,
        updated_at=scenario.updated_at,
    )


async def download_info(
    store: PresignedUrls,
    expires_in: int,
    scenario: Scenario,
    version: ScenarioVersion,
    release: ReleaseRecord | None,
) -> ScenarioDownloadOut:
    """A presigned URL for the version's package, with its SHA-256, size and version."""
    link = await package_link(store, expires_in, SCENARIOS, scenario, version)
    return ScenarioDownloadOut(
        url=link.url,
        sha256=link.sha256,
        size=link.size,
        expires_at=link.expires_at,
        version=link.version,
        release=release,
    )
