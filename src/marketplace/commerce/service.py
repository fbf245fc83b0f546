"""Downloads, install reports and ratings (CONTRACT 7); purchases live in purchases.py."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import exists, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.catalog.service import is_listed, org_of, with_publisher
from marketplace.commerce.purchases import PAID
from marketplace.errors import RatingNotAllowed, VersionNotApproved, VersionNotFound
from marketplace.kit.dbtypes import utcnow
from marketplace.models import (
    Install,
    Plugin,
    PluginVersion,
    Purchase,
    Rating,
    ReviewStatus,
    User,
)
from marketplace.orgs.schemas import OrgRef
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.lookup import operates

LATEST = "latest"


async def downloadable_version(session: AsyncSession, plugin: Plugin, ref: str) -> PluginVersion:
    """The version a client may fetch: `latest` is the current one.

    Unknown version: 404. Plugin not listed, no approved version, or the version not
    approved: 403 PLUGIN_VERSION_NOT_APPROVED (seed part 3, rules 1 and 2).
    """
    if ref == LATEST:
        version = await session.scalar(
            select(PluginVersion).where(
                PluginVersion.plugin_id == plugin.id, PluginVersion.is_latest.is_(True)
            )
        )
        if version is None:
            raise VersionNotApproved("This plugin has no approved version")
    else:
        version = await session.scalar(
            select(PluginVersion).where(
                PluginVersion.plugin_id == plugin.id, PluginVersion.version == ref
            )
        )
        if version is None:
            raise VersionNotFound()
    if not is_listed(plugin):
        raise VersionNotApproved("This plugin is not available for download")
    if version.review_status != ReviewStatus.APPROVED:
        raise VersionNotApproved()
    return version


async def _own_install(session: AsyncSession, user_id: str, plugin_id: str) -> Install | None:
    return await session.scalar(
        select(Install)
        .where(Install.user_id == user_id, Install.plugin_id == plugin_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


async def report_install(
    session: AsyncSession, user: User, plugin: Plugin, version: PluginVersion
) -> tuple[Install, bool]:
    """One record per user and plugin; downloadCount counts distinct installing users,
    raised in the same transaction as the record that first counts."""
    now = utcnow()
    record = await _own_install(session, user.id, plugin.id)
    if record is None:
        record = Install(
            user_id=user.id, plugin_id=plugin.id, version=version.version, installed_at=now
        )
        try:
            # Added inside the savepoint: begin_nested() flushes pending objects before it
            # opens the SAVEPOINT, and a conflict there would end the whole transaction.
            async with session.begin_nested():
                session.add(record)
                await session.flush()
        except IntegrityError:  # the same user's concurrent first report won
            record = await _own_install(session, user.id, plugin.id)
            if record is None:
                raise
        else:
            await session.execute(
                update(Plugin)
                .where(Plugin.id == plugin.id)
                # Counts are not edits: updated_at (the "updated" sort) stays.
                .values(download_count=Plugin.download_count + 1, updated_at=Plugin.updated_at)
            )
            return record, True
    record.version = version.version
    record.installed_at = now
    await session.flush()
    return record, False


@dataclass(frozen=True)
class InstalledRow:
    install: Install
    plugin: Plugin
    developer_name: str
    org: OrgRef | None


async def installed(session: AsyncSession, user_id: str) -> list[InstalledRow]:
    rows = await session.execute(
        with_publisher(select(Install, Plugin).join(Plugin, Plugin.id == Install.plugin_id))
        .where(Install.user_id == user_id)
        .order_by(Install.installed_at.desc(), Install.id)
    )
    return [
        InstalledRow(i, p, str(name), org_of(slug, org_name)) for i, p, name, slug, org_name in rows
    ]


async def _may_rate(session: AsyncSession, user: User, plugin: Plugin) -> bool:
    installed_it = exists().where(Install.user_id == user.id, Install.plugin_id == plugin.id)
    bought_it = exists().where(
        Purchase.user_id == user.id, Purchase.plugin_id == plugin.id, Purchase.status == PAID
    )
    return bool(await session.scalar(select(installed_it | bought_it)))


async def _own_rating(session: AsyncSession, user_id: str, plugin_id: str) -> Rating | None:
    return await session.scalar(
        select(Rating)
        .where(Rating.user_id == user_id, Rating.plugin_id == plugin_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


@dataclass(frozen=True)
class RatingResult:
    rating: Rating
    created: bool
    rating_sum: int
    rating_count: int


async def rate(
    session: AsyncSession, user: User, plugin: Plugin, score: int, comment: str | None
) -> RatingResult:
    """One rating per user and plugin (upsert). The plugin's sum and count move by the
    difference in one atomic UPDATE, so concurrent ratings never lose one another."""
    if await operates(session, PLUGINS, plugin, user):
        raise RatingNotAllowed("You cannot rate your own plugin")
    if not await _may_rate(session, user, plugin):
        raise RatingNotAllowed()
    rating = await _own_rating(session, user.id, plugin.id)
    created = False
    if rating is None:
        rating = Rating(user_id=user.id, plugin_id=plugin.id, score=score, comment=comment)
        try:
            async with session.begin_nested():  # add inside: see report_install
                session.add(rating)
                await session.flush()
            created = True
        except IntegrityError:  # the same user's concurrent first rating won
            rating = await _own_rating(session, user.id, plugin.id)
            if rating is None:
                raise
    if created:
        delta_sum, delta_count = score, 1
    else:
        delta_sum, delta_count = score - rating.score, 0
        rating.score = score
        rating.comment = comment
        await session.flush()
    totals = (
        await session.execute(
            update(Plugin)
            .where(Plugin.id == plugin.id)
            .values(
                rating_sum=Plugin.rating_sum + delta_sum,
                rating_count=Plugin.rating_count + delta_count,
                updated_at=Plugin.updated_at,
            )
            .returning(Plugin.rating_sum, Plugin.rating_count)
        )
    ).one()
    return RatingResult(rating, created, int(totals[0]), int(totals[1]))
