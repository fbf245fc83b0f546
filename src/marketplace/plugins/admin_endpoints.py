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
    ValidationFailed,
    VersionExists,
)
from marketplace.kit.error_codes import raises
from marketplace.kit.routing import api_router, streams_body
from marketplace.kit.schemas import Envelope
from marketplace.kit.state import AppSettings
from marketplace.plugins import review as plugin_review
from marketplace.plugins import service, uploads
from marketplace.plugins.downloads import DownloadOut, download_info
from marketplace.plugins.forms import ICON_FORM, PACKAGE_FORM
from marketplace.plugins.kind import PLUGINS
from marketplace.plugins.lookup import AdminPlugin, AdminPluginForWrite
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
from marketplace.plugins.views import admin_plugin_out, admin_version_out, plugin_out, version_out
from marketplace.publishing import queries
from marketplace.publishing.blobs import forget_blobs
from marketplace.publishing.endpoints import QueueViews, add_admin_list, add_version_queue
from marketplace.publishing.takedown_endpoints import add_admin_takedown
from marketplace.storage.deps import BlobStoreDep
from marketplace.trust.deps import KeyringDep

router = api_router(prefix="/api/v1/admin/plugins", tags=["admin: plugins"])

Search = Annotated[str | None, Query(max_length=200)]


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


add_version_queue(
    router,
    PLUGINS,
    QueueViews(
        list_model=AdminVersionList,
        version_model=VersionOut,
        download_model=DownloadOut,
        version_out=version_out,
        queue_item_out=admin_version_out,
        download=download_info,
    ),
)
add_admin_takedown(router, PLUGINS, version_model=VersionOut, version_out=version_out)


add_admin_list(
    router,
    PLUGINS,
    list_model=AdminPluginList,
    item_out=admin_plugin_out,
    description="Every plugin with counts per review status (counts share the search, "
    "ignore the filter).",
)


@router.post("", status_code=status.HTTP_201_CREATED)
@raises(InvalidCategory, PluginKeyExists)
async def create_plugin(
    body: AdminCreateIn, admin: Admin, session: DbSession
) -> Envelope[PluginOut]:
    """Create an official plugin: approved and listed at once."""
    return Envelope(data=plugin_out(await service.admin_create(session, admin, body)))


@router.get("/{plugin_id}")
async def plugin_detail(plugin: AdminPlugin, session: DbSession) -> Envelope[AdminPluginOut]:
    """One plugin, any state."""
    labels = await queries.reviewer_labels(session, [plugin.reviewed_by])
    return Envelope(data=admin_plugin_out(plugin, labels))


@router.put("/{plugin_id}")
@raises(InvalidCategory, InvalidState)
async def update_plugin(
    body: AdminUpdateIn, plugin: AdminPluginForWrite, session: DbSession
) -> Envelope[PluginOut]:
    """Edit a plugin; pluginKey, source, type and prices cannot change here."""
    return Envelope(data=plugin_out(await service.admin_update(session, plugin, body)))


@router.put("/{plugin_id}/price")
async def set_price(
    body: PriceIn, plugin: AdminPluginForWrite, session: DbSession
) -> Envelope[PluginOut]:
    """Set the price (seed 9.4: prices change only through a price endpoint)."""
    return Envelope(data=plugin_out(await service.set_price(session, plugin, body)))


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
    return Envelope(data=plugin_out(icon))


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
    return Envelope(data=plugin_out(plugin))
