from __future__ import annotations

import httpx
from fastapi import FastAPI
from sqlalchemy import delete

from marketplace.auth.deps import VerifiedDeveloper
from marketplace.models import DeveloperProfile, IdentityStatus, Role, User
from tests.factories import Factory
from tests.helpers import err, ok


async def test_developer_register_promotes_user(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    account = await factory.user()
    data = ok(
        await client.post(
            "/api/v1/developer/register", json={"displayName": "Acme"}, headers=account.headers
        )
    )
    assert data["user"]["role"] == "DEVELOPER"
    async with sessionmaker() as session:
        profile = await session.get(DeveloperProfile, account.id)
        assert profile is not None
        assert profile.identity_status == "unverified"
        assert profile.display_name == "Acme"


async def test_developer_register_twice_is_invalid_state(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    account = await factory.developer()
    err(
        await client.post(
            "/api/v1/developer/register", json={"displayName": "x"}, headers=account.headers
        ),
        409,
        "INVALID_STATE",
    )


async def test_developer_register_needs_login(client: httpx.AsyncClient) -> None:
    err(
        await client.post("/api/v1/developer/register", json={"displayName": "x"}),
        401,
        "UNAUTHORIZED",
    )


async def test_identity_submit_moves_to_pending(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer(verified=False)
    data = ok(
        await client.post(
            "/api/v1/developer/identity",
            json={"realName": "Zhang San", "organization": "Acme"},
            headers=dev.headers,
        )
    )
    assert data["status"] == "pending"
    assert data["submittedAt"] is not None
    assert data["reviewedAt"] is None
    status = ok(await client.get("/api/v1/developer/identity/status", headers=dev.headers))
    assert status == data


async def test_identity_status_of_new_developer_is_unverified(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer(verified=False)
    status = ok(await client.get("/api/v1/developer/identity/status", headers=dev.headers))
    assert status == {
        "status": "unverified",
        "submittedAt": None,
        "reviewedAt": None,
        "reviewNote": None,
    }


async def test_identity_needs_developer_role(client: httpx.AsyncClient, factory: Factory) -> None:
    user = await factory.user()
    err(
        await client.get("/api/v1/developer/identity/status", headers=user.headers),
        403,
        "FORBIDDEN",
    )
    err(
        await client.post(
            "/api/v1/developer/identity", json={"realName": "x"}, headers=user.headers
        ),
        403,
        "FORBIDDEN",
    )


async def test_identity_resubmit_when_verified_is_invalid_state(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer(verified=True)
    err(
        await client.post(
            "/api/v1/developer/identity", json={"realName": "x"}, headers=dev.headers
        ),
        409,
        "INVALID_STATE",
    )


async def test_identity_refuses_bidi_control_characters(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer(verified=False)
    err(
        await client.post(
            "/api/v1/developer/identity", json={"realName": "evil\u202ename"}, headers=dev.headers
        ),
        400,
        "VALIDATION_FAILED",
    )


async def test_admin_reviews_identity_to_verified(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    admin = await factory.admin()
    dev = await factory.user(Role.DEVELOPER, identity=IdentityStatus.PENDING)
    data = ok(
        await client.post(
            f"/api/v1/admin/developers/{dev.id}/identity/review",
            json={"approved": True, "reviewNote": "ok"},
            headers=admin.headers,
        )
    )
    assert data["status"] == "verified"
    assert data["reviewNote"] == "ok"
    assert data["reviewedAt"]
    async with sessionmaker() as session:
        profile = await session.get(DeveloperProfile, dev.id)
        assert profile is not None
        assert profile.reviewed_by == admin.id


async def test_admin_rejects_identity_with_note(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    dev = await factory.user(Role.DEVELOPER, identity=IdentityStatus.PENDING)
    data = ok(
        await client.post(
            f"/api/v1/admin/developers/{dev.id}/identity/review",
            json={"approved": False, "reviewNote": "blurry"},
            headers=admin.headers,
        )
    )
    assert data["status"] == "rejected"
    status = ok(await client.get("/api/v1/developer/identity/status", headers=dev.headers))
    assert status["reviewNote"] == "blurry"


async def test_identity_review_of_unverified_is_invalid_state(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    dev = await factory.developer(verified=False)
    err(
        await client.post(
            f"/api/v1/admin/developers/{dev.id}/identity/review",
            json={"approved": True},
            headers=admin.headers,
        ),
        409,
        "INVALID_STATE",
    )


async def test_identity_review_of_unknown_user_is_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    err(
        await client.post(
            "/api/v1/admin/developers/nobody/identity/review",
            json={"approved": True},
            headers=admin.headers,
        ),
        404,
        "USER_NOT_FOUND",
    )


async def test_identity_review_needs_admin(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    err(
        await client.post(
            f"/api/v1/admin/developers/{dev.id}/identity/review",
            json={"approved": True},
            headers=dev.headers,
        ),
        403,
        "FORBIDDEN",
    )


async def test_admin_developer_list_counts_share_search_and_ignore_status(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    await factory.user(Role.DEVELOPER, identity=IdentityStatus.PENDING, name="Alpha One")
    await factory.user(Role.DEVELOPER, identity=IdentityStatus.VERIFIED, name="Alpha Two")
    await factory.user(Role.DEVELOPER, identity=IdentityStatus.PENDING, name="Beta")
    data = ok(
        await client.get(
            "/api/v1/admin/developers",
            params={"search": "alpha", "identityStatus": "pending"},
            headers=admin.headers,
        )
    )
    assert [i["name"] for i in data["items"]] == ["Alpha One"]
    assert data["total"] == 1
    assert data["counts"] == {"all": 2, "unverified": 0, "pending": 1, "verified": 1, "rejected": 0}
    assert data["page"] == 1
    assert data["limit"] == 20


async def test_admin_developer_list_clamps_limit_and_refuses_page_zero(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    data = ok(
        await client.get("/api/v1/admin/developers", params={"limit": 500}, headers=admin.headers)
    )
    assert data["limit"] == 100
    err(
        await client.get("/api/v1/admin/developers", params={"page": 0}, headers=admin.headers),
        400,
        "VALIDATION_FAILED",
    )
    err(
        await client.get(
            "/api/v1/admin/developers", params={"identityStatus": "bogus"}, headers=admin.headers
        ),
        400,
        "VALIDATION_FAILED",
    )


async def test_admin_developer_list_needs_admin(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    err(await client.get("/api/v1/admin/developers", headers=dev.headers), 403, "FORBIDDEN")
    err(await client.get("/api/v1/admin/developers"), 401, "UNAUTHORIZED")


async def test_super_admin_changes_role_and_demotion_applies_at_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    root = await factory.super_admin()
    admin = await factory.admin()
    ok(await client.get("/api/v1/admin/developers", headers=admin.headers))
    data = ok(
        await client.put(
            f"/api/v1/admin/users/{admin.id}/role", json={"role": "USER"}, headers=root.headers
        )
    )
    assert data["user"]["role"] == "USER"
    # The same, still unexpired token no longer carries admin rights.
    err(await client.get("/api/v1/admin/developers", headers=admin.headers), 403, "FORBIDDEN")
    async with sessionmaker() as session:
        user = await session.get(User, admin.id)
        assert user is not None
        assert user.role == "USER"


async def test_role_change_needs_super_admin(client: httpx.AsyncClient, factory: Factory) -> None:
    admin = await factory.admin()
    other = await factory.user()
    err(
        await client.put(
            f"/api/v1/admin/users/{other.id}/role", json={"role": "ADMIN"}, headers=admin.headers
        ),
        403,
        "FORBIDDEN",
    )


async def test_role_change_refuses_demoting_last_super_admin(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    root = await factory.super_admin()
    err(
        await client.put(
            f"/api/v1/admin/users/{root.id}/role", json={"role": "ADMIN"}, headers=root.headers
        ),
        409,
        "INVALID_STATE",
    )


async def test_role_change_errors(client: httpx.AsyncClient, factory: Factory) -> None:
    root = await factory.super_admin()
    err(
        await client.put(
            "/api/v1/admin/users/nobody/role", json={"role": "ADMIN"}, headers=root.headers
        ),
        404,
        "USER_NOT_FOUND",
    )
    err(
        await client.put(
            f"/api/v1/admin/users/{root.id}/role", json={"role": "KING"}, headers=root.headers
        ),
        400,
        "VALIDATION_FAILED",
    )


async def test_role_change_to_developer_creates_unverified_profile(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    root = await factory.super_admin()
    user = await factory.user()
    ok(
        await client.put(
            f"/api/v1/admin/users/{user.id}/role", json={"role": "DEVELOPER"}, headers=root.headers
        )
    )
    status = ok(await client.get("/api/v1/developer/identity/status", headers=user.headers))
    assert status["status"] == "unverified"


async def test_verified_developer_dependency(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    @app.post("/test-only/verified-write")
    async def verified_write(user: VerifiedDeveloper) -> dict[str, str]:
        return {"id": user.id}

    unverified = await factory.developer(verified=False)
    verified = await factory.developer(verified=True)
    plain = await factory.user()
    err(await client.post("/test-only/verified-write"), 401, "UNAUTHORIZED")
    err(await client.post("/test-only/verified-write", headers=plain.headers), 403, "FORBIDDEN")
    err(
        await client.post("/test-only/verified-write", headers=unverified.headers),
        403,
        "DEVELOPER_NOT_VERIFIED",
    )
    response = await client.post("/test-only/verified-write", headers=verified.headers)
    assert response.status_code == 200
    assert response.json() == {"id": verified.id}


async def test_an_admin_without_a_profile_reads_the_status_and_gets_one_made(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    """The status is a read (on SQLite its session cannot write): the profile an admin
    acting as a developer lacks is made in a transaction of its own, once, even when two
    first reads come at once."""
    import asyncio

    admin = await factory.admin()
    async with sessionmaker() as session:
        await session.execute(delete(DeveloperProfile).where(DeveloperProfile.user_id == admin.id))
        await session.commit()
    url = "/api/v1/developer/identity/status"
    answers = await asyncio.gather(*(client.get(url, headers=admin.headers) for _ in range(2)))
    for answer in answers:
        assert ok(answer)["status"] == "unverified"
    async with sessionmaker() as session:
        profile = await session.get(DeveloperProfile, admin.id)
        assert profile is not None and profile.identity_status == IdentityStatus.UNVERIFIED
