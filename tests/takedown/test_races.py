"""Takedowns under concurrency: the item row lock keeps one outcome (both databases)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from sqlalchemy import func, select

from marketplace.models import AuditLog, Plugin, PluginVersion, Revocation
from tests.factories import Factory
from tests.plugins.helpers import create_version, review_version
from tests.takedown.helpers import admin_takedown, developer_takedown, released_plugin


async def test_concurrent_takedowns_of_one_version_give_one_200(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    vid = r.ids["1.1.0"]
    responses = await asyncio.gather(
        admin_takedown(client, r.admin, vid, "first"),
        developer_takedown(client, r.dev, r.plugin["id"], vid, "second"),
        admin_takedown(client, r.admin, vid, "third"),
    )
    assert sorted(x.status_code for x in responses) == [200, 409, 409]
    for response in responses:
        if response.status_code == 409:
            assert response.json()["error"]["code"] == "INVALID_STATE"
    async with sessionmaker() as session:
        audits = await session.scalar(
            select(func.count()).where(AuditLog.resource_id == vid, AuditLog.action == "TAKEDOWN")
        )
        revocations = await session.scalar(
            select(func.count()).select_from(Revocation).where(Revocation.version_id == vid)
        )
        plugin = await session.get(Plugin, r.plugin["id"])
    assert (audits, revocations) == (1, 1)
    assert plugin is not None and plugin.latest_version == "1.0.0"


async def test_takedown_racing_an_approval_leaves_exactly_one_current_version(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    for _ in range(3):
        r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
        pending = await create_version(client, r.dev, r.plugin, "1.2.0")
        takedown, approval = await asyncio.gather(
            admin_takedown(client, r.admin, r.ids["1.1.0"]),
            review_version(client, r.admin, pending["id"], approved=True),
        )
        assert (takedown.status_code, approval.status_code) == (200, 200)
        async with sessionmaker() as session:
            rows = list(
                await session.scalars(
                    select(PluginVersion).where(PluginVersion.plugin_id == r.plugin["id"])
                )
            )
            plugin = await session.get(Plugin, r.plugin["id"])
        current = [v.version for v in rows if v.is_latest]
        assert len(current) == 1
        assert plugin is not None and plugin.latest_version == current[0]
        # Whichever committed last decided; never the withdrawn version.
        assert current[0] in ("1.2.0", "1.0.0")
        assert {v.version: v.review_status for v in rows}["1.1.0"] == "taken_down"


async def test_concurrent_takedowns_of_two_versions_of_one_plugin(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "2.0.0", "3.0.0"))
    responses = await asyncio.gather(
        admin_takedown(client, r.admin, r.ids["3.0.0"]),
        admin_takedown(client, r.admin, r.ids["2.0.0"]),
    )
    assert [x.status_code for x in responses] == [200, 200]
    async with sessionmaker() as session:
        rows = list(
            await session.scalars(
                select(PluginVersion).where(PluginVersion.plugin_id == r.plugin["id"])
            )
        )
        plugin = await session.get(Plugin, r.plugin["id"])
    assert [v.version for v in rows if v.is_latest] == ["1.0.0"]
    assert plugin is not None and plugin.latest_version == "1.0.0"
