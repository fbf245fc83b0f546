"""The one-time backfill (CONTRACT 15): a database from before the log gets an entry for
each key, then each past approval and takedown in historical order, once; while it waits,
no new decision can be recorded."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.app import create_app
from marketplace.migrate import backfill_log
from marketplace.models import LogHead, PluginVersion, ReviewStatus, Revocation
from marketplace.trust.keyring import Keyring
from tests.conftest import make_settings
from tests.factories import Factory
from tests.helpers import err, ok
from tests.plugins.helpers import create_version, publish, review_plugin, review_version
from tests.transparency.helpers import all_entries, checkpoint

T = [datetime(2026, 3, day, 12, 0, tzinfo=UTC) for day in range(1, 6)]


async def set_pending(sessions: async_sessionmaker[AsyncSession], pending: bool) -> None:
    async with sessions.begin() as session:
        await session.execute(update(LogHead).values(backfill_pending=pending))


async def test_the_backfill_appends_keys_then_past_decisions_oldest_first_once(
    client: httpx.AsyncClient,
    factory: Factory,
    app: FastAPI,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0", created_at=T[1])  # approved_at unknown
    v2 = await factory.version(plugin, "1.1.0", distribution="config_only")
    v3 = await factory.version(plugin, "0.9.0", review_status=ReviewStatus.TAKEN_DOWN)
    pending = await factory.version(plugin, "2.0.0-rc.1", review_status=ReviewStatus.PENDING)
    gone = str(uuid.uuid4())  # a version taken down, then deleted with its plugin
    async with sessionmaker.begin() as session:
        for row, at in ((v2, T[2]), (v3, T[0])):
            await session.execute(
                update(PluginVersion).where(PluginVersion.id == row.id).values(approved_at=at)
            )
        session.add_all(
            [
                Revocation(
                    kind="plugin",
                    version_id=v3.id,
                    key=plugin.plugin_key,
                    version="0.9.0",
                    sha256=v3.sha256,
                    reason="leak",
                    revoked_at=T[3],
                ),
                Revocation(
                    kind="plugin",
                    version_id=gone,
                    key="deleted-plugin",
                    version="3.0.0",
                    sha256="ab" * 32,
                    reason="malware",
                    revoked_at=T[4],
                ),
            ]
        )
    await set_pending(sessionmaker, True)
    before = (await checkpoint(client))["treeSize"]
    keyring: Keyring = app.state.keyring

    try:
        appended = await backfill_log(app.state.write_sessionmaker, keyring)
    finally:  # the log outlives this test: never leave the next ones refused
        await set_pending(sessionmaker, False)

    assert appended == 6
    assert await backfill_log(app.state.write_sessionmaker, keyring) == 0  # once
    head = await checkpoint(client)
    assert head["treeSize"] == before + 6
    new = [json.loads(leaf) for leaf in (await all_entries(client, head["treeSize"]))[before:]]
    assert [(e["action"], e["version"]) for e in new] == [
        ("key-add", None),
        ("approve", "0.9.0"),
        ("approve", "1.0.0"),
        ("approve", "1.1.0"),
        ("takedown", "0.9.0"),
        ("takedown", "3.0.0"),
    ]
    assert new[0]["keyId"] == keyring.signing_key().key_id
    assert new[2]["at"] == "2026-03-02T12:00:00Z"  # created_at stands in for approved_at
    assert (new[4]["distribution"], new[4]["size"]) == ("tarball", 4096)
    assert (new[5]["key"], new[5]["distribution"], new[5]["sha256"]) == (
        "deleted-plugin",
        None,
        "ab" * 32,
    )
    async with sessionmaker() as session:
        releases = dict(
            (await session.execute(select(PluginVersion.version, PluginVersion.release))).all()
        )
        revocations = dict(
            (await session.execute(select(Revocation.version, Revocation.log_index))).all()
        )
    assert releases["2.0.0-rc.1"] is None  # pending: never approved, never logged
    for position, version in ((1, "0.9.0"), (2, "1.0.0"), (3, "1.1.0")):
        assert releases[version]["logIndex"] == before + position
        assert releases[version]["keyId"] == new[position]["keyId"]
    assert revocations == {"0.9.0": before + 4, "3.0.0": before + 5}
    assert pending.review_status == ReviewStatus.PENDING


async def test_no_decision_is_recorded_while_the_backfill_waits(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    version = await create_version(client, dev, plugin, "1.0.0")
    await set_pending(sessionmaker, True)
    try:
        before = (await checkpoint(client))["treeSize"]
        response = await review_version(client, admin, version["id"], approved=True)
        err(response, 503, "SERVICE_UNAVAILABLE")
        assert response.headers["retry-after"]
        async with sessionmaker() as session:
            stored = await session.get(PluginVersion, version["id"])
            assert stored is not None
            assert (stored.review_status, stored.release) == ("pending", None)
        assert (await checkpoint(client))["treeSize"] == before
    finally:
        await set_pending(sessionmaker, False)
    ok(await review_version(client, admin, version["id"], approved=True))


async def test_the_service_starts_while_its_database_is_unreachable(tmp_path: Path) -> None:
    """The backfill at start must not stop a service the schema gate keeps serving (503 on
    the routes that need the database, /healthz answering)."""
    app = create_app(make_settings("postgresql+asyncpg://nobody@127.0.0.1:1/none", tmp_path))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            assert (await http.get("/healthz")).status_code == 200
            err(await http.get("/api/v1/log/checkpoint"), 503, "SERVICE_UNAVAILABLE")
