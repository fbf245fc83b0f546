from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import jwt
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.accounts import service
from marketplace.models import RefreshToken, User
from tests.factories import PASSWORD, Factory
from tests.helpers import TEST_SECRET, err, field_names, ok


async def register(client: httpx.AsyncClient, email: str = "ann@example.com") -> httpx.Response:
    return await client.post(
        "/api/v1/auth/register", json={"email": email, "password": "s3cret-pass", "name": "Ann"}
    )


async def login(client: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    return await client.post("/api/v1/auth/login", json={"email": email, "password": password})


async def test_register_creates_user_without_exposing_hash(
    client: httpx.AsyncClient, sessionmaker
) -> None:
    data = ok(await register(client, "Ann@Example.com"), 201)
    assert set(data["user"]) == {"id", "email", "name", "role", "createdAt"}
    assert data["user"]["email"] == "ann@example.com"
    assert data["user"]["role"] == "USER"
    async with sessionmaker() as session:
        user = await session.get(User, data["user"]["id"])
        assert user is not None
        assert user.password_hash.startswith("$argon2id$")


async def test_register_refuses_duplicate_email_ignoring_case(
    client: httpx.AsyncClient, sessionmaker
) -> None:
    ok(await register(client, "dup@example.com"), 201)
    err(await register(client, "DUP@example.com"), 409, "EMAIL_EXISTS")
    async with sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(User)) == 1


async def test_register_lists_every_invalid_field(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/v1/auth/register", json={"email": "nope", "password": "short", "extra": 1}
    )
    error = err(response, 400, "VALIDATION_FAILED")
    assert field_names(error) == {"email", "password", "name", "extra"}


async def test_register_refuses_non_json_body(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/v1/auth/register", content=b"{not json", headers={"content-type": "application/json"}
    )
    err(response, 400, "VALIDATION_FAILED")


async def test_login_returns_token_usable_on_me(client: httpx.AsyncClient) -> None:
    ok(await register(client), 201)
    data = ok(await login(client, "ann@example.com", "s3cret-pass"))
    assert data["tokenType"] == "Bearer"
    assert data["expiresIn"] == 3600
    me = ok(
        await client.get(
            "/api/v1/auth/me", headers={"Authorization": f"Bearer {data['accessToken']}"}
        )
    )
    assert me["user"]["email"] == "ann@example.com"


async def test_login_failures_are_one_indistinguishable_401(client: httpx.AsyncClient) -> None:
    ok(await register(client), 201)
    wrong = err(await login(client, "ann@example.com", "wrong-password"), 401, "UNAUTHORIZED")
    unknown = err(await login(client, "nobody@example.com", "s3cret-pass"), 401, "UNAUTHORIZED")
    assert wrong["message"] == unknown["message"]


async def test_me_requires_token(client: httpx.AsyncClient) -> None:
    err(await client.get("/api/v1/auth/me"), 401, "UNAUTHORIZED")


async def test_me_refuses_malformed_authorization_header(client: httpx.AsyncClient) -> None:
    err(
        await client.get("/api/v1/auth/me", headers={"Authorization": "Token abc"}),
        401,
        "UNAUTHORIZED",
    )


async def test_me_refuses_alg_none_token(client: httpx.AsyncClient, factory: Factory) -> None:
    account = await factory.user()
    forged = jwt.encode(
        {
            "sub": account.id,
            "iss": "marketplace",
            "typ": "access",
            "iat": datetime.now(UTC),
            "exp": datetime.now(UTC) + timedelta(hours=1),
        },
        key=None,
        algorithm="none",
    )
    err(
        await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {forged}"}),
        401,
        "UNAUTHORIZED",
    )


async def test_me_refuses_wrong_signature(client: httpx.AsyncClient, factory: Factory) -> None:
    account = await factory.user()
    forged = jwt.encode(
        {
            "sub": account.id,
            "iss": "marketplace",
            "typ": "access",
            "iat": datetime.now(UTC),
            "exp": datetime.now(UTC) + timedelta(hours=1),
        },
        "another-secret-of-sufficient-length-1234567890",
        algorithm="HS256",
    )
    err(
        await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {forged}"}),
        401,
        "UNAUTHORIZED",
    )


async def test_me_refuses_expired_token(client: httpx.AsyncClient, factory: Factory) -> None:
    account = await factory.user()
    expired = jwt.encode(
        {
            "sub": account.id,
            "iss": "marketplace",
            "typ": "access",
            "iat": datetime.now(UTC) - timedelta(hours=2),
            "exp": datetime.now(UTC) - timedelta(hours=1),
        },
        TEST_SECRET,
        algorithm="HS256",
    )
    err(
        await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {expired}"}),
        401,
        "UNAUTHORIZED",
    )


async def test_me_refuses_token_of_deleted_user(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    account = await factory.user()
    async with sessionmaker() as session:
        await session.delete(await session.get(User, account.id))
        await session.commit()
    err(await client.get("/api/v1/auth/me", headers=account.headers), 401, "UNAUTHORIZED")


async def test_refresh_rotates_and_revokes_old_token(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    account = await factory.user()
    first = ok(await login(client, account.email, PASSWORD))
    second = ok(
        await client.post("/api/v1/auth/refresh", json={"refreshToken": first["refreshToken"]})
    )
    assert second["refreshToken"] != first["refreshToken"]
    ok(
        await client.get(
            "/api/v1/auth/me", headers={"Authorization": f"Bearer {second['accessToken']}"}
        )
    )
    async with sessionmaker() as session:
        rows = (
            await session.scalars(select(RefreshToken).where(RefreshToken.user_id == account.id))
        ).all()
        assert sorted(r.revoked_at is None for r in rows) == [False, True]
        assert all(len(r.token_hash) == 64 and r.token_hash != second["refreshToken"] for r in rows)
    # (A replay of the old token also revokes the new one: tests/accounts/test_refresh_family.)
    err(
        await client.post("/api/v1/auth/refresh", json={"refreshToken": first["refreshToken"]}),
        401,
        "UNAUTHORIZED",
    )


async def test_refresh_refuses_unknown_token(client: httpx.AsyncClient) -> None:
    err(
        await client.post("/api/v1/auth/refresh", json={"refreshToken": "made-up"}),
        401,
        "UNAUTHORIZED",
    )


async def test_refresh_refuses_expired_token(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    account = await factory.user()
    tokens = ok(await login(client, account.email, PASSWORD))
    async with sessionmaker() as session:
        row = await session.scalar(select(RefreshToken).where(RefreshToken.user_id == account.id))
        assert row is not None
        row.expires_at = datetime.now(UTC) - timedelta(seconds=1)
        await session.commit()
    err(
        await client.post("/api/v1/auth/refresh", json={"refreshToken": tokens["refreshToken"]}),
        401,
        "UNAUTHORIZED",
    )


async def test_logout_revokes_refresh_token(client: httpx.AsyncClient, factory: Factory) -> None:
    account = await factory.user()
    tokens = ok(await login(client, account.email, PASSWORD))
    assert (
        ok(await client.post("/api/v1/auth/logout", json={"refreshToken": tokens["refreshToken"]}))
        == {}
    )
    err(
        await client.post("/api/v1/auth/refresh", json={"refreshToken": tokens["refreshToken"]}),
        401,
        "UNAUTHORIZED",
    )
    err(
        await client.post("/api/v1/auth/logout", json={"refreshToken": tokens["refreshToken"]}),
        401,
        "UNAUTHORIZED",
    )


async def test_a_password_is_kept_as_sent_so_its_length_is_the_secrets(
    client: httpx.AsyncClient,
) -> None:
    padded = "x" + " " * 7  # 8 as sent; it was stored as "x" once trimmed after the check
    body = {"email": "padded@example.com", "password": padded, "name": "Padded"}
    ok(await client.post("/api/v1/auth/register", json=body), 201)

    short = {"email": "padded@example.com", "password": "x"}
    err(await client.post("/api/v1/auth/login", json=short), 401, "UNAUTHORIZED")
    whole = {"email": "padded@example.com", "password": padded}
    assert ok(await client.post("/api/v1/auth/login", json=whole))["accessToken"]


async def test_an_account_stored_with_a_trimmed_password_still_logs_in_with_the_spaces(
    client: httpx.AsyncClient, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    # Before passwords were kept as sent, " secret-pass " was stored as "secret-pass".
    async with sessionmaker.begin() as session:
        await service.create_user(
            session, email="legacy@example.com", password="secret-pass", name="Legacy"
        )

    for typed in (" secret-pass ", "secret-pass"):
        body = {"email": "legacy@example.com", "password": typed}
        assert ok(await client.post("/api/v1/auth/login", json=body))["accessToken"]
    wrong = {"email": "legacy@example.com", "password": " other-pass "}
    err(await client.post("/api/v1/auth/login", json=wrong), 401, "UNAUTHORIZED")
