"""Logging in and out of the console: the API's accounts, password check and limits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.app import create_app, shutdown
from marketplace.config import Settings
from marketplace.models import Role
from marketplace.web.security import hash_token
from tests.admin_console.helpers import csrf_of, logged_in, login, session_rows, text_of
from tests.factories import PASSWORD, Factory

LOGIN_FAILED = "Invalid e-mail or password"


def _cookie_header(response: httpx.Response, name: str) -> str:
    [header] = [h for h in response.headers.get_list("set-cookie") if h.startswith(f"{name}=")]
    return header


async def test_login_page_shows_the_contract_labels(client: httpx.AsyncClient) -> None:
    response = await client.get("/console/login")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert '<label for="email">Email</label>' in response.text
    assert '<label for="password">Password</label>' in response.text
    assert ">Log in</button>" in response.text


async def test_login_starts_a_server_side_session_and_opens_the_queue(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    response = await login(client, admin.email)
    assert response.status_code == 303
    assert response.headers["location"] == "/console"
    token = client.cookies["mkt_console"]
    [row] = await session_rows(sessionmaker)
    assert row.user_id == admin.id
    # Only the SHA-256 of the cookie's token is stored.
    assert row.token_hash == hash_token(token) and token not in row.token_hash
    queue = await client.get("/console")
    assert queue.status_code == 200
    assert admin.email in queue.text and ">Log out</button>" in queue.text


async def test_session_cookie_is_httponly_strict_and_scoped_to_the_console(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    response = await login(client, (await factory.admin()).email)
    cookie = _cookie_header(response, "mkt_console").lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    assert "path=/console" in cookie
    assert "secure" not in cookie  # PUBLIC_URL is http in these tests


async def test_session_cookie_is_secure_when_the_public_url_is_https(
    settings: Settings, tmp_path: Path, factory: Factory
) -> None:
    https = replace_settings(settings, public_url="https://market.example")
    application = create_app(https)
    try:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="https://test") as http:
            account = await Factory(application).admin()
            response = await login(http, account.email)
            assert response.status_code == 303
            assert "; secure" in _cookie_header(response, "mkt_console").lower()
    finally:
        await shutdown(application)


def replace_settings(settings: Settings, **values: object) -> Settings:
    return settings.model_copy(update=values)


async def test_wrong_password_shows_the_apis_generic_message_and_starts_nothing(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    response = await login(client, admin.email, "not the password")
    assert response.status_code == 401
    assert LOGIN_FAILED in response.text
    assert admin.email in response.text  # the e-mail stays filled in
    assert "mkt_console" not in client.cookies
    assert await session_rows(sessionmaker) == []


async def test_unknown_email_gets_the_same_message_as_a_wrong_password(
    client: httpx.AsyncClient,
) -> None:
    response = await login(client, "nobody@example.com")
    assert response.status_code == 401
    assert LOGIN_FAILED in response.text


@pytest.mark.parametrize("role", [Role.USER, Role.DEVELOPER])
async def test_accounts_below_admin_are_refused_without_a_session(
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    role: Role,
) -> None:
    account = await factory.user(role)
    response = await login(client, account.email)
    assert response.status_code == 403
    assert "for administrators" in response.text
    assert "mkt_console" not in client.cookies
    assert await session_rows(sessionmaker) == []


async def test_super_admin_may_log_in(client: httpx.AsyncClient, factory: Factory) -> None:
    response = await login(client, (await factory.super_admin()).email)
    assert response.status_code == 303


async def test_login_without_the_forms_csrf_token_is_refused(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    await client.get("/console/login")
    response = await client.post(
        "/console/login", data={"email": admin.email, "password": PASSWORD}
    )
    assert response.status_code == 403
    assert await session_rows(sessionmaker) == []


async def test_login_with_a_token_other_than_its_cookies_is_refused(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    await client.get("/console/login")
    response = await client.post(
        "/console/login",
        data={"email": admin.email, "password": PASSWORD, "csrf_token": "forged"},
    )
    assert response.status_code == 403
    assert await session_rows(sessionmaker) == []


async def test_login_without_the_forms_cookie_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    token = csrf_of((await client.get("/console/login")).text)
    client.cookies.clear()
    response = await client.post(
        "/console/login", data={"email": admin.email, "password": PASSWORD, "csrf_token": token}
    )
    assert response.status_code == 403


async def test_login_returns_to_the_page_first_asked_for(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    first = await client.get("/console/audit?action=REVIEW_REJECT")
    assert first.status_code == 303
    location = urlsplit(first.headers["location"])
    assert location.path == "/console/login"
    wanted = parse_qs(location.query)["next"][0]
    assert wanted == "/console/audit?action=REVIEW_REJECT"
    form = await client.get(first.headers["location"])
    assert "Please log in" in form.text
    response = await login(client, admin.email, next_path=wanted)
    assert response.headers["location"] == "/console/audit?action=REVIEW_REJECT"


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/console",
        "//evil.example/console",
        "/\\evil.example",
        "javascript:alert(1)",
        "/api/v1/auth/me",
        "/console/../api/v1/auth/me",
        "/console/%2e%2e/api",
        "/consolex",
        "/console/logout",
    ],
)
async def test_login_never_redirects_outside_the_console(
    client: httpx.AsyncClient, factory: Factory, target: str
) -> None:
    admin = await factory.admin()
    response = await login(client, admin.email, next_path=target)
    assert response.status_code == 303
    assert response.headers["location"] == "/console"


async def test_login_page_does_not_echo_a_foreign_next_target(client: httpx.AsyncClient) -> None:
    response = await client.get("/console/login", params={"next": "https://evil.example/"})
    assert "evil.example" not in response.text


async def test_logout_deletes_the_server_side_session(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    await logged_in(client, await factory.admin())
    token = client.cookies["mkt_console"]
    page = await client.get("/console")
    response = await client.post("/console/logout", data={"csrf_token": csrf_of(page.text)})
    assert response.status_code == 303
    assert response.headers["location"] == "/console/login?m=logged_out"
    assert await session_rows(sessionmaker) == []
    # The old cookie, replayed, no longer opens anything.
    client.cookies.set("mkt_console", token, path="/console")
    again = await client.get("/console")
    assert again.status_code == 303
    assert "m=expired" in again.headers["location"]


async def test_logout_without_the_csrf_token_is_refused_and_keeps_the_session(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    await logged_in(client, await factory.admin())
    response = await client.post("/console/logout", data={})
    assert response.status_code == 403
    assert len(await session_rows(sessionmaker)) == 1
    assert (await client.get("/console")).status_code == 200


@pytest.fixture
async def limited_app(settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(
        replace_settings(settings, rate_limit_enabled=True, rate_limit_login="2/minute")
    )
    yield application
    await shutdown(application)


async def test_console_logins_share_the_apis_login_rate_limit(
    limited_app: FastAPI, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    account = await Factory(limited_app).admin()
    transport = httpx.ASGITransport(app=limited_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        # One try through the API, one through the console: the window is spent.
        api = await http.post(
            "/api/v1/auth/login", json={"email": account.email, "password": "wrong-password"}
        )
        assert api.status_code == 401
        assert (await login(http, account.email, "wrong-password")).status_code == 401
        refused = await login(http, account.email)
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        assert "Too many login attempts" in text_of(refused.text)
    assert await session_rows(sessionmaker) == []
