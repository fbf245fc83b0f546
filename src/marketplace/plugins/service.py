"""Plugin rules for developers and administrators: publish, edit, price, versions, lists."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import (
    InvalidCategory,
    InvalidState,
    NotFound,
    PluginKeyExists,
)
from marketplace.inspection.ledger import attach as attach_inspection
from marketplace.kit.jsonsafe import storable
from marketplace.kit.sql import insert_unique
from marketplace.models import (
    Category,
    Channel,
    Distribution,
    Plugin,
    PluginVersion,
    Purchase,
    ReviewStatus,
    Scenario,
    ScenarioVersion,
    User,
)
from marketplace.orgs import service as orgs
from marketplace.packages.archive import ArchiveInfo
from marketplace.packages.manifest import (
    check_manifest_category,
    check_manifest_identity,
    check_manifest_shape,
    distribution_of,
)
from marketplace.plugins import review as plugin_review
from marketplace.plugins.kind import PLUGINS
from marketplace.plugins.schemas import (
    AdminCreateIn,
    AdminUpdateIn,
    CategoryIn,
    CategoryUpdateIn,
    DeveloperUpdateIn,
    PluginFieldsIn,
    PriceIn,
    PublishIn,
)
from marketplace.publishing import queries, review
from marketplace.publishing.diff import diff_base
from marketplace.publishing.findings import as_stored, settle
from marketplace.publishing.secrets import refuse_live_tokens
from marketplace.trust.keyring import Keyring
from marketplace_rules.review import plugin_version_findings
from marketplace_rules.secrets import scan_document

# ---------- categories ----------


async def category_keys(session: AsyncSession) -> set[str]:
    return set(await session.scalars(select(Category.key)))


async def check_category(session: AsyncSession, key: str) -> str:
    if await session.get(Category, key) is None:
        raise InvalidCategory(key)
    return key


async def list_categories(session: AsyncSession) -> list[Category]:
    return list(await session.scalars(select(Category).order_by(Category.sort_order, Category.key)))


async def categories_with_listed_counts(session: AsyncSession) -> list[tuple[Category, int]]:
    """Every category with its number of listed plugins (approved and enabled, CONTRACT 6)."""
    listed = (
        select(Plugin.category, func.count().label("listed"))
        .where(Plugin.review_status == ReviewStatus.APPROVED, Plugin.enabled.is_(True))
        .group_by(Plugin.category)
        .subquery()
    )
    rows = await session.execute(
        select(Category, func.coalesce(listed.c.listed, 0))
        .outerjoin(listed, listed.c.category == Category.key)
        .order_by(Category.sort_order, Category.key)
    )
    return [(category, count) for category, count in rows.all()]


async def add_category(session: AsyncSession, body: CategoryIn) -> Category:
    if await session.get(Category, body.key) is not None:
        raise InvalidState(f'Category "{body.key}" already exists')
    category = Category(
        key=body.key, name=body.name, name_zh=body.name_zh, sort_order=body.sort_order
    )
    session.add(category)
    await session.flush()
    return category


async def update_category(session: AsyncSession, key: str, body: CategoryUpdateIn) -> Category:
    category = await session.get(Category, key, with_for_update=True)
    if category is None:
        raise NotFound(f'Category "{key}" does not exist')
    for field in body.model_fields_set:
        value = getattr(body, field)
        if value is not None:
            setattr(category, field, value)
    await session.flush()
    return category


async def delete_category(session: AsyncSession, key: str) -> None:
    category = await session.get(Category, key, with_for_update=True)
    if category is None:
        raise NotFound(f'Category "{key}" does not exist')
    in_use = await session.scalar(select(func.count()).where(Plugin.category == key))
    if in_use:
        raise InvalidState(f'Category "{key}" is used by {in_use} plugin(s)')
    # Scenarios and their versions reference categories too (CONTRACT 8).
    for column in (Scenario.category, ScenarioVersion.category):
        if await session.scalar(select(column).where(column == key).limit(1)) is not None:
            raise InvalidState(f'Category "{key}" is used by scenarios')
    await session.delete(category)
    await session.flush()


# ---------- plugins ----------


def _price_fields(is_free: bool, price: Decimal, validity_days: int | None) -> dict[str, Any]:
    paid = not is_free and price > 0
    return {
        "is_free": not paid,
        "price": price if paid else Decimal("0"),
        # 0 or omitted means a permanent purchase, stored as null (seed 2.1).
        "validity_days": validity_days if paid and validity_days else None,
    }


async def _insert_plugin(session: AsyncSession, plugin: Plugin) -> Plugin:
    if await session.scalar(select(Plugin.id).where(Plugin.plugin_key == plugin.plugin_key)):
        raise PluginKeyExists()
    # The unique constraint decides a race between two publishes of one key.
    await insert_unique(session, plugin, PluginKeyExists())
    return plugin


def _new_plugin(body: PluginFieldsIn, **platform_fields: Any) -> Plugin:
    """The fields a developer and an administrator both send; the rest is per caller."""
    return Plugin(
        plugin_key=body.plugin_key,
        name=body.name,
        name_zh=body.name_zh,
        description=body.description,
        description_zh=body.description_zh,
        type=body.type,
        category=body.category,
        tags=body.tags,
        license=body.license,
        homepage=body.homepage,
        repository=body.repository,
        **_price_fields(body.is_free, body.price, body.validity_days),
        **platform_fields,
    )


async def publish(session: AsyncSession, owner: User, body: PublishIn) -> Plugin:
    """A pending plugin of the caller's, or of an organization it belongs to (`org`: 404
    NOT_FOUND for an unknown slug, 403 FORBIDDEN for a non-member); `owner_id` is always
    the caller, who published it."""
    org = await orgs.publishing_org(session, owner, body.org) if body.org is not None else None
    await check_category(session, body.category)
    plugin = _new_plugin(
        body,
        source="developer",
        platforms=[],
        review_status=ReviewStatus.PENDING,
        enabled=False,
        owner_id=owner.id,
        org_id=org.id if org is not None else None,
    )
    return await _insert_plugin(session, plugin)


async def admin_create(session: AsyncSession, admin: User, body: AdminCreateIn) -> Plugin:
    await check_category(session, body.category)
    plugin = _new_plugin(
        body,
        icon=body.icon,
        source=body.source,
        platforms=body.platforms,
        featured=body.featured,
        # Official plugins are live on creation (seed part 3).
        review_status=ReviewStatus.APPROVED,
        enabled=True,
        reviewed_by=admin.id,
        owner_id=admin.id,
    )
    return await _insert_plugin(session, plugin)


async def update(
    session: AsyncSession, plugin: Plugin, body: DeveloperUpdateIn, *, by_developer: bool
) -> Plugin:
    changes = body.model_dump(exclude_unset=True)
    if "category" in changes:
        await check_category(session, changes["category"])
    for field, value in changes.items():
        setattr(plugin, field, value)
    if by_developer:
        await plugin_review.resubmit(session, plugin)
    await session.flush()
    return plugin


async def admin_update(session: AsyncSession, plugin: Plugin, body: AdminUpdateIn) -> Plugin:
    return await update(session, plugin, body, by_developer=False)


async def set_price(session: AsyncSession, plugin: Plugin, body: PriceIn) -> Plugin:
    for field, value in _price_fields(body.price <= 0, body.price, body.validity_days).items():
        setattr(plugin, field, value)
    await session.flush()
    return plugin


async def set_icon(session: AsyncSession, plugin: Plugin, data_url: str) -> Plugin:
    plugin.icon = data_url
    await session.flush()
    return plugin


async def delete_plugin(session: AsyncSession, plugin: Plugin) -> list[str]:
    """Remove the plugin and its versions; return blob keys that may now be unreferenced."""
    keys = [
        k
        for k in await session.scalars(
            select(PluginVersion.blob_key).where(
                PluginVersion.plugin_id == plugin.id, PluginVersion.blob_key.is_not(None)
            )
        )
        if k
    ]
    await session.delete(plugin)
    await session.flush()
    return keys


# ---------- versions ----------


async def check_manifest(
    session: AsyncSession, plugin: Plugin, manifest: dict[str, Any], version: str
) -> None:
    """The structural checks, in the contract's order; failures create nothing."""
    check_manifest_identity(manifest, plugin_key=plugin.plugin_key, version=version)
    if await queries.version_exists(session, PLUGINS, plugin.id, version):
        raise PLUGINS.version_exists_error(plugin, version)
    check_manifest_category(manifest, categories=await category_keys(session))
    check_manifest_shape(manifest, plugin_type=plugin.type)


async def add_version(
    session: AsyncSession,
    plugin: Plugin,
    *,
    version: str,
    changelog: str | None,
    manifest: dict[str, Any],
    distribution: Distribution,
    archive: ArchiveInfo | None = None,
    sha256: str | None = None,
    size: int | None = None,
    blob_key: str | None = None,
    channel: Channel = Channel.STABLE,
    released_by_admin: User | None = None,
    keyring: Keyring | None = None,
) -> PluginVersion:
    """Insert a pending version with its findings; reject it at once on an error finding,
    or release it for an admin (warnings and infos are for a reviewer, they do not stop it)."""
    row = PluginVersion(
        plugin_id=plugin.id,
        version=version,
        changelog=changelog,
        manifest=storable(manifest),
        distribution=distribution,
        sha256=sha256,
        size=size,
        blob_key=blob_key,
        review_status=ReviewStatus.PENDING,
        is_latest=False,
        channel=channel.value,
        inspection=None,  # set below; never lazily loaded on a new row
    )
    base = await diff_base(session, PLUGINS, row)
    findings = plugin_version_findings(
        manifest, archive, base=base.manifest if base is not None else None
    )
    row.findings = as_stored(findings)
    # (pluginId, version) is unique in the database: of two racing uploads one gets 409.
    await insert_unique(session, row, PLUGINS.version_exists_error(plugin, version))
    rejected = await settle(session, PLUGINS, plugin, row, findings)
    # A stdio MCP server is run in the sandbox after the commit (CONTRACT 13); a version the
    # checks rejected is not (its code is never distributed).
    attach_inspection(session, row, inspect=not rejected)
    if not rejected and released_by_admin is not None:
        # Versions an administrator adds are approved and current at once (CONTRACT 5).
        await review.decide(
            session,
            PLUGINS,
            plugin,
            row,
            approved=True,
            reviewer_id=released_by_admin.id,
            note=None,
            keyring=keyring,
        )
    return row


async def create_version_from_manifest(
    session: AsyncSession,
    plugin: Plugin,
    *,
    version: str,
    changelog: str | None,
    manifest: dict[str, Any],
    channel: Channel = Channel.STABLE,
    released_by_admin: User | None,
    keyring: Keyring | None,
) -> PluginVersion:
    """ConfigOnly or inline-code versions (no package)."""
    # Before any other check: a leaked token is revoked whatever else is wrong.
    await refuse_live_tokens(session, PLUGINS, scan_document(manifest).tokens)
    await check_manifest(session, plugin, manifest, version)
    distribution = Distribution(distribution_of(manifest, has_package=False))
    return await add_version(
        session,
        plugin,
        version=version,
        changelog=changelog,
        manifest=manifest,
        distribution=distribution,
        channel=channel,
        released_by_admin=released_by_admin,
        keyring=keyring,
    )


# ---------- lists ----------


async def recent_purchases(
    session: AsyncSession, plugin_id: str, limit: int = 20
) -> list[Purchase]:
    return list(
        await session.scalars(
            select(Purchase)
            .where(Purchase.plugin_id == plugin_id)
            .order_by(Purchase.purchased_at.desc(), Purchase.id)
            .limit(limit)
        )
    )
