"""Errors name what they concern: PLUGIN_NOT_FOUND and PLUGIN_NOT_OWNED carry the plugin as the
request named it in `details` (their messages unchanged), and a missing role says which one
the route needs."""

from __future__ import annotations

import uuid

import httpx
import pytest

from marketplace.models import Role
from tests.factories import Factory
from tests.helpers import err, ok

NOT_FOUND = "Plugin does not exist"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/developer/plugins/{ref}"),
        ("PUT", "/api/v1/developer/plugins/{ref}"),
        ("GET", "/api/v1/plugins/detail/{ref}"),
        ("GET", "/api/v1/plugins/download/{ref}/1.0.0"),
        ("POST", "/api/v1/plugins/purchase/{ref}"),
        ("GET", "/api/v1/admin/plugins/{ref}"),
    ],
)
async def test_plugin_not_found_names_the_key_it_was_asked_for(
    client: httpx.AsyncClient, factory: Factory, method: str, path: str
) -> None:
    developer = await factory.developer()
    admin = await factory.admin()
    headers = admin.headers if "/admin/" in path else developer.headers
    body = {"name": "x"} if method == "PUT" else None
    response = await client.request(method, path.format(ref="weathr"), json=body, headers=headers)
    error = err(response, 404, "PLUGIN_NOT_FOUND")
    assert error["message"] == NOT_FOUND
    assert error["details"] == {"pluginKey": "weathr"}


async def test_plugin_not_found_by_id_names_the_id(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    missing = str(uuid.uuid4())
    response = await client.get(f"/api/v1/developer/plugins/{missing}", headers=developer.headers)
    error = err(response, 404, "PLUGIN_NOT_FOUND")
    assert (error["message"], error["details"]) == (NOT_FOUND, {"pluginId": missing})


async def test_an_unlisted_plugin_is_not_found_under_the_key_asked_for(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin(plugin_key="still-pending", review_status="pending")
    response = await client.get(f"/api/v1/plugins/detail/{plugin.plugin_key}")
    error = err(response, 404, "PLUGIN_NOT_FOUND")
    assert error["details"] == {"pluginKey": "still-pending"}


async def test_plugin_not_owned_names_the_key_and_changes_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner, plugin_key="someone-elses", name="Theirs")
    intruder = await factory.developer()
    for ref in (plugin.plugin_key, plugin.id):
        response = await client.put(
            f"/api/v1/developer/plugins/{ref}", json={"name": "Mine"}, headers=intruder.headers
        )
        error = err(response, 403, "PLUGIN_NOT_OWNED")
        assert error["message"] == "Only own plugins may be operated"
        assert error["details"] == {"pluginKey": "someone-elses"}
    detail = ok(await client.get(f"/api/v1/developer/plugins/{plugin.id}", headers=owner.headers))
    assert detail["name"] == "Theirs"


@pytest.mark.parametrize(
    ("caller", "method", "path", "needed", "message"),
    [
        (
            Role.DEVELOPER,
            "GET",
            "/api/v1/admin/plugins/versions/pending",
            "ADMIN",
            "This needs the ADMIN role (or SUPER_ADMIN); you are DEVELOPER",
        ),
        (
            Role.USER,
            "GET",
            "/api/v1/developer/plugins",
            "DEVELOPER",
            "This needs the DEVELOPER role (or ADMIN, SUPER_ADMIN); you are USER",
        ),
        (
            Role.ADMIN,
            "PUT",
            "/api/v1/admin/users/{self}/role",
            "SUPER_ADMIN",
            "This needs the SUPER_ADMIN role; you are ADMIN",
        ),
    ],
)
async def test_a_missing_role_says_which_role_is_needed(
    client: httpx.AsyncClient,
    factory: Factory,
    caller: Role,
    method: str,
    path: str,
    needed: str,
    message: str,
) -> None:
    account = await factory.user(caller)
    body = {"role": "SUPER_ADMIN"} if method == "PUT" else None
    response = await client.request(
        method, path.format(self=account.id), json=body, headers=account.headers
    )
    error = err(response, 403, "FORBIDDEN")
    assert error["message"] == message
    assert error["details"] == {"requiredRole": needed}
    me = ok(await client.get("/api/v1/auth/me", headers=account.headers))
    assert me["user"]["role"] == caller.value  # the refused role change changed nothing
