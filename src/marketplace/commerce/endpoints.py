"""User group (CONTRACT 7): download information, install reports, installed list,
purchases and ratings. Login required."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Depends, Request, Response, status

from marketplace.auth.deps import CurrentUser
from marketplace.catalog.schemas import PurchaseStateOut, public_plugin, rating_average
from marketplace.catalog.service import find_plugin, is_listed, is_newer, listed_plugin
from marketplace.commerce import purchases, service
from marketplace.commerce.download_targets import download_target
from marketplace.commerce.payments import PaymentProviderDep
from marketplace.commerce.schemas import (
    InstalledItem,
    InstalledList,
    InstallIn,
    InstallOut,
    PurchaseIn,
    PurchaseOut,
    RateIn,
    RatingOut,
)
from marketplace.db import DbSession
from marketplace.delivery import signals
from marketplace.delivery.downloads import download_counts
from marketplace.errors import (
    InvalidState,
    PluginIsFree,
    PluginNotFound,
    PluginNotPurchased,
    RatingNotAllowed,
    VersionNotApproved,
    VersionNotFound,
)
from marketplace.kit.error_codes import raises
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.kit.sql import plugin_named
from marketplace.models import Plugin, Purchase, SignalKind
from marketplace.plugins.downloads import DownloadOut, download_info
from marketplace.publishing.releases import ReleasesDep

router = api_router(prefix="/api/v1/plugins", tags=["marketplace: user"])

NO_STORE = "private, no-store"
UPDATED: dict[int | str, dict[str, Any]] = {200: {"description": "Updated the existing record"}}
REPEATED: dict[int | str, dict[str, Any]] = {
    200: {"description": "The idempotencyKey was used before: the first purchase"}
}


# Order of checks (CONTRACT 1): the token (CurrentUser) before the plugin's 404, both before
# the body is validated (FastAPI solves dependencies first).
@raises(PluginNotFound)
async def _existing_plugin(plugin_id: str, _user: CurrentUser, session: DbSession) -> Plugin:
    plugin = await find_plugin(session, plugin_id)
    if plugin is None:
        raise PluginNotFound(details=plugin_named(plugin_id))
    return plugin


@raises(PluginNotFound)
async def _listed_plugin(plugin_id: str, _user: CurrentUser, session: DbSession) -> Plugin:
    return await listed_plugin(session, plugin_id)


ExistingPlugin = Annotated[Plugin, Depends(_existing_plugin)]
ListedPlugin = Annotated[Plugin, Depends(_listed_plugin)]


@router.get("/download/{plugin_id}/{version}")
@raises(PluginNotFound, VersionNotFound, VersionNotApproved, PluginNotPurchased)
async def download(
    plugin_id: str,
    version: str,
    user: CurrentUser,
    request: Request,
    response: Response,
    session: DbSession,
    releases: ReleasesDep,
) -> Envelope[DownloadOut]:
    """Download information for an approved version (`latest`: the current one).

    Tarball: a presigned URL valid until expiresAt, with the SHA256 and size to verify.
    Config only: configOnly true and the manifest. Inline code: the manifest.
    Every answer carries `release`, the version's signed release record (CONTRACT 11).
    A paid plugin needs an active purchase (its owner and administrators excepted).
    """
    # The token is checked first (CurrentUser), then the plugin's 404 (CONTRACT 1).
    target = await download_target(request, session, releases, plugin_id, version)
    await purchases.require_active_purchase(session, target.plugin, user)
    state = request.app.state
    info = await download_info(
        state.blob_store,
        state.settings.download_url_seconds,
        target.plugin,
        target.version,
        target.release,
    )
    download_counts(request.app).add(target.plugin.id)
    response.headers["Cache-Control"] = NO_STORE
    return Envelope(data=info)


@router.post("/install/{plugin_id}", status_code=status.HTTP_201_CREATED, responses=UPDATED)
@raises(VersionNotFound, VersionNotApproved, PluginNotPurchased, InvalidState)
async def install(
    user: CurrentUser,
    plugin: ExistingPlugin,
    body: InstallIn,
    request: Request,
    response: Response,
    session: DbSession,
) -> Envelope[InstallOut]:
    """Report an install of an approved version: 201 first, 200 when it updates the record."""
    chosen = await service.downloadable_version(session, plugin, body.version)
    await purchases.require_active_purchase(session, plugin, user)
    record, created = await service.report_install(session, user, plugin, chosen)
    # The version's install signal: statistics and the automatic halt (CONTRACT 16).
    await signals.record(
        session,
        request.app.state.settings,
        user_id=user.id,
        plugin=plugin,
        version=chosen,
        kind=SignalKind.INSTALL,
    )
    if not created:
        response.status_code = status.HTTP_200_OK
    return Envelope(
        data=InstallOut(
            plugin_id=plugin.id, version=record.version, installed_at=record.installed_at
        )
    )


@router.get("/installed")
async def installed(
    user: CurrentUser, response: Response, session: DbSession
) -> Envelope[InstalledList]:
    """The caller's installed plugins; updateAvailable when a newer version is current."""
    rows = await service.installed(session, user.id)
    states = await purchases.purchase_states(session, user.id, [r.plugin.id for r in rows])
    items = []
    for row in rows:
        state = states.get(row.plugin.id, purchases.NOT_PURCHASED)
        purchase = PurchaseStateOut(
            purchased=state.purchased, active=state.active, expires_at=state.expires_at
        )
        items.append(
            InstalledItem(
                plugin=public_plugin(row.plugin, row.developer_name, row.org, purchase),
                version=row.install.version,
                installed_at=row.install.installed_at,
                update_available=is_listed(row.plugin)
                and is_newer(row.plugin.latest_version, row.install.version),
            )
        )
    response.headers["Cache-Control"] = NO_STORE
    return Envelope(data=InstalledList(items=items))


def _purchase_out(purchase: Purchase) -> PurchaseOut:
    return PurchaseOut(
        id=purchase.id,
        plugin_id=purchase.plugin_id,
        price=purchase.price,
        validity_days=purchase.validity_days,
        purchased_at=purchase.purchased_at,
        expires_at=purchase.expires_at,
        status=purchase.status,
    )


@router.post("/purchase/{plugin_id}", status_code=status.HTTP_201_CREATED, responses=REPEATED)
@raises(PluginIsFree, PluginNotPurchased, InvalidState)
async def purchase(
    plugin_id: str,
    user: CurrentUser,
    plugin: ExistingPlugin,
    response: Response,
    session: DbSession,
    provider: PaymentProviderDep,
    body: Annotated[PurchaseIn | None, Body()] = None,
) -> Envelope[PurchaseOut]:
    """Buy a paid plugin at its current price. A repeated idempotencyKey returns the first
    purchase (200). Buying again while a subscription is active extends it from its expiry."""
    key = body.idempotency_key if body is not None else None
    bought, created = await purchases.buy(session, provider, user, plugin, key, ref=plugin_id)
    if not created:
        response.status_code = status.HTTP_200_OK
    return Envelope(data=_purchase_out(bought))


@router.post("/rate/{plugin_id}", status_code=status.HTTP_201_CREATED, responses=UPDATED)
@raises(RatingNotAllowed, InvalidState)
async def rate(
    user: CurrentUser,
    plugin: ListedPlugin,
    body: RateIn,
    response: Response,
    session: DbSession,
) -> Envelope[RatingOut]:
    """Rate a plugin you installed or purchased (score 1-5, comment up to 2000 characters):
    201 the first time, 200 when it replaces your earlier rating."""
    result = await service.rate(session, user, plugin, body.score, body.comment)
    if not result.created:
        response.status_code = status.HTTP_200_OK
    rating = result.rating
    return Envelope(
        data=RatingOut(
            id=rating.id,
            plugin_id=rating.plugin_id,
            score=rating.score,
            comment=rating.comment,
            created_at=rating.created_at,
            updated_at=rating.updated_at,
            rating_average=rating_average(result.rating_sum, result.rating_count),
            rating_count=result.rating_count,
        )
    )
