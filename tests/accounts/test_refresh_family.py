"""Refresh-token families: rotation keeps the family, a replay or a logout revokes it."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import RefreshToken
from tests.factories import PASSWORD, Factory
from tests.helpers import err, ok

REFRESH = "/api/v1/auth/refresh"


async def login(client: httpx.AsyncClient, email: str) -> dict[str, Any]:
    data: dict[str, Any] = ok(
        await client.post("/api/v1/auth/login", json={"email": email, "password": PASSWORD})
    )
    return data


async def refresh(client: httpx.AsyncClient, token: str) -> httpx.Response:
    return await client.post(REFRESH, json={"refreshToken": token})


async def tokens_of(
    sessionmaker: async_sessionmaker[AsyncSession], user_id: str
) -> list[RefreshToken]:
    async with sessionmaker() as session:
        rows = await session.scalars(
            select(RefreshToken)
            .where(RefreshToken.user_id == user_id)
            .order_by(RefreshToken.created_at)
        )
        return list(rows)


async def test_rotation_keeps_the_family_of_the_login(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    account = await factory.user()
    first = await login(client, account.email)
    second = ok(await refresh(client, first["refreshToken"]))
    ok(await refresh(client, second["refreshToken"]))
    rows = await tokens_of(sessionmaker, account.id)
    assert len(rows) == 3
    assert {r.family_id for r in rows} == {rows[0].id}
    assert [r.revoked_at is None for r in rows] == [False, False, True]


async def test_replay_after_rotation_revokes_the_newest_token_of_the_family(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    account = await factory.user()
    first = await login(client, account.email)
    second = ok(await refresh(client, first["refreshToken"]))
    third = ok(await refresh(client, second["refreshToken"]))

    err(await refresh(client, first["refreshToken"]), 401, "UNAUTHORIZED")

    # The replay was committed with the 401: the newest token of the family is dead too.
    assert all(r.revoked_at is not None for r in await tokens_of(sessionmaker, account.id))
    err(await refresh(client, third["refreshToken"]), 401, "UNAUTHORIZED")
    err(
        await client.post("/api/v1/auth/logout", json={"refreshToken": third["refreshToken"]}),
        401,
        "UNAUTHORIZED",
    )


async def test_replay_leaves_another_family_of_the_same_user_alive(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    account = await factory.user()
    phone = await login(client, account.email)
    laptop = await login(client, account.email)
    phone_next = ok(await refresh(client, phone["refreshToken"]))
    laptop_next = ok(await refresh(client, laptop["refreshToken"]))

    err(await refresh(client, phone["refreshToken"]), 401, "UNAUTHORIZED")

    err(await refresh(client, phone_next["refreshToken"]), 401, "UNAUTHORIZED")
    ok(await refresh(client, laptop_next["refreshToken"]))
    rows = await tokens_of(sessionmaker, account.id)
    assert len({r.family_id for r in rows}) == 2
    assert sum(r.revoked_at is None for r in rows) == 1


async def test_logout_revokes_the_family_and_only_it(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    account = await factory.user()
    phone = await login(client, account.email)
    laptop = await login(client, account.email)
    phone_next = ok(await refresh(client, phone["refreshToken"]))

    ok(await client.post("/api/v1/auth/logout", json={"refreshToken": phone_next["refreshToken"]}))

    err(await refresh(client, phone_next["refreshToken"]), 401, "UNAUTHORIZED")
    ok(await refresh(client, laptop["refreshToken"]))


async def test_unknown_token_revokes_nothing(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    account = await factory.user()
    tokens = await login(client, account.email)
    err(await refresh(client, tokens["refreshToken"] + "x"), 401, "UNAUTHORIZED")
    ok(await refresh(client, tokens["refreshToken"]))


async def test_concurrent_double_refresh_has_exactly_one_winner(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    account = await factory.user()
    tokens = await login(client, account.email)
    responses = await asyncio.gather(*(refresh(client, tokens["refreshToken"]) for _ in range(2)))
    assert sorted(r.status_code for r in responses) == [200, 401]
    rows = await tokens_of(sessionmaker, account.id)
    # One login token and the one pair the winner got; the loser's request, arriving after
    # the rotation, is a replay (indistinguishable from a thief's) and revokes the family.
    assert len(rows) == 2
    assert all(r.revoked_at is not None for r in rows)
    winner = next(r for r in responses if r.status_code == 200).json()["data"]
    err(await refresh(client, winner["refreshToken"]), 401, "UNAUTHORIZED")
