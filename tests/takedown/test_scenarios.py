"""Scenario version takedown: the administrator's route and the owner's (decisions.md)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.factories import Account, Factory
from tests.helpers import err, field_names, ok
from tests.scenarios.helpers import (
    PUBLIC,
    admin_versions,
    approve,
    publish,
    released,
    scenario_package,
    upload,
    version_id,
)
from tests.takedown.helpers import ADMIN_SCENARIOS, DEV_SCENARIOS


async def _two_versions(
    client: httpx.AsyncClient, factory: Factory
) -> tuple[Account, Account, str]:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await released(client, dev, admin)
    sid = scenario["id"]
    await publish(client, dev, id=sid, version="1.1.0")
    ok(await upload(client, dev, sid, scenario_package(sid, "1.1.0"), "1.1.0"))
    await approve(client, admin, sid, "1.1.0")
    return dev, admin, sid


def _states(items: list[dict[str, Any]]) -> dict[str, tuple[str, bool]]:
    return {v["version"]: (v["reviewStatus"], v["isLatest"]) for v in items}


async def test_admin_takes_down_current_scenario_version(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, sid = await _two_versions(client, factory)
    vid = await version_id(client, admin, sid, "1.1.0")
    response = await client.post(
        f"{ADMIN_SCENARIOS}/versions/{vid}/takedown",
        json={"reason": "exfiltrates files"},
        headers=admin.headers,
    )
    data = ok(response)
    assert (data["reviewStatus"], data["reviewNote"], data["isLatest"]) == (
        "taken_down",
        "exfiltrates files",
        False,
    )
    assert _states(await admin_versions(client, admin, sid)) == {
        "1.1.0": ("taken_down", False),
        "1.0.0": ("approved", True),
    }
    # Still public, serving the version left; the scenario itself is not taken down.
    public = ok(await client.get(f"{PUBLIC}/{sid}"))
    assert public["version"] == "1.0.0"
    user = await factory.user()
    info = ok(await client.get(f"{PUBLIC}/{sid}/download", headers=user.headers))
    assert "1.0.0" in info["url"]
    detail = ok(await client.get(f"{DEV_SCENARIOS}/{sid}", headers=dev.headers))
    assert detail["reviewStatus"] != "taken_down"


async def test_owner_takes_down_last_scenario_version_and_it_is_no_longer_public(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    sid = (await released(client, dev, admin))["id"]
    vid = await version_id(client, admin, sid, "1.0.0")
    url = f"{DEV_SCENARIOS}/{sid}/versions/{vid}/takedown"
    stranger = await factory.developer()
    err(
        await client.post(url, json={"reason": "x"}, headers=stranger.headers),
        403,
        "SCENARIO_NOT_OWNED",
    )
    ok(await client.post(url, json={"reason": "oops"}, headers=dev.headers))
    err(await client.post(url, json={"reason": "again"}, headers=dev.headers), 409, "INVALID_STATE")
    err(await client.get(f"{PUBLIC}/{sid}"), 404, "SCENARIO_NOT_FOUND")
    user = await factory.user()
    err(
        await client.get(f"{PUBLIC}/{sid}/download", headers=user.headers),
        404,
        "SCENARIO_NOT_FOUND",
    )


async def test_scenario_takedown_refusals(client: httpx.AsyncClient, factory: Factory) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    sid = (await released(client, dev, admin))["id"]
    vid = await version_id(client, admin, sid, "1.0.0")
    admin_url = f"{ADMIN_SCENARIOS}/versions/{vid}/takedown"
    err(await client.post(admin_url, json={"reason": "x"}), 401, "UNAUTHORIZED")
    err(await client.post(admin_url, json={"reason": "x"}, headers=dev.headers), 403, "FORBIDDEN")
    missing = f"{ADMIN_SCENARIOS}/versions/00000000-0000-4000-8000-000000000000/takedown"
    err(
        await client.post(missing, json={"reason": "x"}, headers=admin.headers),
        404,
        "SCENARIO_NOT_FOUND",
    )
    # The scenario groups' body code (CONTRACT 8).
    response = await client.post(admin_url, json={"reason": ""}, headers=admin.headers)
    assert "reason" in field_names(err(response, 400, "SCENARIO_VALIDATION_FAILED"))
    await publish(client, dev, id=sid, version="2.0.0")
    pending = await version_id(client, admin, sid, "2.0.0")
    url = f"{ADMIN_SCENARIOS}/versions/{pending}/takedown"
    error = err(
        await client.post(url, json={"reason": "x"}, headers=admin.headers), 409, "INVALID_STATE"
    )
    assert "pending" in error["message"]
