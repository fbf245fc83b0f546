"""Every console request re-checks its session and the account's role."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import delete, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.config import Settings
from marketplace.models import Category, Role, User
from tests.admin_console.helpers import age_sessions, logged_in, session_rows
from tests.factories import Factory

PAGES = [
    "/console",
    "/console/queue",
    "/console/categories",
    "/console/audit",
    "/console/plugins/versions/00000000-0000-0000-0000-000000000000",
    "/console/scenarios/versions/00000000-0000-0000-0000-000000000000",
    "/console/plugins/some-plugin",
    "/console/developers/00000000-0000-0000-0000-000000000000",
]


def _login_target(response: httpx.Response) -> tuple[str, dict[str, list[str]]]:
    assert response.status_code == 303, response.text
    location = urlsplit(response.headers["location"])
    return location.path, parse_qs(location.query)


@pytest.mark.parametrize("path", PAGES)
async def test_without_a_session_every_page_sends_to_the_login_page(
    client: httpx.AsyncClient, path: str
) -> None:
    path_to, query = _login_target(await client.get(path))
    assert path_to == "/console/login"
    assert query["m"] == ["login"]
    assert query["next"] == [path]


async def test_without_a_session_a_form_post_changes_nothing_and_sends_to_login(
    client: httpx.AsyncClient, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    response = await client.post(
        "/console/categories",
        data={"action": "add", "key": "finance", "name": "Finance", "name_zh": "金融"},
    )
    assert _login_target(response)[0] == "/console/login"
    async with sessionmaker() as db:
        assert await db.get(Category, "finance") is None


async def test_an_unknown_session_token_is_treated_as_expired(client: httpx.AsyncClient) -> None:
    client.cookies.set("mkt_console", "made-up", path="/console")
    path, query = _login_target(await client.get("/console"))
    assert path == "/console/login" and query["m"] == ["expired"]
    page = await client.get("/console/login?m=expired")
    assert "Your session has expired" in page.text


async def test_a_session_past_its_absolute_expiry_ends(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    await logged_in(client, await factory.admin())
    now = datetime.now(UTC)
    # Still active (seen a minute ago) but older than its lifetime.
    await age_sessions(
        sessionmaker,
        created_at=now - timedelta(hours=13),
        expires_at=now - timedelta(hours=1),
        last_seen_at=now - timedelta(minutes=1),
    )
    _, query = _login_target(await client.get("/console"))
    assert query["m"] == ["expired"]
    assert await session_rows(sessionmaker) == []


async def test_a_shorter_lifetime_setting_applies_to_running_sessions(
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    settings: Settings,
) -> None:
    await logged_in(client, await factory.admin())
    await age_sessions(sessionmaker, created_at=datetime.now(UTC) - timedelta(hours=2))
    settings.console_session_hours = 1
    _, query = _login_target(await client.get("/console"))
    assert query["m"] == ["expired"]


async def test_a_session_idle_past_the_limit_ends(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    await logged_in(client, await factory.admin())
    await age_sessions(sessionmaker, last_seen_at=datetime.now(UTC) - timedelta(minutes=31))
    _, query = _login_target(await client.get("/console/audit"))
    assert query["m"] == ["expired"]
    assert query["next"] == ["/console/audit"]
    assert await session_rows(sessionmaker) == []


async def test_each_request_moves_the_idle_clock(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    await logged_in(client, await factory.admin())
    earlier = datetime.now(UTC) - timedelta(minutes=20)
    await age_sessions(sessionmaker, last_seen_at=earlier)
    assert (await client.get("/console")).status_code == 200
    [row] = await session_rows(sessionmaker)
    assert row.last_seen_at > earlier + timedelta(minutes=19)


async def test_a_demoted_admin_loses_access_at_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    await logged_in(client, admin)
    assert (await client.get("/console")).status_code == 200
    async with sessionmaker() as db:
        await db.execute(update(User).where(User.id == admin.id).values(role=Role.DEVELOPER))
        await db.commit()
    refused = await client.get("/console")
    assert refused.status_code == 403
    assert "for administrators" in refused.text
    assert await session_rows(sessionmaker) == []
    # Promoted again, the old cookie still does not come back to life.
    async with sessionmaker() as db:
        await db.execute(update(User).where(User.id == admin.id).values(role=Role.ADMIN))
        await db.commit()
    assert (await client.get("/console")).status_code == 303


async def test_a_deleted_account_takes_its_sessions_with_it(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    await logged_in(client, admin)
    async with sessionmaker() as db:
        await db.execute(delete(User).where(User.id == admin.id))
        await db.commit()
    assert await session_rows(sessionmaker) == []  # ON DELETE CASCADE
    assert (await client.get("/console")).status_code == 303


async def test_logging_in_again_replaces_the_browsers_old_session(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    await logged_in(client, admin)
    first = client.cookies["mkt_console"]
    await logged_in(client, admin)
    assert client.cookies["mkt_console"] != first
    assert len(await session_rows(sessionmaker)) == 1
