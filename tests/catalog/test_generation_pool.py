"""The generation read never waits for a second pooled connection while its request holds
one (PostgreSQL): with more concurrent logged-in requests than the pool holds, each would
wait for the one the others hold until the pool timeout (bench-browse: download info at
3 requests/s, every answer a 503)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from marketplace.app import create_app, shutdown
from marketplace.config import Settings
from tests.factories import Factory
from tests.takedown.helpers import released_plugin

CONCURRENT = 30  # the pool holds 10 + 10 overflow
ROUNDS = 16


@pytest.fixture
async def impatient_app(settings: Settings, is_postgres: bool) -> AsyncIterator[FastAPI]:
    if not is_postgres:
        pytest.skip("SQLite's generation reader is a connection of its own, outside any pool")
    app = create_app(settings.model_copy(update={"db_pool_timeout_seconds": 1.0}))
    yield app
    await shutdown(app)


async def test_more_logged_in_requests_than_pooled_connections_all_succeed(
    client: httpx.AsyncClient, factory: Factory, impatient_app: FastAPI
) -> None:
    released = await released_plugin(client, factory, ("1.0.0",))
    users = [await factory.user() for _ in range(3)]
    transport = httpx.ASGITransport(app=impatient_app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        download = f"/api/v1/plugins/download/{released.key}/latest"  # the route's full path

        def path(i: int) -> str:
            # Half download info, half logged-in browse misses (the full path too).
            return download if i % 2 else f"/api/v1/plugins/browse?q=miss{i}"

        statuses: list[int] = []

        async def client_loop(i: int) -> None:
            # Like a load generator: every connection asks again as soon as it is answered.
            for _ in range(ROUNDS):
                response = await http.get(path(i), headers=users[i % 3].headers)
                statuses.append(response.status_code)

        await asyncio.gather(*(client_loop(i) for i in range(CONCURRENT)))
    assert statuses.count(200) == len(statuses) == CONCURRENT * ROUNDS, set(statuses)
