"""Scenario rules: publish (create or add a version), edit, lists, the public view.

The scenario row mirrors its newest version (highest semver, any state); `mirror_newest`
is the one place that copies it, called whenever the newest version changes.
"""

from __future__ import annotations

from typing import Any

from pydantic.alias_generators import to_camel
from sqlalchemy import Select, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import (
    InvalidState,
    ScenarioNotFound,
    ScenarioValidationFailed,
)
from marketplace.kit.pagination import Page
from marketplace.kit.sql import icontains, insert_unique
from marketplace.models import (
    SCENARIO_METADATA,
    Category,
    DeveloperProfile,
    ReviewStatus,
    Scenario,
    ScenarioVersion,
    User,
)
from marketplace.packages.archive import ArchiveInfo
from marketplace.packages.manifest import version_sort_key
from marketplace.publishing import queries
from marketplace.publishing.diff import diff_base
from marketplace.publishing.findings import as_stored, settle
from marketplace.publishing.lookup import check_owner, find_item
from marketplace.publishing.secrets import refuse_live_tokens
from marketplace.scenarios.kind import SCENARIOS
from marketplace.scenarios.schemas import ScenarioPublishIn, ScenarioUpdateIn
from marketplace_rules.findings import Finding
from marketplace_rules.review import scenario_version_findings
from marketplace_rules.secrets import scan_document

# Texts a new version keeps from the scenario when the publish body leaves them out.
INHERITED = ("name_zh", "description", "description_zh")
TAKEN_DOWN_MESSAGE = "Scenario is taken down; it cannot be changed"

# ---------- checks ----------


async def check_category(session: AsyncSession, key: str) -> str:
    if await session.get(Category, key) is None:
        raise ScenarioValidationFailed.field("category", f'Invalid category "{key}"')
    return key


def check_not_taken_down(scenario: Scenario) -> None:
    if scenario.review_status == ReviewStatus.TAKEN_DOWN:
        raise InvalidState(TAKEN_DOWN_MESSAGE)


# ---------- publish ----------


def mirror_newest(scenario: Scenario, newest: ScenarioVersion) -> None:
    """Copy the newest version's metadata, package and status onto the scenario row."""
    scenario.version = newest.version
    for field in SCENARIO_METADATA:
        value = getattr(newest, field)
        setattr(scenario, field, list(value) if isinstance(value, list) else value)
    scenario.sha256 = newest.sha256
    scenario.size = newest.size
    SCENARIOS.after_version_decision(scenario, newest)


def _version_row(
    scenario_id: str, body: ScenarioPublishIn, current: Scenario | None
) -> ScenarioVersion:
    values: dict[str, Any] = {field: getattr(body, field) for field in SCENARIO_METADATA}
    if current is not None:
        for field in INHERITED:
            if field not in body.model_fields_set:
                values[field] = getattr(current, field)
    return ScenarioVersion(
        scenario_id=scenario_id,
        version=body.version,
        review_status=ReviewStatus.PENDING,
        is_latest=False,
        **values,
    )


def metadata_of(version: ScenarioVersion) -> dict[str, Any]:
    """A version's metadata as the API names it (camelCase): what its findings are about."""
    return {to_camel(field): getattr(version, field) for field in SCENARIO_METADATA}


async def version_findings(
    session: AsyncSession, version: ScenarioVersion, package: ArchiveInfo | None = None
) -> list[Finding]:
    """The findings of a version (and of its package, once uploaded), its permissions
    compared with the scenario's last approved version (the diff's base)."""
    base = await diff_base(session, SCENARIOS, version)
    return scenario_version_findings(
        metadata_of(version),
        package.manifest if package is not None else None,
        package,
        base=metadata_of(base) if base is not None else None,
    )


async def publish(
    session: AsyncSession, owner: User, body: ScenarioPublishIn, existing: Scenario | None
) -> Scenario:
    """A new id creates the scenario; an id the caller owns gets a new pending version."""
    # Before any other check: a leaked token is revoked whatever else is wrong.
    await refuse_live_tokens(session, SCENARIOS, scan_document(body.model_dump()).tokens)
    await check_category(session, body.category)
    if existing is not None:
        await _add_version(session, existing, body)
        return existing
    row = _version_row(body.id, body, None)
    findings = scenario_version_findings(metadata_of(row), None, None, base=None)
    row.findings = as_stored(findings)
    scenario = Scenario(id=body.id, owner_id=owner.id, review_status=ReviewStatus.PENDING)
    mirror_newest(scenario, row)
    try:
        # The primary key decides a race between two first publishes of one id. The row is
        # added inside the savepoint: begin_nested() flushes pending objects before it.
        async with session.begin_nested():
            session.add(scenario)
            await session.flush()
    except IntegrityError:
        existing = await check_owner(
            session, SCENARIOS, await find_item(session, SCENARIOS, body.id, lock=True), owner
        )
        await _add_version(session, existing, body)
        return existing
    session.add(row)
    await session.flush()
    await settle(session, SCENARIOS, scenario, row, findings)
    return scenario


async def _add_version(session: AsyncSession, scenario: Scenario, body: ScenarioPublishIn) -> None:
    if await queries.version_exists(session, SCENARIOS, scenario.id, body.version):
        raise SCENARIOS.version_exists_error(scenario, body.version)
    check_not_taken_down(scenario)
    row = _version_row(scenario.id, body, scenario)
    findings = await version_findings(session, row)
    row.findings = as_stored(findings)
    # (scenario, version) is unique in the database: of two racing publishes one gets 409.
    await insert_unique(session, row, SCENARIOS.version_exists_error(scenario, body.version))
    if version_sort_key(row.version) > version_sort_key(scenario.version):
        mirror_newest(scenario, row)
        await session.flush()
    await settle(session, SCENARIOS, scenario, row, findings)


# ---------- edit ----------


async def newest_version(session: AsyncSession, scenario: Scenario) -> ScenarioVersion:
    row = await session.scalar(
        select(ScenarioVersion).where(
            ScenarioVersion.scenario_id == scenario.id,
            ScenarioVersion.version == scenario.version,
        )
    )
    if row is None:  # pragma: no cover - every scenario is created with its first version
        raise ScenarioNotFound("Scenario has no version")
    return row


async def update(session: AsyncSession, scenario: Scenario, body: ScenarioUpdateIn) -> Scenario:
    """Edit the newest version's metadata (what the scenario shows); no review move."""
    check_not_taken_down(scenario)
    changes = body.model_dump(exclude_unset=True)
    if "category" in changes:
        await check_category(session, changes["category"])
    newest = await newest_version(session, scenario)
    for field, value in changes.items():
        setattr(newest, field, value)
    mirror_newest(scenario, newest)
    await session.flush()
    return scenario


# ---------- versions ----------


async def downloadable_version(session: AsyncSession, scenario_id: str) -> ScenarioVersion:
    """The current version when it has a package, else the newest approved version that
    has one; 404 when there is none."""
    rows = list(
        await session.scalars(
            select(ScenarioVersion).where(
                ScenarioVersion.scenario_id == scenario_id,
                ScenarioVersion.review_status == ReviewStatus.APPROVED,
                ScenarioVersion.blob_key.is_not(None),
            )
        )
    )
    if not rows:
        raise ScenarioNotFound("Scenario has no approved package to download")
    current = [v for v in rows if v.is_latest]
    return current[0] if current else max(rows, key=lambda v: version_sort_key(v.version))


# ---------- lists ----------


# ---------- the public view ----------

PublicRow = tuple[Scenario, ScenarioVersion, str, str]


def _public_query() -> Select[Scenario, ScenarioVersion, str, str]:
    """Listed: not taken down and with a current (newest approved) version."""
    return (
        select(
            Scenario,
            ScenarioVersion,
            User.id,
            func.coalesce(DeveloperProfile.display_name, User.name),
        )
        .join(
            ScenarioVersion,
            (ScenarioVersion.scenario_id == Scenario.id) & ScenarioVersion.is_latest.is_(True),
        )
        .join(User, User.id == Scenario.owner_id)
        .outerjoin(DeveloperProfile, DeveloperProfile.user_id == User.id)
        .where(Scenario.review_status != ReviewStatus.TAKEN_DOWN)
    )


async def public_scenarios(
    session: AsyncSession,
    page: Page,
    *,
    q: str | None,
    category: str | None,
    scenario_type: str | None,
) -> tuple[list[PublicRow], int]:
    query = _public_query()
    if q:
        query = query.where(
            or_(
                icontains(Scenario.id, q),
                icontains(ScenarioVersion.name, q),
                icontains(ScenarioVersion.name_zh, q),
                icontains(ScenarioVersion.description, q),
                icontains(ScenarioVersion.description_zh, q),
            )
        )
    if category:
        query = query.where(ScenarioVersion.category == category)
    if scenario_type:
        query = query.where(ScenarioVersion.type == scenario_type)
    total = await session.scalar(query.with_only_columns(func.count()).order_by(None)) or 0
    rows = await session.execute(
        query.order_by(Scenario.created_at.desc(), Scenario.id).offset(page.offset).limit(page.size)
    )
    return [(s, v, owner_id, name) for s, v, owner_id, name in rows.all()], total


async def public_scenario(session: AsyncSession, scenario_id: str) -> PublicRow:
    """A listed scenario, or 404 SCENARIO_NOT_FOUND (also for one that exists but is not)."""
    row = (await session.execute(_public_query().where(Scenario.id == scenario_id))).first()
    if row is None:
        raise ScenarioNotFound()
    scenario, version, owner_id, name = row
    return scenario, version, owner_id, name
