"""Version takedown (CONTRACT 11): moves, the new current version, refusals, downloads."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import select

from marketplace.models import AuditLog, PluginVersion
from tests.factories import Factory
from tests.helpers import err, field_names, ok
from tests.plugins.helpers import create_version, review_version
from tests.takedown.helpers import (
    ADMIN_PLUGINS,
    admin_takedown,
    developer_takedown,
    plugin_state,
    released_plugin,
)


async def _audit(sessionmaker: Any, version_id: str) -> list[AuditLog]:
    async with sessionmaker() as session:
        rows = await session.scalars(
            select(AuditLog).where(
                AuditLog.resource_id == version_id, AuditLog.action == "TAKEDOWN"
            )
        )
        return list(rows)


async def test_takedown_of_current_moves_current_to_highest_remaining_approved(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    # Released in this order, 1.5.0 is current; the highest left afterwards is 2.0.0, not
    # the one released before 1.5.0 (1.0.0-beta.10 > beta.9 shows precedence, not text).
    r = await released_plugin(client, factory, ("1.0.0-beta.10", "2.0.0", "1.0.0-beta.9", "1.5.0"))
    data = ok(await admin_takedown(client, r.admin, r.ids["1.5.0"], "steals credentials"))
    assert data["id"] == r.ids["1.5.0"]
    assert data["reviewStatus"] == "taken_down"
    assert data["reviewNote"] == "steals credentials"
    assert data["isLatest"] is False
    assert data["reviewedBy"] == r.admin.id
    latest, states = await plugin_state(client, r.admin, r.plugin["id"])
    assert latest == "2.0.0"
    assert states == {
        "2.0.0": ("approved", True),
        "1.5.0": ("taken_down", False),
        "1.0.0-beta.10": ("approved", False),
        "1.0.0-beta.9": ("approved", False),
    }
    async with sessionmaker() as session:
        row = await session.get(PluginVersion, r.ids["1.5.0"])
        assert row is not None and row.taken_down_at is not None
    [audit] = await _audit(sessionmaker, r.ids["1.5.0"])
    assert (audit.actor_id, audit.trigger, audit.note, audit.resource_type) == (
        r.admin.id,
        "admin",
        "steals credentials",
        "plugin_version",
    )
    public = ok(await client.get(f"/api/v1/plugins/versions/{r.key}"))
    assert [v["version"] for v in public["items"]] == ["2.0.0", "1.0.0-beta.10", "1.0.0-beta.9"]


async def test_takedown_of_a_version_that_is_not_current_keeps_the_current_one(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    ok(await admin_takedown(client, r.admin, r.ids["1.0.0"]))
    latest, states = await plugin_state(client, r.admin, r.plugin["id"])
    assert latest == "1.1.0"
    assert states == {"1.1.0": ("approved", True), "1.0.0": ("taken_down", False)}


async def test_takedown_of_the_last_approved_version_leaves_nothing_to_download(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0",))
    user = await factory.user()
    ok(await admin_takedown(client, r.admin, r.ids["1.0.0"]))
    latest, states = await plugin_state(client, r.admin, r.plugin["id"])
    assert latest is None
    assert states == {"1.0.0": ("taken_down", False)}
    # Still listed (CONTRACT 6: listing is the plugin's own state), but not downloadable.
    detail = ok(await client.get(f"/api/v1/plugins/detail/{r.key}"))
    assert detail["latestVersion"] is None
    assert ok(await client.get(f"/api/v1/plugins/versions/{r.key}"))["items"] == []
    for ref in ("latest", "1.0.0"):
        response = await client.get(f"/api/v1/plugins/download/{r.key}/{ref}", headers=user.headers)
        err(response, 403, "PLUGIN_VERSION_NOT_APPROVED")


async def test_download_and_install_of_a_taken_down_version_are_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    user = await factory.user()
    ok(await admin_takedown(client, r.admin, r.ids["1.1.0"]))
    for account in (user, r.dev):  # the owner needs no purchase, but still no withdrawn bytes
        response = await client.get(
            f"/api/v1/plugins/download/{r.key}/1.1.0", headers=account.headers
        )
        err(response, 403, "PLUGIN_VERSION_NOT_APPROVED")
        response = await client.post(
            f"/api/v1/plugins/install/{r.key}", json={"version": "1.1.0"}, headers=account.headers
        )
        err(response, 403, "PLUGIN_VERSION_NOT_APPROVED")
    latest = ok(await client.get(f"/api/v1/plugins/download/{r.key}/latest", headers=user.headers))
    assert latest["manifest"]["version"] == "1.0.0"
    # An administrator may still inspect what was withdrawn.
    ok(
        await client.get(
            f"{ADMIN_PLUGINS}/versions/{r.ids['1.1.0']}/download", headers=r.admin.headers
        )
    )


async def test_owner_takes_down_own_version_with_trigger_developer(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    # The path takes the pluginKey as well as the id.
    data = ok(await developer_takedown(client, r.dev, r.key, r.ids["1.1.0"], "token leaked"))
    assert (data["reviewStatus"], data["reviewNote"], data["isLatest"]) == (
        "taken_down",
        "token leaked",
        False,
    )
    assert (await plugin_state(client, r.admin, r.plugin["id"]))[0] == "1.0.0"
    [audit] = await _audit(sessionmaker, r.ids["1.1.0"])
    assert (audit.actor_id, audit.trigger, audit.note) == (r.dev.id, "developer", "token leaked")


async def test_a_taken_down_version_is_never_approved_again(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0",))
    ok(await admin_takedown(client, r.admin, r.ids["1.0.0"]))
    for approved in (True, False):
        response = await review_version(client, r.admin, r.ids["1.0.0"], approved=approved)
        err(response, 409, "INVALID_STATE")
    assert (await plugin_state(client, r.admin, r.plugin["id"]))[0] is None


async def test_already_taken_down_is_409(client: httpx.AsyncClient, factory: Factory) -> None:
    r = await released_plugin(client, factory)
    ok(await admin_takedown(client, r.admin, r.ids["1.0.0"]))
    error = err(await admin_takedown(client, r.admin, r.ids["1.0.0"]), 409, "INVALID_STATE")
    assert "already taken down" in error["message"]
    error = err(
        await developer_takedown(client, r.dev, r.plugin["id"], r.ids["1.0.0"]),
        409,
        "INVALID_STATE",
    )
    assert "already taken down" in error["message"]


@pytest.mark.parametrize("approved", [None, False])
async def test_pending_or_rejected_version_is_409(
    client: httpx.AsyncClient, factory: Factory, approved: bool | None
) -> None:
    r = await released_plugin(client, factory)
    pending = await create_version(client, r.dev, r.plugin, "2.0.0")
    if approved is not None:
        ok(await review_version(client, r.admin, pending["id"], approved=approved))
    state = "pending" if approved is None else "rejected"
    for response in (
        await admin_takedown(client, r.admin, pending["id"]),
        await developer_takedown(client, r.dev, r.plugin["id"], pending["id"]),
    ):
        error = err(response, 409, "INVALID_STATE")
        assert "Only an approved version can be taken down" in error["message"]
        assert state in error["message"]
    assert (await plugin_state(client, r.admin, r.plugin["id"]))[1]["2.0.0"] == (state, False)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "reason"),
        ({"reason": ""}, "reason"),
        ({"reason": "   "}, "reason"),
        ({"reason": "x" * 2001}, "reason"),
        ({"reason": 42}, "reason"),
        ({"reason": ["malware"]}, "reason"),
        ({"reason": None}, "reason"),
        ({"reason": "ok", "extra": 1}, "extra"),
    ],
)
async def test_reason_is_required_text_of_1_to_2000_characters(
    client: httpx.AsyncClient, factory: Factory, body: dict[str, Any], field: str
) -> None:
    r = await released_plugin(client, factory)
    for url, account in (
        (f"{ADMIN_PLUGINS}/versions/{r.ids['1.0.0']}/takedown", r.admin),
        (f"/api/v1/developer/plugins/{r.plugin['id']}/versions/{r.ids['1.0.0']}/takedown", r.dev),
    ):
        response = await client.post(url, json=body, headers=account.headers)
        assert field in field_names(err(response, 400, "VALIDATION_FAILED"))
    assert (await plugin_state(client, r.admin, r.plugin["id"]))[1]["1.0.0"] == ("approved", True)


async def test_a_reason_of_2000_characters_is_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory)
    data = ok(await admin_takedown(client, r.admin, r.ids["1.0.0"], "y" * 2000))
    assert data["reviewNote"] == "y" * 2000


async def test_refusals_by_caller_and_reference(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory)
    other = await released_plugin(client, factory)
    user, stranger = await factory.user(), await factory.developer()
    unverified = await factory.developer(verified=False)
    vid, pid = r.ids["1.0.0"], r.plugin["id"]
    missing = "00000000-0000-4000-8000-000000000000"
    body = {"reason": "x"}

    async def admin_post(version_id: str, headers: dict[str, str]) -> httpx.Response:
        url = f"{ADMIN_PLUGINS}/versions/{version_id}/takedown"
        return await client.post(url, json=body, headers=headers)

    async def dev_post(plugin: str, version_id: str, headers: dict[str, str]) -> httpx.Response:
        url = f"/api/v1/developer/plugins/{plugin}/versions/{version_id}/takedown"
        return await client.post(url, json=body, headers=headers)

    err(await admin_post(vid, {}), 401, "UNAUTHORIZED")
    err(await admin_post(vid, {"Authorization": "Bearer nope"}), 401, "UNAUTHORIZED")
    err(await admin_post(vid, user.headers), 403, "FORBIDDEN")
    err(await admin_post(vid, r.dev.headers), 403, "FORBIDDEN")
    err(await admin_post(missing, r.admin.headers), 404, "PLUGIN_VERSION_NOT_FOUND")
    err(await admin_post("not-an-id", r.admin.headers), 404, "PLUGIN_VERSION_NOT_FOUND")
    err(await dev_post(pid, vid, {}), 401, "UNAUTHORIZED")
    err(await dev_post(pid, vid, user.headers), 403, "FORBIDDEN")
    err(await dev_post(pid, vid, unverified.headers), 403, "DEVELOPER_NOT_VERIFIED")
    err(await dev_post("no-such-plugin", vid, r.dev.headers), 404, "PLUGIN_NOT_FOUND")
    err(await dev_post(pid, vid, stranger.headers), 403, "PLUGIN_NOT_OWNED")
    err(await dev_post(pid, missing, r.dev.headers), 404, "PLUGIN_VERSION_NOT_FOUND")
    # A version of the caller's other plugin is not a version of this one.
    err(await dev_post(pid, other.ids["1.0.0"], other.dev.headers), 403, "PLUGIN_NOT_OWNED")
    err(await dev_post(other.plugin["id"], vid, other.dev.headers), 404, "PLUGIN_VERSION_NOT_FOUND")
    # Not-owned comes before the body's 400 (CONTRACT 1, order of checks).
    url = f"/api/v1/developer/plugins/{pid}/versions/{vid}/takedown"
    err(await client.post(url, json={}, headers=stranger.headers), 403, "PLUGIN_NOT_OWNED")
    assert (await plugin_state(client, r.admin, pid))[1]["1.0.0"] == ("approved", True)


async def test_takedown_invalidates_cached_public_reads(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    detail_url = f"/api/v1/plugins/detail/{r.key}"
    versions_url = f"/api/v1/plugins/versions/{r.key}"
    cached = {url: await client.get(url) for url in (detail_url, versions_url)}
    assert cached[detail_url].json()["data"]["latestVersion"] == "1.1.0"
    for url, response in cached.items():  # served from the cache now
        again = await client.get(url, headers={"If-None-Match": response.headers["etag"]})
        assert again.status_code == 304
    ok(await admin_takedown(client, r.admin, r.ids["1.1.0"]))
    for url, response in cached.items():
        fresh = await client.get(url, headers={"If-None-Match": response.headers["etag"]})
        assert fresh.status_code == 200
    assert ok(await client.get(detail_url))["latestVersion"] == "1.0.0"
    assert [v["version"] for v in ok(await client.get(versions_url))["items"]] == ["1.0.0"]
