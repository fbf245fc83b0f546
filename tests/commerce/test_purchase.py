"""POST /api/v1/plugins/purchase/{pluginId}, the payment-provider interface, confirmation."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.commerce.payments import ChargeRequest, ChargeResult, ChargeStatus
from marketplace.commerce.purchases import confirm_purchase
from marketplace.errors import NotFound
from marketplace.models import Purchase
from tests.commerce.helpers import FakeBlobStore
from tests.factories import Account, Factory
from tests.helpers import err, field_names, ok

API = "/api/v1/plugins"


async def buy(
    client: httpx.AsyncClient, user: Account, plugin_id: str, key: str | None = None
) -> httpx.Response:
    body = {"idempotencyKey": key} if key is not None else {}
    return await client.post(f"{API}/purchase/{plugin_id}", json=body, headers=user.headers)


async def purchases_of(
    sessionmaker: async_sessionmaker[AsyncSession], user: Account
) -> list[Purchase]:
    async with sessionmaker() as session:
        rows = await session.scalars(
            select(Purchase).where(Purchase.user_id == user.id).order_by(Purchase.purchased_at)
        )
        return list(rows)


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value)


class PendingProvider:
    """A gateway that confirms later: every charge stays pending until confirm_purchase."""

    name = "test-gateway"

    def __init__(self) -> None:
        self.charged: list[ChargeRequest] = []

    async def charge(self, request: ChargeRequest) -> ChargeResult:
        self.charged.append(request)
        return ChargeResult(ChargeStatus.PENDING, reference=f"gw-{len(self.charged)}")


class DecliningProvider:
    name = "declining"

    async def charge(self, request: ChargeRequest) -> ChargeResult:
        return ChargeResult(ChargeStatus.FAILED)


async def test_purchase_of_paid_plugin_is_201_and_settles_at_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, price="19.90")
    data = ok(await buy(client, user, plugin.plugin_key), 201)
    assert set(data) == {
        "id",
        "pluginId",
        "price",
        "validityDays",
        "purchasedAt",
        "expiresAt",
        "status",
    }
    assert (data["pluginId"], data["price"], data["status"]) == (plugin.id, 19.9, "paid")
    assert (data["validityDays"], data["expiresAt"]) == (None, None)
    [row] = await purchases_of(sessionmaker, user)
    assert (row.id, row.status, row.price, row.provider) == (
        data["id"],
        "paid",
        Decimal("19.90"),
        "builtin",
    )


async def test_purchase_shows_on_detail_for_the_buyer(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    ok(await buy(client, user, plugin.id), 201)
    detail = ok(await client.get(f"{API}/detail/{plugin.id}", headers=user.headers))
    assert detail["purchase"] == {"purchased": True, "active": True, "expiresAt": None}


async def test_purchase_unlocks_download(
    client: httpx.AsyncClient, factory: Factory, blob_store: FakeBlobStore
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.version(plugin)
    err(
        await client.get(f"{API}/download/{plugin.id}/latest", headers=user.headers),
        402,
        "PLUGIN_NOT_PURCHASED",
    )
    ok(await buy(client, user, plugin.id), 201)
    assert ok(await client.get(f"{API}/download/{plugin.id}/latest", headers=user.headers))["url"]


async def test_purchase_copies_the_price_of_the_moment(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, price="5.00", validity_days=30)
    ok(await buy(client, user, plugin.id), 201)
    await factory.update_plugin(plugin, price=Decimal("50.00"), validity_days=365)
    [row] = await purchases_of(sessionmaker, user)
    assert (row.price, row.validity_days) == (Decimal("5.00"), 30)


async def test_purchase_without_a_body_is_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    response = await client.post(f"{API}/purchase/{plugin.id}", headers=user.headers)
    assert ok(response, 201)["status"] == "paid"


async def test_repeated_idempotency_key_returns_the_first_purchase(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, validity_days=30)
    first = ok(await buy(client, user, plugin.id, key="order-1"), 201)
    again = ok(await buy(client, user, plugin.id, key="order-1"), 200)
    assert again == first
    assert len(await purchases_of(sessionmaker, user)) == 1


async def test_ten_concurrent_identical_purchases_charge_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, validity_days=30)
    responses = await asyncio.gather(
        *(buy(client, user, plugin.id, key="same-click") for _ in range(10))
    )
    assert sorted(r.status_code for r in responses) == [200] * 9 + [201]
    assert len({r.json()["data"]["id"] for r in responses}) == 1
    [row] = await purchases_of(sessionmaker, user)
    assert row.idempotency_key == "same-click"
    # One 30-day period, not ten chained renewals.
    assert row.expires_at is not None
    assert row.expires_at < datetime.now(UTC) + timedelta(days=31)


async def test_same_idempotency_key_of_another_user_is_a_new_purchase(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    one, two = await factory.user(), await factory.user()
    plugin = await factory.plugin(is_free=False)
    first = ok(await buy(client, one, plugin.id, key="k"), 201)
    second = ok(await buy(client, two, plugin.id, key="k"), 201)
    assert first["id"] != second["id"]


async def test_idempotency_key_used_for_another_plugin_is_409(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    first = await factory.plugin(is_free=False)
    second = await factory.plugin(is_free=False)
    ok(await buy(client, user, first.id, key="reused"), 201)
    err(await buy(client, user, second.id, key="reused"), 409, "INVALID_STATE")
    assert len(await purchases_of(sessionmaker, user)) == 1


async def test_repeated_key_returns_the_purchase_after_a_takedown(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    first = ok(await buy(client, user, plugin.id, key="before-takedown"), 201)
    await factory.update_plugin(plugin, review_status="taken_down", enabled=False)
    assert ok(await buy(client, user, plugin.id, key="before-takedown"), 200) == first


async def test_subscription_expires_after_its_validity_days(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, validity_days=30)
    data = ok(await buy(client, user, plugin.id), 201)
    assert data["validityDays"] == 30
    expected = datetime.now(UTC) + timedelta(days=30)
    assert abs((parse(data["expiresAt"]) - expected).total_seconds()) < 60


async def test_buying_again_while_active_extends_from_the_current_expiry(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, validity_days=30)
    first = ok(await buy(client, user, plugin.id), 201)
    second = ok(await buy(client, user, plugin.id), 201)
    gap = parse(second["expiresAt"]) - parse(first["expiresAt"])
    assert gap == timedelta(days=30)
    detail = ok(await client.get(f"{API}/detail/{plugin.id}", headers=user.headers))
    assert detail["purchase"]["expiresAt"] == second["expiresAt"]


async def test_buying_again_after_expiry_starts_from_now(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, validity_days=7)
    await factory.purchase(user, plugin, expires_at=datetime.now(UTC) - timedelta(days=3))
    data = ok(await buy(client, user, plugin.id), 201)
    expected = datetime.now(UTC) + timedelta(days=7)
    assert abs((parse(data["expiresAt"]) - expected).total_seconds()) < 60


async def test_purchase_of_free_plugin_is_400(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    err(await buy(client, user, plugin.id), 400, "PLUGIN_IS_FREE")
    assert await purchases_of(sessionmaker, user) == []


@pytest.mark.parametrize(
    "state",
    [
        {"review_status": "pending"},
        {"review_status": "rejected"},
        {"review_status": "taken_down"},
        {"review_status": "approved", "enabled": False},
    ],
)
async def test_purchase_of_unlisted_plugin_is_404(
    client: httpx.AsyncClient, factory: Factory, sessionmaker, state: dict
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, **state)
    error = err(await buy(client, user, plugin.id), 404, "PLUGIN_NOT_FOUND")
    # Asked by id, the answer names the id: an unlisted plugin's key is not given away.
    assert error["details"] == {"pluginId": plugin.id}
    assert await purchases_of(sessionmaker, user) == []


async def test_purchase_of_unknown_plugin_is_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    err(await buy(client, user, "no-such-plugin"), 404, "PLUGIN_NOT_FOUND")


async def test_purchase_of_own_plugin_is_409(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner, is_free=False)
    err(await buy(client, owner, plugin.id), 409, "INVALID_STATE")
    assert await purchases_of(sessionmaker, owner) == []


async def test_purchase_with_active_permanent_purchase_is_409(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    ok(await buy(client, user, plugin.id), 201)
    err(await buy(client, user, plugin.id), 409, "INVALID_STATE")
    assert len(await purchases_of(sessionmaker, user)) == 1


async def test_purchase_needs_login(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin(is_free=False)
    err(await client.post(f"{API}/purchase/{plugin.id}", json={}), 401, "UNAUTHORIZED")


async def test_purchase_body_with_unknown_field_is_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    response = await client.post(
        f"{API}/purchase/{plugin.id}", json={"price": 0.01}, headers=user.headers
    )
    assert field_names(err(response, 400, "VALIDATION_FAILED")) == {"price"}


# ---------------------------------------------------------------- providers


async def test_pending_provider_leaves_the_purchase_pending(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    app.state.payment_provider = provider = PendingProvider()
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, price="8.00")
    data = ok(await buy(client, user, plugin.id, key="gw-order"), 201)
    assert (data["status"], data["expiresAt"]) == ("pending", None)
    [charge] = provider.charged
    assert (charge.purchase_id, charge.amount, charge.idempotency_key) == (
        data["id"],
        Decimal("8.00"),
        "gw-order",
    )
    detail = ok(await client.get(f"{API}/detail/{plugin.id}", headers=user.headers))
    assert detail["purchase"] == {"purchased": False, "active": False, "expiresAt": None}


async def test_pending_purchase_blocks_another_purchase(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    app.state.payment_provider = PendingProvider()
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    ok(await buy(client, user, plugin.id), 201)
    err(await buy(client, user, plugin.id), 409, "INVALID_STATE")
    assert len(await purchases_of(sessionmaker, user)) == 1


async def test_confirmation_settles_a_pending_purchase(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    app.state.payment_provider = PendingProvider()
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, validity_days=30)
    pending = ok(await buy(client, user, plugin.id), 201)
    async with sessionmaker() as session:
        confirmed = await confirm_purchase(session, pending["id"], paid=True, reference="gw-x")
        await session.commit()
    assert confirmed.status == "paid"
    assert confirmed.provider_ref == "gw-x"
    assert confirmed.expires_at is not None
    detail = ok(await client.get(f"{API}/detail/{plugin.id}", headers=user.headers))
    assert detail["purchase"]["active"] is True


async def test_repeated_confirmation_changes_nothing(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    app.state.payment_provider = PendingProvider()
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, validity_days=30)
    pending = ok(await buy(client, user, plugin.id), 201)
    async with sessionmaker() as session:
        first = await confirm_purchase(session, pending["id"], paid=True)
        await session.commit()
        expires = first.expires_at
    async with sessionmaker() as session:
        again = await confirm_purchase(session, pending["id"], paid=True)
        await session.commit()
    assert (again.status, again.expires_at) == ("paid", expires)


async def test_failed_confirmation_marks_the_purchase_failed(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    app.state.payment_provider = PendingProvider()
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    pending = ok(await buy(client, user, plugin.id), 201)
    async with sessionmaker() as session:
        await confirm_purchase(session, pending["id"], paid=False)
        await session.commit()
    [row] = await purchases_of(sessionmaker, user)
    assert row.status == "failed"
    # Nothing is outstanding any more: buying again is allowed.
    assert ok(await buy(client, user, plugin.id), 201)["status"] == "pending"


async def test_confirmation_of_unknown_purchase_is_not_found(
    factory: Factory, sessionmaker
) -> None:
    async with sessionmaker() as session:
        with pytest.raises(NotFound):
            await confirm_purchase(session, "00000000-0000-0000-0000-000000000000", paid=True)


async def test_declined_payment_is_402_and_records_nothing(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    app.state.payment_provider = DecliningProvider()
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    err(await buy(client, user, plugin.id, key="declined"), 402, "PLUGIN_NOT_PURCHASED")
    assert await purchases_of(sessionmaker, user) == []


async def test_purchase_without_a_body_buys_and_a_null_body_is_400_buying_nothing(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    # The body is optional (no idempotencyKey) but, when sent, must be an object: OpenAPI
    # documents it so (test_openapi_errors), and a JSON null is refused before any charge.
    user = await factory.user()
    plugin = await factory.plugin(is_free=False, price="3.00")
    headers = {**user.headers, "Content-Type": "application/json"}
    refused = await client.post(f"{API}/purchase/{plugin.id}", content=b"null", headers=headers)
    error = err(refused, 400, "VALIDATION_FAILED")
    assert field_names(error) == {"body"}
    assert await purchases_of(sessionmaker, user) == []
    data = ok(await client.post(f"{API}/purchase/{plugin.id}", headers=user.headers), 201)
    [row] = await purchases_of(sessionmaker, user)
    assert (row.id, row.status) == (data["id"], "paid")
