"""The audit log page: filters by action, resource type, actor and dates, and pages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import AuditLog
from tests.admin_console.helpers import logged_in, text_of
from tests.factories import Account, Factory

DAY = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


async def _records(
    sessions: async_sessionmaker[AsyncSession], admin: Account, other: Account
) -> None:
    rows = [
        ("REVIEW_APPROVE", admin.id, "plugin_version", "v-approved-by-admin", DAY),
        ("REVIEW_REJECT", admin.id, "plugin", "p-rejected-by-admin", DAY + timedelta(days=1)),
        ("REVIEW_REJECT", None, "scenario_version", "s-auto-rejected", DAY + timedelta(days=2)),
        ("REVIEW_APPROVE", other.id, "plugin", "p-approved-by-other", DAY + timedelta(days=3)),
    ]
    async with sessions() as db:
        for action, actor, resource_type, resource_id, created in rows:
            db.add(
                AuditLog(
                    action=action,
                    actor_id=actor,
                    resource_type=resource_type,
                    resource_id=resource_id,
                    outcome="approved" if action == "REVIEW_APPROVE" else "rejected",
                    trigger="admin" if actor else "auto-validation",
                    note=None,
                    created_at=created,
                )
            )
        await db.commit()


async def _shown(client: httpx.AsyncClient, **params: str) -> list[str]:
    response = await client.get("/console/audit", params=params)
    assert response.status_code == 200, response.text
    text = text_of(response.text)
    names = ("v-approved-by-admin", "p-rejected-by-admin", "s-auto-rejected", "p-approved-by-other")
    return [n for n in names if n in text]


async def test_filters(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    other = await factory.admin()
    await _records(sessionmaker, admin, other)
    await logged_in(client, admin)
    assert len(await _shown(client)) == 4
    assert await _shown(client, action="REVIEW_REJECT") == [
        "p-rejected-by-admin",
        "s-auto-rejected",
    ]
    assert await _shown(client, resourceType="plugin") == [
        "p-rejected-by-admin",
        "p-approved-by-other",
    ]
    assert await _shown(client, actor=other.email) == ["p-approved-by-other"]
    assert await _shown(client, actor=admin.id) == ["v-approved-by-admin", "p-rejected-by-admin"]
    assert await _shown(client, **{"from": "2026-11-21", "to": "2026-11-22"}) == [
        "p-rejected-by-admin",
        "s-auto-rejected",
    ]


async def test_newest_first_with_links_to_the_console_pages(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    await _records(sessionmaker, admin, await factory.admin())
    await logged_in(client, admin)
    page = (await client.get("/console/audit")).text
    assert page.index("p-approved-by-other") < page.index("v-approved-by-admin")
    assert 'href="/console/plugins/versions/v-approved-by-admin"' in page
    assert "system" in text_of(page)  # the automatic rejection has no actor


async def test_an_unknown_actor_shows_nothing_and_says_so(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    await _records(sessionmaker, admin, await factory.admin())
    await logged_in(client, admin)
    assert await _shown(client, actor="ghost@example.com") == []
    page = await client.get("/console/audit", params={"actor": "ghost@example.com"})
    assert "No account has the e-mail ghost@example.com" in page.text


async def test_bad_filters_are_refused_with_a_message(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await logged_in(client, await factory.admin())
    for params, message in [
        ({"from": "yesterday"}, "From: a date like"),
        ({"from": "2026-11-22", "to": "2026-11-21"}, "To: must not be before From"),
        ({"action": "DROP"}, "Action: choose one"),
        ({"resourceType": "users"}, "Resource type: choose one"),
    ]:
        response = await client.get("/console/audit", params=params)
        assert response.status_code == 400
        assert message in response.text


async def test_pages_of_fifty(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    async with sessionmaker() as db:
        for i in range(55):
            db.add(
                AuditLog(
                    action="REVIEW_APPROVE",
                    actor_id=admin.id,
                    resource_type="plugin",
                    resource_id=f"p-{i:03d}",
                    outcome="approved",
                    trigger="admin",
                    created_at=DAY + timedelta(minutes=i),
                )
            )
        await db.commit()
    await logged_in(client, admin)
    first = await client.get("/console/audit", params={"action": "REVIEW_APPROVE"})
    assert "Page 1 of 2" in first.text and "p-054" in first.text and "p-004" not in first.text
    assert 'href="/console/audit?action=REVIEW_APPROVE&amp;page=2"' in first.text
    second = await client.get("/console/audit", params={"action": "REVIEW_APPROVE", "page": "2"})
    assert "p-004" in second.text and "p-054" not in second.text
    bad = await client.get("/console/audit", params={"page": "0"})
    assert bad.status_code == 400
