"""The audit log page: filters by action, resource type, actor and dates, and pages."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import AuditLog, Role
from tests.admin_console.helpers import logged_in, scenario_with_version, text_of
from tests.factories import Account, Factory
from tests.helpers import recording_statements

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
    unfiltered = await client.get("/console/audit")
    assert "Page 1 of 2 · 55 in all" in text_of(unfiltered.text)
    api = await client.get("/api/v1/admin/audit-logs", headers=admin.headers)
    assert api.json()["data"]["total"] == 55
    bad = await client.get("/console/audit", params={"page": "0"})
    assert bad.status_code == 400


async def test_the_log_names_actors_and_items_instead_of_ids(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.user(Role.ADMIN, name="Ada Reviewer", email="ada@example.com")
    plugin = await factory.plugin(plugin_key="weather-tool", review_status="pending")
    version = await factory.version(plugin, "1.2.0", review_status="pending")
    scenario_version = await scenario_with_version(
        sessionmaker, await factory.developer(), "morning-brief", "2.0.0"
    )
    for path, body in [
        (
            f"/api/v1/admin/plugins/{plugin.id}/review",
            {"approved": True, "approvePendingVersion": False},
        ),
        (f"/api/v1/admin/plugins/versions/{version.id}/review", {"approved": True}),
        (
            f"/api/v1/admin/scenarios/versions/{scenario_version.id}/review",
            {"approved": False, "reviewNote": "too broad"},
        ),
    ]:
        assert (await client.post(path, json=body, headers=admin.headers)).status_code == 200
    gone = "0a4b6c8d-0000-4000-8000-000000000000"  # a record outlives what it describes
    async with sessionmaker() as db:
        db.add(
            AuditLog(
                action="REVIEW_REJECT",
                actor_id=admin.id,
                resource_type="plugin",
                resource_id=gone,
                outcome="rejected",
                trigger="admin",
                created_at=DAY,
            )
        )
        await db.commit()
    await logged_in(client, admin)

    response = await client.get("/console/audit")
    assert response.status_code == 200
    page = response.text
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.DOTALL)[1:]  # after the header row
    shown = [text_of(row) for row in rows]
    # The version's approval links to its transparency-log entry (CONTRACT 15).
    [logged] = re.findall(r'href="/console/log/(\d+)"', page)
    assert [" ".join(s.split()[3:]) for s in shown] == [
        "REVIEW_REJECT scenario_version morning-brief 2.0.0 admin Ada Reviewer ada@example.com too broad",
        f"REVIEW_APPROVE plugin_version weather-tool 1.2.0 admin Ada Reviewer ada@example.com #{logged}",
        "REVIEW_APPROVE plugin weather-tool admin Ada Reviewer ada@example.com",
        f"REVIEW_REJECT plugin {gone} admin Ada Reviewer ada@example.com",
    ]
    # Where the item is gone, its id; the ids stay at hand in the links and on hover.
    assert (
        f'href="/console/plugins/versions/{version.id}" class="subject" title="{version.id}"'
        in page
    )
    assert f'<span class="actor" title="{admin.id}">Ada Reviewer</span>' in page
    assert version.id not in text_of(page) and admin.id not in text_of(page)


async def test_a_plugin_page_names_its_history_too(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.user(Role.ADMIN, name="Ada Reviewer")
    plugin = await factory.plugin(plugin_key="weather-tool", review_status="pending")
    version = await factory.version(plugin, "1.0.0", review_status="pending")
    response = await client.post(
        f"/api/v1/admin/plugins/{plugin.id}/review", json={"approved": True}, headers=admin.headers
    )
    assert response.status_code == 200
    await logged_in(client, admin)
    history = (await client.get(f"/console/plugins/{plugin.id}")).text
    audit = text_of(history[history.index('id="audit"') :])
    assert "plugin_version weather-tool 1.0.0 linkage Ada Reviewer" in audit
    assert "plugin weather-tool admin Ada Reviewer" in audit
    assert version.id not in audit


async def test_names_cost_no_query_per_row(
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    app: FastAPI,
) -> None:
    admin = await factory.admin()
    await _records(sessionmaker, admin, await factory.admin())
    await logged_in(client, admin)
    statements: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    with recording_statements(app, note):
        assert (await client.get("/console/audit")).status_code == 200
        with_four = len(statements)
        await _records(sessionmaker, admin, await factory.admin())
        statements.clear()
        assert (await client.get("/console/audit")).status_code == 200
    assert len(statements) == with_four  # eight rows cost what four did
    assert len([s for s in statements if "audit_logs" in s]) == 2  # the count and the page
