"""Who operates a plugin (its owner, or its organization's members read now) neither buys
nor rates it, and downloads it paid or not; a removed member, publisher included, is an
ordinary user again at once."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from marketplace.models import OrgRole, Purchase, Rating
from tests.commerce.helpers import FakeBlobStore
from tests.factories import Factory
from tests.helpers import err, ok
from tests.orgs.helpers import remove

DOWNLOAD = "/api/v1/plugins/download"


async def test_members_download_a_paid_org_plugin_and_a_removed_publisher_must_buy_it(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    app.state.blob_store = FakeBlobStore()
    owner, publisher = await factory.developer(), await factory.developer()
    org = await factory.org(owner)
    await factory.member(org, publisher, OrgRole.MEMBER)
    plugin = await factory.plugin(publisher, org_id=org.id, is_free=False)
    await factory.version(plugin)
    url = f"{DOWNLOAD}/{plugin.id}/1.0.0"
    assert ok(await client.get(url, headers=owner.headers))["url"]  # a member, not the publisher
    assert ok(await client.get(url, headers=publisher.headers))["url"]
    ok(await remove(client, owner, org.slug, publisher.id))
    err(await client.get(url, headers=publisher.headers), 402, "PLUGIN_NOT_PURCHASED")


async def test_a_member_may_neither_rate_nor_buy_its_organizations_plugin(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner)
    await factory.member(org, member, OrgRole.MEMBER)
    free = await factory.plugin(owner, org_id=org.id)
    await factory.version(free)
    await factory.install(member, free)
    refused = await client.post(
        f"/api/v1/plugins/rate/{free.id}", json={"score": 5}, headers=member.headers
    )
    err(refused, 403, "RATING_NOT_ALLOWED")
    paid = await factory.plugin(owner, org_id=org.id, is_free=False, price="9.90")
    await factory.version(paid)
    err(
        await client.post(f"/api/v1/plugins/purchase/{paid.id}", json={}, headers=member.headers),
        409,
        "INVALID_STATE",
    )
    async with factory.sessions() as session:
        assert list(await session.scalars(select(Rating).where(Rating.user_id == member.id))) == []
        assert (
            list(await session.scalars(select(Purchase).where(Purchase.user_id == member.id))) == []
        )

    # Once removed, an ordinary user: the rating is taken.
    ok(await remove(client, owner, org.slug, member.id))
    ok(
        await client.post(
            f"/api/v1/plugins/rate/{free.id}", json={"score": 5}, headers=member.headers
        ),
        201,
    )
