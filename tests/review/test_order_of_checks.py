"""CONTRACT 1, order of checks: 401 → 403 FORBIDDEN → 403 DEVELOPER_NOT_VERIFIED → 404 →
403 *_NOT_OWNED → 413 → 400/409. A body that is not valid JSON is a 400 "content" failure,
so it must not win over the token, role, identity, existence or ownership checks.

Today FastAPI decodes the JSON body before it resolves any dependency, so a malformed body
answers 400 VALIDATION_FAILED (SCENARIO_VALIDATION_FAILED in the scenario group) first.
"""

from __future__ import annotations

import httpx

from tests.factories import Factory
from tests.helpers import err
from tests.plugins.helpers import publish
from tests.scenarios import helpers as sc

BAD_JSON = b'{"pluginKey": '
JSON = {"content-type": "application/json"}
REASON = "malformed JSON body is decoded before auth/ownership: answers 400 instead of {}"


async def test_plugin_publish_bad_json_without_token_is_401(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/v1/developer/plugins/publish", content=BAD_JSON, headers=JSON
    )
    err(response, 401, "UNAUTHORIZED")


async def test_plugin_publish_bad_json_by_plain_user_is_forbidden(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    response = await client.post(
        "/api/v1/developer/plugins/publish", content=BAD_JSON, headers=JSON | user.headers
    )
    err(response, 403, "FORBIDDEN")


async def test_plugin_publish_bad_json_by_unverified_developer_is_not_verified(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer(verified=False)
    response = await client.post(
        "/api/v1/developer/plugins/publish", content=BAD_JSON, headers=JSON | dev.headers
    )
    err(response, 403, "DEVELOPER_NOT_VERIFIED")


async def test_plugin_update_bad_json_on_missing_plugin_is_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    response = await client.put(
        "/api/v1/developer/plugins/no-such-plugin", content=BAD_JSON, headers=JSON | dev.headers
    )
    err(response, 404, "PLUGIN_NOT_FOUND")


async def test_plugin_update_bad_json_on_other_developers_plugin_is_not_owned(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, other = await factory.developer(), await factory.developer()
    plugin = await publish(client, owner)
    response = await client.put(
        f"/api/v1/developer/plugins/{plugin['id']}", content=BAD_JSON, headers=JSON | other.headers
    )
    err(response, 403, "PLUGIN_NOT_OWNED")


async def test_admin_review_bad_json_by_developer_is_forbidden(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    plugin = await publish(client, owner)
    response = await client.post(
        f"/api/v1/admin/plugins/{plugin['id']}/review",
        content=BAD_JSON,
        headers=JSON | owner.headers,
    )
    err(response, 403, "FORBIDDEN")


async def test_scenario_publish_bad_json_without_token_is_401(client: httpx.AsyncClient) -> None:
    response = await client.post(f"{sc.DEV}/publish", content=BAD_JSON, headers=JSON)
    err(response, 401, "UNAUTHORIZED")


async def test_scenario_update_bad_json_on_other_developers_scenario_is_not_owned(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, other = await factory.developer(), await factory.developer()
    scenario = await sc.publish(client, owner)
    response = await client.put(
        f"{sc.DEV}/{scenario['id']}", content=BAD_JSON, headers=JSON | other.headers
    )
    err(response, 403, "SCENARIO_NOT_OWNED")


async def test_identity_submit_bad_json_without_token_is_401(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/v1/developer/identity", content=BAD_JSON, headers=JSON)
    err(response, 401, "UNAUTHORIZED")


async def test_role_change_bad_json_by_admin_is_forbidden(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, user = await factory.admin(), await factory.user()
    response = await client.put(
        f"/api/v1/admin/users/{user.id}/role", content=BAD_JSON, headers=JSON | admin.headers
    )
    err(response, 403, "FORBIDDEN")
