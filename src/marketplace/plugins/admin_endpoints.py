"""Plugin admin group (seed 4.5): prefix /api/v1/admin/plugins, plus audit logs."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import BackgroundTasks, Query, Request, status

from marketplace.auth.deps import Admin
from marketplace.commerce.schemas import DownloadOut, download_out
from marketplace.commerce.service import download_info
from marketplace.db import DbSession
from marketplace.kit.pagination import LimitParams
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.models import ReviewStatus
from marketplace.plugins import service, uploads
from marketplace.plugins.forms import ICON_FORM, PACKAGE_FORM
from marketplace.plugins.lookup import AdminPlugin, find_plugin, find_version
from marketplace.plugins.schemas import (
    AdminCreateIn,
    AdminPluginList,
    AdminPluginOut,
    AdminUpdateIn,
    AdminVersionList,
    AuditLogList,
    CategoryIn,
    CategoryItems,
    CategoryOut,
    CategoryUpdateIn,
    CreateVersionIn,
    DeletedOut,
    PluginOut,
    PluginReviewIn,
    PriceIn,
    StatusCounts,
    VersionItems,
    VersionOut,
    VersionReviewIn,
)
from marketplace.plugins.views import (
    admin_plugin_out,
    admin_version_out,
    audit_out,
    plugin_out,
    version_out,
)
from marketplace.review import engine
from marketplace.storage.references import forget_blob

router = api_router(prefix="/api/v1/admin/plugins", tags=["admin: plugins"])
audit_router = api_router(prefix="/api/v1/admin/audit-logs", tags=["admin: audit"])

Search = Annotated[str | None, Query(max_length=200)]


# Static paths first, so "categories" and "versions" are never read as a plugin id.


@router.get("/categories")
async def list_categories(_admin: Admin, session: DbSession) -> Envelope[CategoryItems]:
    """Every category definition (the publishing tool validates against it)."""
    rows = await service.list_categories(session)
    return Envelope(data=CategoryItems(items=[CategoryOut.model_validate(c) for c in rows]))


@router.post("/categories", status_code=status.HTTP_201_CREATED)
async def add_category(
    body: CategoryIn, _admin: Admin, session: DbSession
) -> Envelope[CategoryOut]:
    """Add a category."""
    return Envelope(data=CategoryOut.model_validate(await service.add_category(session, body)))


@router.put("/categories/{key}")
async def update_category(
    key: str, body: CategoryUpdateIn, _admin: Admin, session: DbSession
) -> Envelope[CategoryOut]:
    """Rename a category or change its order."""
    return Envelope(
        data=CategoryOut.model_validate(await service.update_category(session, key, body))
    )


@router.delete("/categories/{key}")
async def delete_category(key: str, _admin: Admin, session: DbSession) -> Envelope[dict[str, str]]:
    """Delete a category no plugin uses (409 INVALID_STATE otherwise)."""
    await service.delete_category(session, key)
    return Envelope(data={"key": key})


@router.get("/versions/pending")
async def list_versions(
    _admin: Admin,
    session: DbSession,
    page: LimitParams,
    review_status: Annotated[
        ReviewStatus | Literal["all"], Query(alias="reviewStatus")
    ] = ReviewStatus.PENDING,
    search: Search = None,
) -> Envelope[AdminVersionList]:
    """Versions across plugins; reviewStatus defaults to pending, `all` lists every state."""
    wanted = None if review_status == "all" else str(review_status)
    rows, total, counts = await service.admin_versions(session, page, wanted, search)
    labels = await service.reviewer_labels(session, (v.reviewed_by for v, _ in rows))
    return Envelope(
        data=AdminVersionList(
            items=[admin_version_out(v, p, labels) for v, p in rows],
            total=total,
            page=page.page,
            limit=page.size,
            counts=StatusCounts(**counts),
        )
    )


@router.post("/versions/{version_id}/review")
async def review_version(
    version_id: str, body: VersionReviewIn, admin: Admin, session: DbSession
) -> Envelope[VersionOut]:
    """Approve (becomes current) or reject a pending version."""
    version = await find_version(session, version_id)
    plugin = await engine.lock_plugin(session, version.plugin_id)
    version = await find_version(session, version_id, lock=True)
    if body.approved:
        await engine.approve_version(
            session, plugin, version, reviewer_id=admin.id, note=body.review_note
        )
    else:
        await engine.reject_version(session, version, reviewer_id=admin.id, note=body.review_note)
    return Envelope(data=version_out(version))


@router.get("/versions/{version_id}/download")
async def download_version(
    version_id: str, request: Request, _admin: Admin, session: DbSession
) -> Envelope[DownloadOut]:
    """Download information for any version, pending ones included (reviewers read them)."""
    version = await find_version(session, version_id)
    plugin = await find_plugin(session, version.plugin_id)
    state = request.app.state
    info = await download_info(
        state.blob_store, state.settings.download_url_seconds, plugin, version
    )
    return Envelope(data=download_out.validate_python(info))


@router.get("")
async def list_plugins(
    _admin: Admin,
    session: DbSession,
    page: LimitParams,
    review_status: Annotated[ReviewStatus | None, Query(alias="reviewStatus")] = None,
    search: Search = None,
) -> Envelope[AdminPluginList]:
    """Every plugin with counts per review status (counts share the search, ignore the filter)."""
    plugins, total, counts = await service.admin_plugins(session, page, review_status, search)
    labels = await service.reviewer_labels(session, (p.reviewed_by for p in plugins))
    return Envelope(
        data=AdminPluginList(
            items=[admin_plugin_out(p, labels) for p in plugins],
            total=total,
            page=page.page,
            limit=page.size,
            counts=StatusCounts(**counts),
        )
    )


@router.post("", status_code=status.HTTP_201_CREATED)
async def create_plugin(
    body: AdminCreateIn, admin: Admin, session: DbSession
) -> Envelope[PluginOut]:
    """Create an official plugin: approved and listed at once."""
    return Envelope(data=plugin_out(await service.admin_create(session, admin, body)))


@router.get("/{plugin_id}")
async def plugin_detail(plugin: AdminPlugin, session: DbSession) -> Envelope[AdminPluginOut]:
    """One plugin, any state."""
    labels = await service.reviewer_labels(session, [plugin.reviewed_by])
    return Envelope(data=admin_plugin_out(plugin, labels))


@router.put("/{plugin_id}")
async def update_plugin(
    body: AdminUpdateIn, plugin: AdminPlugin, session: DbSession
) -> Envelope[PluginOut]:
    """Edit a plugin; pluginKey, source, type and prices cannot change here."""
    return Envelope(data=plugin_out(await service.admin_update(session, plugin, body)))


@router.put("/{plugin_id}/price")
async def set_price(body: PriceIn, plugin: AdminPlugin, session: DbSession) -> Envelope[PluginOut]:
    """Set the price (seed 9.4: prices change only through a price endpoint)."""
    return Envelope(data=plugin_out(await service.set_price(session, plugin, body)))


@router.delete("/{plugin_id}")
async def delete_plugin(
    plugin: AdminPlugin, session: DbSession, request: Request, background: BackgroundTasks
) -> Envelope[DeletedOut]:
    """Delete the plugin and its versions; purchases and audit records stay."""
    keys = await service.delete_plugin(session, plugin)
    # After the commit (the response is sent after it), drop blobs nothing references now.
    background.add_task(_drop_unreferenced_blobs, request, keys)
    return Envelope(data=DeletedOut(id=plugin.id, deleted=True))


async def _drop_unreferenced_blobs(request: Request, keys: list[str]) -> None:
    for key in keys:
        await forget_blob(request.app.state.sessionmaker, request.app.state.blob_store, key)


@router.get("/{plugin_id}/versions")
async def plugin_versions(plugin: AdminPlugin, session: DbSession) -> Envelope[VersionItems]:
    """All versions of a plugin, every state, newest first."""
    versions = await service.versions_of(session, plugin.id)
    return Envelope(data=VersionItems(items=[version_out(v) for v in versions]))


@router.post("/{plugin_id}/create-version", status_code=status.HTTP_201_CREATED)
async def create_version(
    body: CreateVersionIn, plugin: AdminPlugin, admin: Admin, session: DbSession
) -> Envelope[VersionOut]:
    """Create a ConfigOnly or inline-code version; approved and current at once."""
    version = await service.create_version_from_manifest(
        session,
        plugin,
        version=body.version,
        changelog=body.changelog,
        manifest=body.manifest,
        released_by_admin=admin,
    )
    return Envelope(data=version_out(version))


@router.post("/{plugin_id}/upload", status_code=status.HTTP_201_CREATED, openapi_extra=PACKAGE_FORM)
async def upload_version(
    request: Request, plugin: AdminPlugin, admin: Admin, session: DbSession
) -> Envelope[VersionOut]:
    """Upload a version package (multipart: file, version, changelog); approved and current."""
    version = await uploads.upload_version(request, session, plugin, released_by_admin=admin)
    return Envelope(data=version_out(version))


@router.post("/{plugin_id}/icon", openapi_extra=ICON_FORM)
async def upload_icon(
    request: Request, plugin: AdminPlugin, session: DbSession
) -> Envelope[PluginOut]:
    """Upload an icon (png, jpeg, svg or webp by content, at most 256 KB)."""
    return Envelope(data=plugin_out(await uploads.upload_icon(request, session, plugin)))


@router.post("/{plugin_id}/review")
async def review_plugin(
    body: PluginReviewIn, plugin: AdminPlugin, admin: Admin, session: DbSession
) -> Envelope[PluginOut]:
    """Approve (listed; releases the newest pending version of a first publication) or reject."""
    if body.approved:
        await engine.approve_plugin(
            session,
            plugin,
            reviewer_id=admin.id,
            note=body.review_note,
            approve_pending_version=body.approve_pending_version,
        )
    else:
        await engine.reject_plugin(session, plugin, reviewer_id=admin.id, note=body.review_note)
    return Envelope(data=plugin_out(plugin))


@audit_router.get("")
async def list_audit_logs(
    _admin: Admin,
    session: DbSession,
    page: LimitParams,
    resource_type: Annotated[str | None, Query(alias="resourceType", max_length=40)] = None,
    resource_id: Annotated[str | None, Query(alias="resourceId", max_length=64)] = None,
    action: Annotated[str | None, Query(max_length=40)] = None,
) -> Envelope[AuditLogList]:
    """Review audit records, newest first (append-only: nothing edits or deletes them)."""
    rows, total = await service.audit_logs(
        session, page, resource_type=resource_type, resource_id=resource_id, action=action
    )
    return Envelope(
        data=AuditLogList(
            items=[audit_out(r) for r in rows], total=total, page=page.page, limit=page.size
        )
    )
