"""Purchases (CONTRACT 7): price copied at purchase time, idempotency keys, subscriptions.

Concurrency: a purchase locks the buyer's user row first (PostgreSQL; SQLite's BEGIN
IMMEDIATE already serialises writers), so a buyer's purchases run one at a time: a repeated
idempotency key finds the first purchase, and renewals chain their expiries. The unique
constraint on (user_id, idempotency_key) stays the last word should anything slip by.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import and_, case, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.catalog.service import is_listed
from marketplace.commerce.payments import ChargeRequest, ChargeStatus, PaymentProvider
from marketplace.delivery import counters
from marketplace.errors import (
    InvalidState,
    NotFound,
    PluginIsFree,
    PluginNotFound,
    PluginNotPurchased,
)
from marketplace.kit.dbtypes import new_id, utcnow
from marketplace.kit.sql import plugin_named
from marketplace.models import Plugin, Purchase, Role, User
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.lookup import operates

PAID = ChargeStatus.PAID.value
PENDING = ChargeStatus.PENDING.value
FAILED = ChargeStatus.FAILED.value


@dataclass(frozen=True)
class PurchaseState:
    """purchased: a paid purchase exists; active: one is permanent or unexpired;
    expires_at: the latest expiry (None when permanent or never bought)."""

    purchased: bool
    active: bool
    expires_at: datetime | None


NOT_PURCHASED = PurchaseState(purchased=False, active=False, expires_at=None)


def _bought(plugin_ids: Iterable[str]) -> tuple[list[str], list[Any]]:
    """The distinct ids, and per plugin bought: its id, whether a purchase is permanent, and
    the latest expiry (the columns `_states` reads)."""
    columns = [
        Purchase.plugin_id,
        func.max(case((Purchase.expires_at.is_(None), 1), else_=0)),
        func.max(Purchase.expires_at),
    ]
    return list(dict.fromkeys(plugin_ids)), columns


def _states(rows: Iterable[Any]) -> dict[str, PurchaseState]:
    now = utcnow()
    states: dict[str, PurchaseState] = {}
    for plugin_id, permanent, latest in rows:
        if plugin_id is None:  # the caller's row, joined to no purchase
            continue
        if permanent:
            states[plugin_id] = PurchaseState(purchased=True, active=True, expires_at=None)
        else:
            active = latest is not None and latest > now
            states[plugin_id] = PurchaseState(purchased=True, active=active, expires_at=latest)
    return states


async def purchase_states(
    session: AsyncSession, user_id: str, plugin_ids: Iterable[str]
) -> dict[str, PurchaseState]:
    """The caller's purchase state for a whole page of plugins, in one query.

    Plugins never bought are absent from the result: use `.get(id, NOT_PURCHASED)`.
    """
    ids, columns = _bought(plugin_ids)
    if not ids:
        return {}
    rows = await session.execute(
        select(*columns)
        .where(Purchase.user_id == user_id, Purchase.plugin_id.in_(ids), Purchase.status == PAID)
        .group_by(Purchase.plugin_id)
    )
    return _states(rows)


async def caller_purchase_states(
    session: AsyncSession, user_id: str, plugin_ids: Iterable[str]
) -> dict[str, PurchaseState] | None:
    """`purchase_states`, and whether the account exists, in one query: None when it does
    not (a cached public read's logged-in caller, whose token alone was checked)."""
    ids, columns = _bought(plugin_ids)
    joined = and_(Purchase.user_id == User.id, Purchase.plugin_id.in_(ids), Purchase.status == PAID)
    rows = (
        await session.execute(
            select(*columns)
            .select_from(User)
            .outerjoin(Purchase, joined)
            .where(User.id == user_id)
            .group_by(Purchase.plugin_id)
        )
    ).all()
    if not rows:
        return None
    return _states(rows)


async def purchase_state(session: AsyncSession, user_id: str, plugin_id: str) -> PurchaseState:
    return (await purchase_states(session, user_id, [plugin_id])).get(plugin_id, NOT_PURCHASED)


async def needs_no_purchase(session: AsyncSession, plugin: Plugin, user: User) -> bool:
    """Free plugins, and paid ones for those who operate them (the owner, or the members of
    its organization, read now) and for administrators."""
    if plugin.is_free or Role(user.role).at_least(Role.ADMIN):
        return True
    return await operates(session, PLUGINS, plugin, user)


async def require_active_purchase(session: AsyncSession, plugin: Plugin, user: User) -> None:
    """402 PLUGIN_NOT_PURCHASED for a paid plugin without an active purchase."""
    if await needs_no_purchase(session, plugin, user):
        return
    if not (await purchase_state(session, user.id, plugin.id)).active:
        raise PluginNotPurchased()


async def _lock_buyer(session: AsyncSession, user_id: str) -> None:
    await session.execute(select(User.id).where(User.id == user_id).with_for_update())


async def _by_key(session: AsyncSession, user_id: str, key: str) -> Purchase | None:
    return await session.scalar(
        select(Purchase)
        .where(Purchase.user_id == user_id, Purchase.idempotency_key == key)
        .execution_options(populate_existing=True)
    )


def _replay(earlier: Purchase, plugin: Plugin) -> Purchase:
    if earlier.plugin_id != plugin.id:
        raise InvalidState("This idempotencyKey was already used for another plugin")
    return earlier


@dataclass(frozen=True)
class _Standing:
    permanent: bool
    pending: bool


async def _standing(session: AsyncSession, user_id: str, plugin_id: str) -> _Standing:
    row = (
        await session.execute(
            select(
                func.max(
                    case(((Purchase.status == PAID) & Purchase.expires_at.is_(None), 1), else_=0)
                ),
                func.max(case((Purchase.status == PENDING, 1), else_=0)),
            ).where(Purchase.user_id == user_id, Purchase.plugin_id == plugin_id)
        )
    ).one()
    return _Standing(permanent=bool(row[0]), pending=bool(row[1]))


async def _settle(session: AsyncSession, purchase: Purchase) -> None:
    """Mark paid; a subscription runs from now, or from the current expiry while active."""
    now = utcnow()
    if purchase.validity_days is not None:
        current = await session.scalar(
            select(func.max(Purchase.expires_at)).where(
                Purchase.user_id == purchase.user_id,
                Purchase.plugin_id == purchase.plugin_id,
                Purchase.status == PAID,
                Purchase.expires_at > now,
                Purchase.id != purchase.id,
            )
        )
        start = max(now, current) if current is not None else now
        purchase.expires_at = start + timedelta(days=purchase.validity_days)
    else:
        purchase.expires_at = None
    purchase.status = PAID
    if purchase.plugin_id is not None:
        amounts: dict[str, int | Decimal] = {"purchases": 1, "revenue": purchase.price}
        await counters.add_daily(session, purchase.plugin_id, amounts)


async def buy(
    session: AsyncSession,
    provider: PaymentProvider,
    user: User,
    plugin: Plugin,
    idempotency_key: str | None,
    *,
    ref: str,
) -> tuple[Purchase, bool]:
    """The purchase and whether it was made now (False: the first one for this key). `ref`
    is the plugin as the request named it (id or key): an unlisted plugin's 404 says no more."""
    await _lock_buyer(session, user.id)
    if idempotency_key is not None:
        earlier = await _by_key(session, user.id, idempotency_key)
        if earlier is not None:
            return _replay(earlier, plugin), False
    if not is_listed(plugin):
        raise PluginNotFound(details=plugin_named(ref))
    if plugin.is_free:
        raise PluginIsFree()
    if await operates(session, PLUGINS, plugin, user):
        raise InvalidState("You cannot purchase your own plugin")
    standing = await _standing(session, user.id, plugin.id)
    if standing.permanent:
        raise InvalidState("This plugin is already purchased permanently")
    if standing.pending:
        raise InvalidState("A purchase of this plugin is awaiting payment confirmation")

    purchase = Purchase(
        id=new_id(),
        user_id=user.id,
        plugin_id=plugin.id,
        plugin_key=plugin.plugin_key,
        price=plugin.price,
        validity_days=plugin.validity_days,
        status=PENDING,
        idempotency_key=idempotency_key,
        provider=provider.name,
        purchased_at=utcnow(),
    )
    try:
        # Added inside the savepoint: begin_nested() flushes pending objects before it opens
        # the SAVEPOINT, and a conflict there would end the whole transaction.
        async with session.begin_nested():
            session.add(purchase)
            await session.flush()
    except IntegrityError:
        if idempotency_key is None:
            raise
        earlier = await _by_key(session, user.id, idempotency_key)
        if earlier is None:
            raise
        return _replay(earlier, plugin), False

    result = await provider.charge(
        ChargeRequest(
            purchase_id=purchase.id,
            user_id=user.id,
            plugin_id=plugin.id,
            plugin_key=plugin.plugin_key,
            amount=purchase.price,
            idempotency_key=idempotency_key,
        )
    )
    if result.status == ChargeStatus.FAILED:
        # The request's transaction rolls back: nothing is recorded, a retry may try again.
        raise PluginNotPurchased("The payment was declined")
    purchase.provider_ref = result.reference
    if result.status == ChargeStatus.PAID:
        await _settle(session, purchase)
    await session.flush()
    return purchase, True


async def confirm_purchase(
    session: AsyncSession, purchase_id: str, *, paid: bool, reference: str | None = None
) -> Purchase:
    """A gateway's late answer for a pending purchase; repeated confirmations change nothing."""
    purchase = await session.scalar(
        select(Purchase)
        .where(Purchase.id == purchase_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if purchase is None:
        raise NotFound("Purchase does not exist")
    if purchase.status != PENDING:
        return purchase
    if reference is not None:
        purchase.provider_ref = reference
    if paid:
        await _lock_buyer(session, purchase.user_id)
        await _settle(session, purchase)
    else:
        purchase.status = FAILED
    await session.flush()
    return purchase
