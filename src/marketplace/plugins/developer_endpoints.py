"""Plugin developer group (seed 4.2): prefix /api/v1/developer/plugins."""

from __future__ import annotations

from fastapi import Request, status

from marketplace.auth import pat
from marketplace.auth.deps import Developer, TokenGrant, VerifiedDeveloper
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
from marketplace.kit.pagination import PageSizeParams
from marketplace.kit.routing import api_router, streams_body
from marketplace.kit.schemas import Envelope
from marketplace.kit.state import AppSettings
from marketplace.models import ReviewStatus
from marketplace.orgs import service as orgs
from marketplace.orgs.schemas import TransferIn
from marketplace.plugins import service, uploads
from marketplace.plugins.forms import ICON_FORM, PACKAGE_FORM
from marketplace.plugins.kind import PLUGINS
from marketplace.plugins.lookup import (
    OwnedPlugin,
    OwnedPluginForUpload,
    OwnedPluginForWrite,
    OwnedPluginVersionForWrite,
)
from marketplace.plugins.schemas import (
    CreateVersionIn,
    DeveloperPluginDetail,
    DeveloperPluginList,
    DeveloperUpdateIn,
    PluginOut,
    PriceIn,
    PublishIn,
    PurchaseSummary,
    TakedownOut,
    VersionOut,
)
from marketplace.plugins.views import plugin_out, plugin_view, plugin_views, version_out
from marketplace.publishing import queries, review
from marketplace.publishing.audit import Trigger
from marketplace.publishing.endpoints import ItemStatus
from marketplace.publishing.takedown import take_down_version
from marketplace.publishing.takedown_endpoints import OWN_TAKEDOWN_DESCRIPTION, TakedownIn
from marketplace.storage.deps import BlobStoreDep

router = api_router(prefix="/api/v1/developer/plugins", tags=["developer: plugins"])


@router.get("")
async def list_own_plugins(
    user: Developer, session: DbSession, page: PageSizeParams, review_status: ItemStatus = None
) -> Envelope[DeveloperPluginList]:
    """The plugins the caller may operate now, in every state, newest first: its personal
    ones and those of the organizations it belongs to; filter by reviewStatus."""
    wanted = review_status.value if review_status else None
    plugins, total = await queries.developer_items(session, PLUGINS, user, page, wanted)
    return Envelope(
        data=DeveloperPluginList(
            items=await plugin_views(session, plugins),
            total=total,
            page=page.page,
            page_size=page.size,
        )
    )


@router.post("/{plugin_id}/versions/{version_id}/takedown", description=OWN_TAKEDOWN_DESCRIPTION)
async def take_down_own_plugin_version(
    body: TakedownIn, user: VerifiedDeveloper, found: OwnedPluginVersionForWrite, session: DbSession
) -> Envelope[VersionOut]:
    plugin, version = found
    await take_down_version(
        session,
        PLUGINS,
        plugin,
        version,
        actor_id=user.id,
        reason=body.reason,
        trigger=Trigger.DEVELOPER,
    )
    return Envelope(data=version_out(version))


@router.post("/publish", status_code=status.HTTP_201_CREATED)
@raises(NotFound, InvalidCategory, PluginKeyExists)
async def publish(
    body: PublishIn, user: VerifiedDeveloper, session: DbSession, grant: TokenGrant
) -> Envelope[PluginOut]:
    """Create a plugin: pending review, no version yet. With `org` (a slug), the plugin
    belongs to that organization (the caller must be a member: 403 otherwise; an unknown
    slug is 404) and every member operates it; ownerId stays the caller."""
    # The one developer write that names its plugin in the body, not the path.
    pat.check_plugin(grant, body.plugin_key)
    return Envelope(data=await plugin_view(session, await service.publish(session, user, body)))


@router.get("/{plugin_id}")
async def plugin_detail(plugin: OwnedPlugin, session: DbSession) -> Envelope[DeveloperPluginDetail]:
    """All plugin fields, the version history (newest first) and the last 20 purchases."""
    versions = await queries.versions_of(session, PLUGINS, plugin.id)
    purchases = await service.recent_purchases(session, plugin.id)
    return Envelope(
        data=DeveloperPluginDetail(
            **dict(await plugin_view(session, plugin)),
            versions=[version_out(v) for v in versions],
            recent_purchases=[PurchaseSummary.model_validate(p) for p in purchases],
        )
    )


@router.put("/{plugin_id}")
@raises(InvalidCategory, InvalidState)
async def update_plugin(
    body: DeveloperUpdateIn, plugin: OwnedPluginForWrite, session: DbSession
) -> Envelope[PluginOut]:
    """Edit basic information; a rejected plugin goes back to pending review."""
    updated = await service.update(session, plugin, body, by_developer=True)
    return Envelope(data=await plugin_view(session, updated))


@router.put("/{plugin_id}/price")
async def set_price(
    body: PriceIn, plugin: OwnedPluginForWrite, session: DbSession
) -> Envelope[PluginOut]:
    """Set the price; 0 makes the plugin free; validityDays 0 or omitted means permanent."""
    return Envelope(data=await plugin_view(session, await service.set_price(session, plugin, body)))


@router.post("/{plugin_id}/create-version", status_code=status.HTTP_201_CREATED)
@raises(VersionExists, PackageInvalid, InvalidState)
async def create_version(
    body: CreateVersionIn, plugin: OwnedPluginForWrite, session: DbSession
) -> Envelope[VersionOut]:
    """Create a pending ConfigOnly or inline-code version from a manifest (no package).

    The automatic checks' findings are kept on the version: an error rejects it at once;
    warnings and infos (changes against the last approved version) wait for the reviewer.
    """
    version = await service.create_version_from_manifest(
        session,
        plugin,
        version=body.version,
        changelog=body.changelog,
        manifest=body.manifest,
        channel=body.channel,
        released_by_admin=None,
        keyring=None,
    )
    return Envelope(data=version_out(version))


@router.post(
    "/{plugin_id}/upload-version",
    status_code=status.HTTP_201_CREATED,
    openapi_extra=PACKAGE_FORM,
)
@streams_body
@raises(ValidationFailed, VersionExists, PackageInvalid, PackageTooLarge, InvalidState)
async def upload_version(
    request: Request,
    plugin: OwnedPluginForUpload,
    caller: VerifiedDeveloper,
    session: DbSession,
    settings: AppSettings,
    sessions: WriteSessions,
    store: BlobStoreDep,
) -> Envelope[VersionOut]:
    """Upload a .tar.gz package (multipart: file, version, changelog) as a pending version.

    The manifest id must equal the pluginKey and the manifest version the version field.
    The automatic checks' findings are kept on the version: an error rejects it at once;
    warnings and infos (its files, changes against the last approved version) wait for the
    reviewer.
    """
    await end_checks(session)
    version = await uploads.upload_version(
        request, settings, sessions, store, plugin.id, released_by_admin=None, operator=caller
    )
    return Envelope(data=version_out(version))


@router.post("/{plugin_id}/icon", openapi_extra=ICON_FORM)
@streams_body
@raises(ValidationFailed, IconInvalid, IconTooLarge)
async def upload_icon(
    request: Request,
    plugin: OwnedPluginForUpload,
    caller: VerifiedDeveloper,
    session: DbSession,
    settings: AppSettings,
    sessions: WriteSessions,
) -> Envelope[PluginOut]:
    """Upload an icon (png, jpeg, svg or webp by content, at most 256 KB), kept as a data URL."""
    await end_checks(session)
    icon = await uploads.upload_icon(request, settings, sessions, plugin.id, operator=caller)
    return Envelope(data=await plugin_view(session, icon))


@router.delete("/{plugin_id}")
@raises(InvalidState)
async def take_down(plugin: OwnedPluginForWrite, session: DbSession) -> Envelope[TakedownOut]:
    """Soft takedown: distribution stops; versions and purchases are kept."""
    await review.take_down(session, PLUGINS, plugin)
    return Envelope(data=TakedownOut(id=plugin.id, review_status=ReviewStatus.TAKEN_DOWN))


@router.post("/{plugin_id}/transfer")
@raises(NotFound, InvalidState)
async def transfer(
    body: TransferIn, user: VerifiedDeveloper, plugin: OwnedPluginForWrite, session: DbSession
) -> Envelope[PluginOut]:
    """Move a plugin the caller owns personally into an organization the caller owns: every
    member operates it from then on. An unknown slug is 404; an organization the caller
    does not own, 403; a plugin that belongs to an organization already, 409."""
    org = await orgs.transfer(session, user, plugin, body.org)
    return Envelope(data=plugin_out(plugin, orgs.ref_of(org)))
