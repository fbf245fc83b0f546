"""Public catalogue queries: only listed plugins (approved and enabled, CONTRACT 6)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import semver
from sqlalchemy import (
    ColumnElement,
    Select,
    String,
    and_,
    func,
    literal_column,
    or_,
    select,
    text,
)
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.catalog.schemas import BrowseSort
from marketplace.catalog.search import SEARCH_ROWIDS, search_condition, sqlite_matching_rowids
from marketplace.errors import PluginNotFound
from marketplace.kit.pagination import Page
from marketplace.kit.sql import plugin_named
from marketplace.models import (
    Category,
    DeveloperProfile,
    ListingCount,
    Organization,
    Plugin,
    PluginType,
    PluginVersion,
    Rating,
    ReviewStatus,
    User,
)
from marketplace.orgs.schemas import OrgRef

# Written as literals, exactly as the partial indexes of migration 0002 say it: a bound
# parameter would stop SQLite (and PostgreSQL's generic plans) from using those indexes.
LISTED = text("plugins.review_status = 'approved' AND plugins.enabled")
FEATURED = text("plugins.featured")
RATING_ORDER = text(
    "(CASE WHEN plugins.rating_count > 0 THEN plugins.rating_sum * 1.0 / plugins.rating_count "
    "ELSE 0 END) DESC"
)

ORDERS: dict[BrowseSort, tuple[Any, ...]] = {
    BrowseSort.POPULAR: (Plugin.download_count.desc(), Plugin.id.desc()),
    BrowseSort.NEWEST: (Plugin.created_at.desc(), Plugin.id.desc()),
    BrowseSort.UPDATED: (Plugin.updated_at.desc(), Plugin.id.desc()),
    BrowseSort.NAME: (func.lower(Plugin.name), Plugin.id),
    BrowseSort.RATING: (RATING_ORDER, Plugin.rating_count.desc(), Plugin.id.desc()),
}

# The developer's public name: the display name of the developer profile, else the account's.
DEVELOPER_NAME = func.coalesce(DeveloperProfile.display_name, User.name)


class PluginRow(NamedTuple):
    """A plugin as the public reads show it: with its publisher's public name and the
    organization it belongs to (CONTRACT 17), read in the plugin's own statement."""

    plugin: Plugin
    developer_name: str
    org: OrgRef | None


def with_publisher(query: Select[*tuple[Any, ...]]) -> Select[*tuple[Any, ...]]:
    """`query` (plugins in its FROM) with the developer's name and the organization's slug
    and name as its last three columns: two joins and a LEFT JOIN, no query per row."""
    return (
        query.add_columns(DEVELOPER_NAME, Organization.slug, Organization.name)
        .join(User, User.id == Plugin.owner_id)
        .outerjoin(DeveloperProfile, DeveloperProfile.user_id == Plugin.owner_id)
        .outerjoin(Organization, Organization.id == Plugin.org_id)
    )


def org_of(slug: str | None, name: str | None) -> OrgRef | None:
    """The `org` of a row of `with_publisher` (model_construct: our own values)."""
    if slug is None or name is None:  # a personal plugin: the LEFT JOIN found nothing
        return None
    return OrgRef.model_construct(slug=slug, name=name)


def plugin_row(plugin: Plugin, name: str, org_slug: str | None, org_name: str | None) -> PluginRow:
    return PluginRow(plugin, str(name), org_of(org_slug, org_name))


def is_listed(plugin: Plugin) -> bool:
    return plugin.review_status == ReviewStatus.APPROVED and plugin.enabled


@dataclass(frozen=True)
class BrowseQuery:
    q: str | None
    category: str | None
    type: PluginType | None
    is_free: bool | None
    sort: BrowseSort

    def filter_key(self) -> tuple[Any, ...]:
        return (self.q, self.category, self.type, self.is_free)

    def without_search(self) -> BrowseQuery:
        return replace(self, q=None)


def _facet_conditions(
    query: BrowseQuery, category: Any, type_: Any, is_free: Any
) -> list[ColumnElement[bool]]:
    """The query's filters (q aside) on whichever columns hold the listing facets: the
    plugins table, the kept counts (0010) or the search rowids (0011)."""
    conditions: list[ColumnElement[bool]] = []
    if query.category is not None:
        conditions.append(category == query.category)
    if query.type is not None:
        conditions.append(type_ == query.type.value)
    if query.is_free is not None:
        conditions.append(is_free == query.is_free)
    return conditions


def _filters(dialect: str, query: BrowseQuery, *, walk: bool = False) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if query.q:
        conditions.append(search_condition(dialect, query.q, walk=walk))
    return conditions + _facet_conditions(query, Plugin.category, Plugin.type, Plugin.is_free)


def _dialect(session: AsyncSession) -> str:
    return session.get_bind().dialect.name


def browse_ids_statement(
    dialect: str, query: BrowseQuery, page: Page, *, walk: bool = False
) -> Select[str]:
    """The page's ids alone: a walk of one listed sort index, or a search index lookup."""
    return (
        select(Plugin.id)
        .where(LISTED, *_filters(dialect, query, walk=walk))
        .order_by(*ORDERS[query.sort])
        .offset(page.offset)
        .limit(page.size)
    )


async def plugins_in_order(session: AsyncSession, ids: Sequence[str]) -> list[PluginRow]:
    """Full rows and developer names for ids, in the order given."""
    if not ids:
        return []
    rows = await session.execute(with_publisher(select(Plugin)).where(Plugin.id.in_(ids)))
    found = {row[0].id: plugin_row(*row) for row in rows}
    return [found[plugin_id] for plugin_id in ids if plugin_id in found]


async def browse_ids(
    session: AsyncSession, query: BrowseQuery, page: Page, *, walk: bool = False
) -> list[str]:
    """The ids of the page's listed plugins, in order."""
    ids = await session.scalars(browse_ids_statement(_dialect(session), query, page, walk=walk))
    return list(ids)


async def browse_page(
    session: AsyncSession, query: BrowseQuery, page: Page, *, walk: bool = False
) -> list[PluginRow]:
    return await plugins_in_order(session, await browse_ids(session, query, page, walk=walk))


def count_statement(query: BrowseQuery) -> Select[int]:
    """The exact number of listed plugins passing the filters, without q: a sum over the
    counts the database keeps per (category, type, isFree) (migration 0010)."""
    conditions = _facet_conditions(
        query, ListingCount.category, ListingCount.type, ListingCount.is_free
    )
    return select(func.coalesce(func.sum(ListingCount.listed), 0)).where(*conditions)


def _facet_filters(query: BrowseQuery) -> list[ColumnElement[bool]]:
    """The filters on plugin_search_rowids' copy of the listing facets (SQLite)."""
    facets = SEARCH_ROWIDS.c
    listed: ColumnElement[bool] = facets.listed.is_(True)
    return [listed, *_facet_conditions(query, facets.category, facets.type, facets.is_free)]


def search_count_statement(dialect: str, q: str, query: BrowseQuery) -> Select[int]:
    """The exact number of listed plugins matching q and the query's filters."""
    if dialect == "sqlite":
        # Driven from the match set, reading the facets beside each rowid (migration 0011).
        source = sqlite_matching_rowids(q)
        return select(func.count()).select_from(source).where(*_facet_filters(query))
    return select(func.count()).select_from(Plugin).where(LISTED, *_filters(dialect, query))


async def count_listed(session: AsyncSession, query: BrowseQuery) -> int:
    if not query.q:
        return int(await session.scalar(count_statement(query)) or 0)
    total = await session.scalar(search_count_statement(_dialect(session), query.q, query))
    return int(total or 0)


async def top_plugins(session: AsyncSession, limit: int, *, featured: bool) -> list[PluginRow]:
    """Listed plugins by download count; only featured ones when asked."""
    stmt = select(Plugin.id).where(LISTED)
    if featured:
        stmt = stmt.where(FEATURED)
    ids = await session.scalars(stmt.order_by(*ORDERS[BrowseSort.POPULAR]).limit(limit))
    return await plugins_in_order(session, list(ids))


async def listed_counts_by_category(session: AsyncSession) -> dict[str, int]:
    rows = await session.execute(
        select(ListingCount.category, func.sum(ListingCount.listed)).group_by(ListingCount.category)
    )
    return {category: int(count) for category, count in rows}


async def categories(session: AsyncSession) -> list[Category]:
    rows = await session.scalars(select(Category).order_by(Category.sort_order, Category.key))
    return list(rows)


def _looks_like_id(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _ref_condition(ref: str) -> ColumnElement[bool]:
    """The plugins a path reference can name: the one with that id, the one with that key."""
    by_key = Plugin.plugin_key == ref
    return or_(Plugin.id == ref, by_key) if _looks_like_id(ref) else by_key


def _named(ref: str, plugin_ids: Iterable[str]) -> str | None:
    """Which of the plugins found for `ref` it names: its id first (CONTRACT 3)."""
    found = list(plugin_ids)
    if ref in found:
        return ref
    return found[0] if found else None


async def find_plugin(session: AsyncSession, ref: str, *, lock: bool = False) -> Plugin | None:
    """By id first, then by pluginKey (CONTRACT 3); any review state. One query."""
    stmt = select(Plugin).where(_ref_condition(ref)).limit(2)
    if lock:
        stmt = stmt.with_for_update().execution_options(populate_existing=True)
    plugins = list(await session.scalars(stmt))
    chosen = _named(ref, (plugin.id for plugin in plugins))
    return next((plugin for plugin in plugins if plugin.id == chosen), None)


async def listed_plugin(session: AsyncSession, ref: str, *, lock: bool = False) -> Plugin:
    """A listed plugin by id or pluginKey; anything else is 404 PLUGIN_NOT_FOUND."""
    plugin = await find_plugin(session, ref, lock=lock)
    if plugin is None or not is_listed(plugin):
        raise PluginNotFound(details=plugin_named(ref))
    return plugin


async def listed_plugin_row(session: AsyncSession, ref: str) -> PluginRow:
    """A listed plugin, its developer's name and its organization, by id or pluginKey, in
    one query."""
    rows = (
        await session.execute(with_publisher(select(Plugin)).where(_ref_condition(ref)).limit(2))
    ).all()
    chosen = _named(ref, (row[0].id for row in rows))
    for row in rows:
        if row[0].id == chosen and is_listed(row[0]):
            return plugin_row(*row)
    raise PluginNotFound(details=plugin_named(ref))


async def listed_plugin_versions(
    session: AsyncSession, ref: str
) -> tuple[Plugin, list[PluginVersion]]:
    """A listed plugin and its approved versions (highest first), in one query."""
    rows = (await session.execute(listed_versions_statement(ref))).all()
    chosen = _named(ref, dict.fromkeys(plugin.id for plugin, _version in rows))
    plugin = next((p for p, _version in rows if p.id == chosen), None)
    if plugin is None or not is_listed(plugin):
        raise PluginNotFound(details=plugin_named(ref))
    versions = [v for p, v in rows if p.id == chosen and v is not None]
    return plugin, sorted(versions, key=lambda v: version_key(v.version), reverse=True)


async def developer_names(session: AsyncSession, owner_ids: set[str]) -> dict[str, str]:
    if not owner_ids:
        return {}
    rows = await session.execute(
        select(User.id, DEVELOPER_NAME)
        .outerjoin(DeveloperProfile, DeveloperProfile.user_id == User.id)
        .where(User.id.in_(owner_ids))
    )
    return {user_id: str(name) for user_id, name in rows}


@functools.lru_cache(maxsize=65536)
def version_key(version: str) -> tuple[int, Any]:
    """Semver precedence (1.0.0-alpha.10 after 1.0.0-alpha.9); unparsable strings sort first.
    Cached: parsing costs microseconds, and a few version strings ("1.0.0") make up most of
    what an update check of hundreds of plugins compares."""
    try:
        return (1, semver.Version.parse(version))
    except ValueError:
        return (0, version)


def is_newer(candidate: str | None, current: str) -> bool:
    if candidate is None:
        return False
    new, old = version_key(candidate), version_key(current)
    if new[0] and old[0]:
        return bool(new[1] > old[1])
    return candidate != current


# `review_status || ''` is the same test, but no index serves it: neither database may
# then look the status up in ix_plugin_versions_review_status, where every version of a
# big catalogue is approved (SQLite chose it without statistics: 120 ms at 100,000
# plugins; PostgreSQL did too on a table it had not analysed). The plugin's own few rows
# are found by plugin_id and tested one by one.
_APPROVED_VERSION = (
    PluginVersion.review_status.concat(literal_column("''", String)) == ReviewStatus.APPROVED.value
)


def listed_versions_statement(ref: str) -> Select[Plugin, PluginVersion]:
    """The plugins `ref` can name, each with its approved versions (or one row of None),
    through the (plugin_id, version) unique index."""
    return (
        select(Plugin, PluginVersion)
        .outerjoin(PluginVersion, and_(PluginVersion.plugin_id == Plugin.id, _APPROVED_VERSION))
        .where(_ref_condition(ref))
    )


async def reviews_page(
    session: AsyncSession, plugin_id: str, page: Page
) -> tuple[list[tuple[Rating, str]], int]:
    rows = await session.execute(
        select(Rating, User.name)
        .join(User, User.id == Rating.user_id)
        .where(Rating.plugin_id == plugin_id)
        .order_by(Rating.created_at.desc(), Rating.id.desc())
        .offset(page.offset)
        .limit(page.size)
    )
    total = await session.scalar(
        select(func.count()).select_from(Rating).where(Rating.plugin_id == plugin_id)
    )
    return [(rating, str(name)) for rating, name in rows], int(total or 0)
