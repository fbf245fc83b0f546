"""Portal sessions are as strict as the console's, and belong to the portal alone."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from marketplace.app import create_app, shutdown
from marketplace.config import Settings
from marketplace.models import ConsoleSession
from tests.admin_console.helpers import logged_in, text_of
from tests.admin_console.test_login import replace_settings
from tests.factories import Factory
from tests.portal.helpers import in_portal, portal_login, post_from


async def _sessions(app: FastAPI) -> list[ConsoleSession]:
    async with app.state.sessionmaker() as db:
        return list(await db.scalars(select(ConsoleSession)))


async def test_a_developer_logs_in_and_out(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    assert (await client.get("/portal")).headers["location"].startswith("/portal/login?")
    await in_portal(client, developer)
    cookie = client.cookies.get("mkt_portal")
    assert cookie
    page = await client.get("/portal")
    assert page.status_code == 200
    assert "Log out" in page.text and developer.email in text_of(page.text)
    (row,) = await _sessions(app)
    assert (row.site, row.user_id) == ("portal", developer.id)
    assert row.token_hash != cookie  # only its hash is stored

    response = await post_from(client, "/portal", "/portal/logout", {})
    assert response.status_code == 303
    assert response.headers["location"] == "/portal/login?m=logged_out"
    assert await _sessions(app) == []
    client.cookies.set("mkt_portal", cookie, path="/portal")
    assert (await client.get("/portal")).status_code == 303  # the old cookie opens nothing


async def test_the_portal_cookie_is_http_only_strict_and_scoped(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    response = await portal_login(client, (await factory.developer()).email)
    cookie = next(h for h in response.headers.get_list("set-cookie") if h.startswith("mkt_portal="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/portal" in cookie
    page = await client.get("/portal")
    assert page.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]


async def test_a_wrong_password_is_refused(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    response = await portal_login(client, developer.email, "wrong-password")
    assert response.status_code == 401
    assert "Invalid e-mail or password" in response.text
    assert client.cookies.get("mkt_portal") is None
    assert await _sessions(app) == []


@pytest.fixture
async def limited_app(settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(
        replace_settings(settings, rate_limit_enabled=True, rate_limit_login="2/minute")
    )
    yield application
    await shutdown(application)


async def test_portal_logins_share_the_apis_login_rate_limit(limited_app: FastAPI) -> None:
    account = await Factory(limited_app).developer()
    transport = httpx.ASGITransport(app=limited_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        api = await http.post(
            "/api/v1/auth/login", json={"email": account.email, "password": "wrong-password"}
        )
        assert api.status_code == 401
        assert (await portal_login(http, account.email, "wrong-password")).status_code == 401
        refused = await portal_login(http, account.email)
        assert refused.status_code == 429
        assert "Too many login attempts" in text_of(refused.text)
    assert await _sessions(limited_app) == []


async def test_a_plain_user_is_not_let_in(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    response = await portal_login(client, user.email)
    assert response.status_code == 403
    assert "for developer accounts" in text_of(response.text)
    assert await _sessions(app) == []


async def test_a_console_session_does_not_open_the_portal_nor_the_reverse(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()  # an admin may use both: the API lets admins publish
    await logged_in(client, admin)
    console_token = client.cookies["mkt_console"]
    client.cookies.clear()
    await in_portal(client, admin)
    portal_token = client.cookies["mkt_portal"]
    client.cookies.clear()
    assert sorted(row.site for row in await _sessions(app)) == ["console", "portal"]

    crossed = await client.get("/portal", headers={"Cookie": f"mkt_portal={console_token}"})
    assert crossed.status_code == 303
    assert crossed.headers["location"].startswith("/portal/login")
    crossed = await client.get("/console", headers={"Cookie": f"mkt_console={portal_token}"})
    assert crossed.status_code == 303
    assert crossed.headers["location"].startswith("/console/login")
    own = await client.get("/portal", headers={"Cookie": f"mkt_portal={portal_token}"})
    assert own.status_code == 200


async def test_a_form_without_its_csrf_token_changes_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    await in_portal(client, developer)
    response = await client.post("/portal/orgs", data={"slug": "acme", "name": "Acme"})
    assert response.status_code == 403
    assert "did not come from your current session" in text_of(response.text)
    listed = (await client.get("/api/v1/developer/orgs", headers=developer.headers)).json()
    assert listed["data"]["items"] == []


async def test_an_unknown_portal_page_is_a_404_page(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await in_portal(client, await factory.developer())
    response = await client.get("/portal/nothing/here")
    assert response.status_code == 404
    assert "There is no such page in the publisher portal." in text_of(response.text)
    assert "Back to your plugins" in response.text
