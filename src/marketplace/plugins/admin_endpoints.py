"""Plugin admin group (seed 4.5): prefix /api/v1/admin/plugins."""

from __future__ import annotations

from typing import Annotated

from fastapi import BackgroundTasks, Query, Request, status

from marketplace.auth.deps import Admin
from marketplace.db import DbSession, WriteSessions, end_checks
from marketplace.errors import (
    IconInvalid,
    IconTooLarge,
    InvalidCategory,
    InvalidState,
    NotFound,
    PackageInvalid,
    PackageTooLarge,
    PluginKeyExists,
    PluginNotFound,
    ValidationFailed,
    VersionExists,
    VersionNotFound,
)
from marketplace.kit.error_codes import raises
from marketplace.kit.pagination import LimitParams
from marketplace.kit.routing import api_router, streams_body
from marketplace.kit.schemas import Envelope
from marketplace.kit.state import AppSettings
from marketplace.models import PluginVersion, ReviewStatus, RolloutState
from marketplace.orgs import service as orgs
from marketplace.plugins import review as plugin_review
from marketplace.plugins import service, uploads
from marketplace.plugins.downloads import DownloadOut, download_info
from marketplace.plugins.forms import ICON_FORM, PACKAGE_FORM
from marketplace.plugins.kind import PLUGINS
from marketplace.plugins.lookup import AdminPlugin, AdminPluginForWrite, AdminPluginVersionForWrite
from marketplace.plugins.schemas import (
    AdminCreateIn,
    AdminPluginList,
    AdminPluginOut,
    AdminUpdateIn,
    AdminVersionList,
    CategoryIn,
    CategoryItems,
    CategoryOut,
    CategoryUpdateIn,
    CreateVersionIn,
    DeletedOut,
    PluginOut,
    PluginReviewIn,
    PriceIn,
    VersionItems,
    VersionOut,
)
from marketplace.plugins.views import (
    admin_plugin_out,
    admin_version_out,
    plugin_out,
    plugin_view,
    version_out,
)
from marketplace.publishing import endpoints, queries
from marketplace.publishing.audit import Trigger
from marketplace.publishing.blobs import forget_blobs
from marketplace.publishing.endpoints import ItemStatus, QueueStatus, Search
from marketplace.publishing.lookup import find_version
from marketplace.publishing.releases import ReleasesDep
from marketplace.publishing.schemas import StatusCounts, VersionDiffOut, VersionReviewIn
from marketplace.publishing.takedown import take_down_version
from marketplace.publishing.takedown_endpoints import TAKEDOWN_DESCRIPTION, TakedownIn
from marketplace.storage.deps import BlobStoreDep
from marketplace.trust.deps import KeyringDep

router = api_router(prefix="/api/v1/admin/plugins", tags=["admin: plugins"])


# Static paths first, so "categories" and "versions" are never read as a plugin id.


@router.get("/categories")
async def list_categories(_admin: Admin, session: DbSession) -> Envelope[CategoryItems]:
    """Every category definition (the publishing tool validates against it)."""
    rows = await service.list_categories(session)
    return Envelope(data=CategoryItems(items=[CategoryOut.model_validate(c) for c in rows]))


@router.post("/categories", status_code=status.HTTP_201_CREATED)
@raises(InvalidState)
async def add_category(
    body: CategoryIn, _admin: Admin, session: DbSession
) -> Envelope[CategoryOut]:
    """Add a category."""
    return Envelope(data=CategoryOut.model_validate(await service.add_category(session, body)))


@router.put("/categories/{key}")
@raises(NotFound)
async def update_category(
    key: str, body: CategoryUpdateIn, _admin: Admin, session: DbSession
) -> Envelope[CategoryOut]:
    """Rename a category or change its order."""
    return Envelope(
        data=CategoryOut.model_validate(await service.update_category(session, key, body))
    )


@router.delete("/categories/{key}")
@raises(NotFound, InvalidState)
async def delete_category(key: str, _admin: Admin, session: DbSession) -> Envelope[dict[str, str]]:
    """Delete a category no plugin uses (409 INVALID_STATE otherwise)."""
    await service.delete_category(session, key)
    return Envelope(data={"key": key})


@router.get("/versions/pending")
async def list_plugin_versions(
    _admin: Admin,
    session: DbSession,
    page: LimitParams,
    review_status: QueueStatus = ReviewStatus.PENDING,
    search: Search = None,
    rollout_state: Annotated[RolloutState | None, Query(alias="rolloutState")] = None,
) -> Envelope[AdminVersionList]:
    """Versions across plugins (the review queue), newest first; reviewStatus defaults to
    pending, `all` lists every state; rolloutState narrows to full, rolling or halted
    rollouts (`reviewStatus=approved&rolloutState=halted`: the halted ones)."""
    versions = await endpoints.version_queue(
        session,
        PLUGINS,
        page,
        review_status,
        search,
        page_model=AdminVersionList,
        item_out=admin_version_out,
        where=None if rollout_state is None else PluginVersion.rollout_state == rollout_state,
    )
    return Envelope(data=versions)


@router.post("/versions/{version_id}/review")
@raises(VersionNotFound, InvalidState)
async def review_plugin_version(
    version_id: str, body: VersionReviewIn, admin: Admin, session: DbSession, keyring: KeyringDep
) -> Envelope[VersionOut]:
    """Approve (the version becomes current, whatever its number) or reject a pending
    version; anything but a pending version is 409 INVALID_STATE. Writes the audit record
    in the same transaction."""
    version = await endpoints.review_version(session, PLUGINS, version_id, body, admin, keyring)
    return Envelope(data=version_out(version))


@router.get("/versions/{version_id}/download")
@raises(VersionNotFound, PluginNotFound)
async def download_plugin_version(
    version_id: str,
    _admin: Admin,
    session: DbSession,
    store: BlobStoreDep,
    settings: AppSettings,
    releases: ReleasesDep,
) -> Envelope[DownloadOut]:
    """Download information for any plugin version, pending ones included (reviewers read
    them); `release` is the signed release record, null for a version never approved."""
    plugin, version, release = await endpoints.version_for_download(
        session, PLUGINS, releases, version_id
    )
    info = await download_info(store, settings.download_url_seconds, plugin, version, release)
    return Envelope(data=info)


@router.get("/versions/{version_id}/diff")
@raises(VersionNotFound)
async def diff_plugin_version(
    version_id: str, _admin: Admin, session: DbSession, store: BlobStoreDep
) -> Envelope[VersionDiffOut]:
    """What a plugin version changes against the last approved version of its plugin (base:
    the current version unless it is this one, else the newest approved by creation; null
    for a first version): files added, removed and changed (paths relative to the package
    root), top-level manifest keys, new permissions."""
    return Envelope(data=await endpoints.version_diff(session, store, PLUGINS, version_id))


@router.get("/versions/{version_id}")
@raises(VersionNotFound)
async def plugin_version_detail(
    version_id: str, _admin: Admin, session: DbSession
) -> Envelope[VersionOut]:
    """One plugin version, in any state."""
    return Envelope(data=version_out(await find_version(session, PLUGINS, version_id)))


@router.post("/versions/{version_id}/takedown", description=TAKEDOWN_DESCRIPTION)
async def take_down_plugin_version(
    body: TakedownIn, admin: Admin, found: AdminPluginVersionForWrite, session: DbSession
) -> Envelope[VersionOut]:
    plugin, version = found
    await take_down_version(
        session,
        PLUGINS,
        plugin,
        version,
        actor_id=admin.id,
        reason=body.reason,
        trigger=Trigger.ADMIN,
    )
    return Envelope(data=version_out(version))


@router.get("")
async def list_plugins(
    _admin: Admin,
    session: DbSession,
    page: LimitParams,
    review_status: ItemStatus = None,
    search: Search = None,
) -> Envelope[AdminPluginList]:
    """Every plugin with counts per review status (counts share the search, ignore the
    filter)."""
    wanted = review_status.value if review_status else None
    plugins, total, counts = await queries.admin_items(session, PLUGINS, page, wanted, search)
    labels = await queries.reviewer_labels(session, (p.reviewed_by for p in plugins))
    refs = await orgs.org_refs(session, (p.org_id for p in plugins))
    return Envelope(
        data=AdminPluginList(
            items=[admin_plugin_out(p, labels, orgs.pick(refs, p.org_id)) for p in plugins],
            total=total,
            page=page.page,
            limit=page.size,
            counts=StatusCounts(**counts),
        )
    )


@router.post("", status_code=status.HTTP_201_CREATED)
@raises(InvalidCategory, PluginKeyExists)
async def create_plugin(
    body: AdminCreateIn, admin: Admin, session: DbSession
) -> Envelope[PluginOut]:
    """Create an official plugin: approved and listed at once."""
    return Envelope(data=plugin_out(await service.admin_create(session, admin, body), None))


@router.get("/{plugin_id}")
async def plugin_detail(plugin: AdminPlugin, session: DbSession) -> Envelope[AdminPluginOut]:
    """One plugin, any state."""
    labels = await queries.reviewer_labels(session, [plugin.reviewed_by])
    org = await orgs.org_ref(session, plugin.org_id)
    return Envelope(data=admin_plugin_out(plugin, labels, org))


@router.put("/{plugin_id}")
@raises(InvalidCategory, InvalidState)
async def update_plugin(
    body: AdminUpdateIn, plugin: AdminPluginForWrite, session: DbSession
) -> Envelope[PluginOut]:
    """Edit a plugin; pluginKey, source, type and prices cannot change here."""
    return Envelope(
        data=await plugin_view(session, await service.admin_update(session, plugin, body))
    )


@router.put("/{plugin_id}/price")
async def set_price(
    body: PriceIn, plugin: AdminPluginForWrite, session: DbSession
) -> Envelope[PluginOut]:
    """Set the price (seed 9.4: prices change only through a price endpoint)."""
    return Envelope(data=await plugin_view(session, await service.set_price(session, plugin, body)))


@router.delete("/{plugin_id}")
@raises(InvalidState)
async def delete_plugin(
    plugin: AdminPluginForWrite,
    session: DbSession,
    sessions: WriteSessions,
    store: BlobStoreDep,
    background: BackgroundTasks,
) -> Envelope[DeletedOut]:
    """Delete the plugin and its versions; purchases and audit records stay."""
    keys = await service.delete_plugin(session, plugin)
    # After the commit (the response is sent after it), drop blobs nothing references now.
    background.add_task(forget_blobs, sessions, store, keys)
    return Envelope(data=DeletedOut(id=plugin.id, deleted=True))


@router.get("/{plugin_id}/versions")
async def plugin_versions(plugin: AdminPlugin, session: DbSession) -> Envelope[VersionItems]:
    """All versions of a plugin, every state, newest first."""
    versions = await queries.versions_of(session, PLUGINS, plugin.id)
    return Envelope(data=VersionItems(items=[version_out(v) for v in versions]))


@router.post("/{plugin_id}/create-version", status_code=status.HTTP_201_CREATED)
@raises(VersionExists, PackageInvalid, InvalidState)
async def create_version(
    body: CreateVersionIn,
    plugin: AdminPluginForWrite,
    admin: Admin,
    session: DbSession,
    keyring: KeyringDep,
) -> Envelope[VersionOut]:
    """Create a ConfigOnly or inline-code version; approved and current at once."""
    version = await service.create_version_from_manifest(
        session,
        plugin,
        version=body.version,
        changelog=body.changelog,
        manifest=body.manifest,
        channel=body.channel,
        released_by_admin=admin,
        keyring=keyring,
    )
    return Envelope(data=version_out(version))


@router.post("/{plugin_id}/upload", status_code=status.HTTP_201_CREATED, openapi_extra=PACKAGE_FORM)
@streams_body
@raises(ValidationFailed, VersionExists, PackageInvalid, PackageTooLarge, InvalidState)
async def upload_version(
    request: Request,
    plugin: AdminPlugin,
    admin: Admin,
    session: DbSession,
    settings: AppSettings,
    sessions: WriteSessions,
    store: BlobStoreDep,
    keyring: KeyringDep,
) -> Envelope[VersionOut]:
    """Upload a version package (multipart: file, version, changelog); approved and current."""
    await end_checks(session)
    version = await uploads.upload_version(
        request, settings, sessions, store, plugin.id, released_by_admin=admin, keyring=keyring
    )
    return Envelope(data=version_out(version))


@router.post("/{plugin_id}/icon", openapi_extra=ICON_FORM)
@streams_body
@raises(ValidationFailed, IconInvalid, IconTooLarge)
async def upload_icon(
    request: Request,
    plugin: AdminPlugin,
    session: DbSession,
    settings: AppSettings,
    sessions: WriteSessions,
) -> Envelope[PluginOut]:
    """Upload an icon (png, jpeg, svg or webp by content, at most 256 KB)."""
    await end_checks(session)
    icon = await uploads.upload_icon(request, settings, sessions, plugin.id)
    return Envelope(data=await plugin_view(session, icon))


@router.post("/{plugin_id}/review")
@raises(InvalidState)
async def review_plugin(
    body: PluginReviewIn,
    plugin: AdminPluginForWrite,
    admin: Admin,
    session: DbSession,
    keyring: KeyringDep,
) -> Envelope[PluginOut]:
    """Approve (listed; releases the newest pending version of a first publication) or reject.

    A rejected plugin's pending versions stay pending and wait with it: GET
    /versions/pending still lists them, the reviewer console's queue leaves them out until
    the developer resubmits the plugin (a developer PUT), and the plugin's console page
    says how many wait."""
    if body.approved:
        await plugin_review.approve_plugin(
            session,
            plugin,
            reviewer_id=admin.id,
            note=body.review_note,
            approve_pending_version=body.approve_pending_version,
            keyring=keyring,
        )
    else:
        await plugin_review.reject_plugin(
            session, plugin, reviewer_id=admin.id, note=body.review_note
        )
    return Envelope(data=await plugin_view(session, plugin))
