"""Release channels (CONTRACT 16): a prerelease is approved without becoming current and is
followed by the plugin's latestPrerelease; a stable version keeps the seed's rule."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import AuditLog, PluginVersion
from marketplace.storage.base import blob_key
from tests.delivery.helpers import (
    ADMIN_PLUGINS,
    DEV_PLUGINS,
    channel_version,
    stored_plugin,
    tool_package,
    upload_version,
)
from tests.factories import Account, Factory
from tests.helpers import err, field_names, ok
from tests.plugins.helpers import admin_versions, publish, review_plugin, review_version
from tests.takedown.helpers import admin_takedown

Sessions = async_sessionmaker[AsyncSession]


async def _listed(
    client: httpx.AsyncClient, factory: Factory, **overrides: Any
) -> tuple[Account, Account, dict[str, Any]]:
    """A verified developer's plugin, approved and listed, with no version yet."""
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev, **overrides)
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    return dev, admin, plugin


async def _released(
    client: httpx.AsyncClient, admin: Account, plugin: dict[str, Any], version: str, **extra: Any
) -> dict[str, Any]:
    """An administrator's create-version: approved at once."""
    data: dict[str, Any] = ok(
        await channel_version(client, admin, plugin, version, admin=True, **extra), 201
    )
    return data


async def _plugin_reads(
    client: httpx.AsyncClient, dev: Account, admin: Account, plugin: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """The plugin as each group shows it: admin, developer detail, public detail, browse."""
    key = plugin["pluginKey"]
    browse = ok(await client.get("/api/v1/plugins/browse", params={"q": key}))
    [item] = [p for p in browse["items"] if p["pluginKey"] == key]
    return {
        "admin": ok(await client.get(f"{ADMIN_PLUGINS}/{plugin['id']}", headers=admin.headers)),
        "developer": ok(await client.get(f"{DEV_PLUGINS}/{plugin['id']}", headers=dev.headers)),
        "public": ok(await client.get(f"/api/v1/plugins/detail/{key}")),
        "browse": item,
    }


async def _latest(
    client: httpx.AsyncClient, dev: Account, admin: Account, plugin: dict[str, Any]
) -> tuple[str | None, str | None]:
    """(latestVersion, latestPrerelease), the same in every read."""
    reads = await _plugin_reads(client, dev, admin, plugin)
    pairs = {name: (p["latestVersion"], p["latestPrerelease"]) for name, p in reads.items()}
    assert len(set(pairs.values())) == 1, pairs
    return pairs["admin"]


async def _states(
    client: httpx.AsyncClient, admin: Account, plugin: dict[str, Any]
) -> dict[str, tuple[str, str, bool]]:
    """{version: (channel, reviewStatus, isLatest)} as the admin group lists them."""
    return {
        v["version"]: (v["channel"], v["reviewStatus"], v["isLatest"])
        for v in await admin_versions(client, admin, plugin["id"])
    }


# ---------------------------------------------------------------- create-version


@pytest.mark.parametrize("extra", [{}, {"channel": "stable"}], ids=["default", "explicit"])
async def test_a_stable_version_becomes_current_on_approval(
    client: httpx.AsyncClient, factory: Factory, extra: dict[str, Any]
) -> None:
    dev, admin, plugin = await _listed(client, factory)
    created = ok(await channel_version(client, dev, plugin, "1.0.0", **extra), 201)
    assert (created["channel"], created["reviewStatus"], created["isLatest"]) == (
        "stable",
        "pending",
        False,
    )
    approved = ok(await review_version(client, admin, created["id"], approved=True))
    assert (approved["channel"], approved["isLatest"]) == ("stable", True)
    assert await _latest(client, dev, admin, plugin) == ("1.0.0", None)


async def test_an_approved_prerelease_leaves_the_current_version_and_sets_latest_prerelease(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev, admin, plugin = await _listed(client, factory)
    await _released(client, admin, plugin, "1.0.0")
    created = ok(
        await channel_version(client, dev, plugin, "1.1.0-beta.1", channel="prerelease"), 201
    )
    assert (created["channel"], created["reviewStatus"], created["isLatest"]) == (
        "prerelease",
        "pending",
        False,
    )
    assert (created["rollout"]["percent"], created["rollout"]["state"]) == (100, "full")
    # Pending, it is nobody's latest anything.
    assert await _latest(client, dev, admin, plugin) == ("1.0.0", None)
    approved = ok(await review_version(client, admin, created["id"], approved=True))
    assert (approved["channel"], approved["reviewStatus"], approved["isLatest"]) == (
        "prerelease",
        "approved",
        False,
    )
    assert await _latest(client, dev, admin, plugin) == ("1.0.0", "1.1.0-beta.1")
    assert await _states(client, admin, plugin) == {
        "1.1.0-beta.1": ("prerelease", "approved", False),
        "1.0.0": ("stable", "approved", True),
    }
    row = await stored_plugin(sessionmaker, plugin["id"])
    assert (row.latest_version, row.latest_prerelease) == ("1.0.0", "1.1.0-beta.1")
    # Approved, it is public, and says which channel it is on.
    public = ok(await client.get(f"/api/v1/plugins/versions/{plugin['pluginKey']}"))
    assert [(v["version"], v["channel"], v["isLatest"]) for v in public["items"]] == [
        ("1.1.0-beta.1", "prerelease", False),
        ("1.0.0", "stable", True),
    ]
    async with sessionmaker() as session:
        audits = list(
            await session.scalars(select(AuditLog).where(AuditLog.resource_id == created["id"]))
        )
    assert [(a.action, a.trigger) for a in audits] == [("REVIEW_APPROVE", "admin")]


async def test_an_administrators_prerelease_is_approved_at_once_but_never_current(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, plugin = await _listed(client, factory)
    data = await _released(client, admin, plugin, "0.9.0-rc.1", channel="prerelease")
    assert (data["channel"], data["reviewStatus"], data["isLatest"]) == (
        "prerelease",
        "approved",
        False,
    )
    # No stable version at all: nothing is current.
    assert await _latest(client, dev, admin, plugin) == (None, "0.9.0-rc.1")
    await _released(client, admin, plugin, "0.8.0")
    assert await _latest(client, dev, admin, plugin) == ("0.8.0", "0.9.0-rc.1")


async def test_a_higher_approved_prerelease_moves_latest_prerelease_by_semver_precedence(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, plugin = await _listed(client, factory)
    await _released(client, admin, plugin, "1.0.0")
    steps = [
        ("2.0.0-beta.9", "2.0.0-beta.9"),
        ("2.0.0-beta.10", "2.0.0-beta.10"),  # precedence, not text order
        ("2.0.0-alpha.1", "2.0.0-beta.10"),  # a lower one approved later moves nothing
        ("2.0.0-rc.1", "2.0.0-rc.1"),
    ]
    for version, expected in steps:
        await _released(client, admin, plugin, version, channel="prerelease")
        assert await _latest(client, dev, admin, plugin) == ("1.0.0", expected)


async def test_pending_and_rejected_prereleases_do_not_move_latest_prerelease(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, plugin = await _listed(client, factory)
    await _released(client, admin, plugin, "1.0.0")
    await _released(client, admin, plugin, "2.0.0-beta.1", channel="prerelease")
    rejected = ok(
        await channel_version(client, dev, plugin, "2.0.0-beta.2", channel="prerelease"), 201
    )
    ok(await channel_version(client, dev, plugin, "2.0.0-beta.3", channel="prerelease"), 201)
    ok(await review_version(client, admin, rejected["id"], approved=False, reviewNote="no"))
    assert await _latest(client, dev, admin, plugin) == ("1.0.0", "2.0.0-beta.1")


async def test_the_channel_not_the_version_string_decides_what_becomes_current(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, plugin = await _listed(client, factory)
    await _released(client, admin, plugin, "2.0.0-rc.1", channel="stable")
    assert await _latest(client, dev, admin, plugin) == ("2.0.0-rc.1", None)
    await _released(client, admin, plugin, "3.0.0", channel="prerelease")
    assert await _latest(client, dev, admin, plugin) == ("2.0.0-rc.1", "3.0.0")
    assert await _states(client, admin, plugin) == {
        "3.0.0": ("prerelease", "approved", False),
        "2.0.0-rc.1": ("stable", "approved", True),
    }


async def test_a_stable_release_above_a_prerelease_keeps_latest_prerelease(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    # latestPrerelease is the newest approved prerelease, whatever the stable line did.
    dev, admin, plugin = await _listed(client, factory)
    await _released(client, admin, plugin, "2.0.0-beta.1", channel="prerelease")
    await _released(client, admin, plugin, "2.0.0")
    assert await _latest(client, dev, admin, plugin) == ("2.0.0", "2.0.0-beta.1")


# ---------------------------------------------------------------- takedown


async def test_taking_down_prereleases_recomputes_latest_prerelease(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev, admin, plugin = await _listed(client, factory)
    await _released(client, admin, plugin, "1.0.0")
    first = await _released(client, admin, plugin, "2.0.0-beta.1", channel="prerelease")
    second = await _released(client, admin, plugin, "2.0.0-beta.2", channel="prerelease")
    assert await _latest(client, dev, admin, plugin) == ("1.0.0", "2.0.0-beta.2")  # warm caches
    taken = ok(await admin_takedown(client, admin, second["id"], "crashes"))
    assert (taken["reviewStatus"], taken["isLatest"]) == ("taken_down", False)
    assert await _latest(client, dev, admin, plugin) == ("1.0.0", "2.0.0-beta.1")
    ok(await admin_takedown(client, admin, first["id"], "crashes too"))
    assert await _latest(client, dev, admin, plugin) == ("1.0.0", None)
    row = await stored_plugin(sessionmaker, plugin["id"])
    assert (row.latest_version, row.latest_prerelease) == ("1.0.0", None)


async def test_taking_down_an_older_prerelease_keeps_latest_prerelease(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, plugin = await _listed(client, factory)
    first = await _released(client, admin, plugin, "2.0.0-beta.1", channel="prerelease")
    await _released(client, admin, plugin, "2.0.0-beta.2", channel="prerelease")
    ok(await admin_takedown(client, admin, first["id"]))
    assert await _latest(client, dev, admin, plugin) == (None, "2.0.0-beta.2")


async def test_taking_down_the_current_version_hands_over_to_a_stable_one_never_a_prerelease(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev, admin, plugin = await _listed(client, factory)
    oldest = await _released(client, admin, plugin, "1.0.0")
    current = await _released(client, admin, plugin, "1.1.0")
    await _released(client, admin, plugin, "2.0.0-rc.1", channel="prerelease")
    await _released(client, admin, plugin, "1.2.0-beta.1", channel="prerelease")
    assert await _latest(client, dev, admin, plugin) == ("1.1.0", "2.0.0-rc.1")
    ok(await admin_takedown(client, admin, current["id"], "broken"))
    assert await _latest(client, dev, admin, plugin) == ("1.0.0", "2.0.0-rc.1")
    assert await _states(client, admin, plugin) == {
        "2.0.0-rc.1": ("prerelease", "approved", False),
        "1.2.0-beta.1": ("prerelease", "approved", False),
        "1.1.0": ("stable", "taken_down", False),
        "1.0.0": ("stable", "approved", True),
    }
    # The last stable one gone: nothing is current, though prereleases remain approved.
    ok(await admin_takedown(client, admin, oldest["id"], "broken too"))
    assert await _latest(client, dev, admin, plugin) == (None, "2.0.0-rc.1")
    async with sessionmaker() as session:
        current_rows = list(
            await session.scalars(
                select(PluginVersion.version).where(
                    PluginVersion.plugin_id == plugin["id"], PluginVersion.is_latest
                )
            )
        )
    assert current_rows == []


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "channel",
    ["beta", "", "STABLE", " stable", None, 1, ["stable"]],
    ids=["unknown", "empty", "upper-case", "space", "null", "number", "list"],
)
@pytest.mark.parametrize("group", ["developer", "admin"])
async def test_an_invalid_channel_in_create_version_is_400(
    client: httpx.AsyncClient, factory: Factory, group: str, channel: Any
) -> None:
    dev, admin, plugin = await _listed(client, factory)
    account = admin if group == "admin" else dev
    response = await channel_version(
        client, account, plugin, "1.0.0", admin=group == "admin", channel=channel
    )
    assert "channel" in field_names(err(response, 400, "VALIDATION_FAILED"))
    assert await admin_versions(client, admin, plugin["id"]) == []
    assert await _latest(client, dev, admin, plugin) == (None, None)


# ---------------------------------------------------------------- uploads


async def test_an_uploaded_prerelease_is_approved_without_becoming_current(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, plugin = await _listed(client, factory, type="tool", category="utility")
    stable = ok(await upload_version(client, dev, plugin, "1.0.0"), 201)
    assert stable["channel"] == "stable"
    ok(await review_version(client, admin, stable["id"], approved=True))
    beta = ok(await upload_version(client, dev, plugin, "1.1.0-beta.1", channel="prerelease"), 201)
    assert (beta["channel"], beta["reviewStatus"], beta["distribution"]) == (
        "prerelease",
        "pending",
        "tarball",
    )
    ok(await review_version(client, admin, beta["id"], approved=True))
    assert await _latest(client, dev, admin, plugin) == ("1.0.0", "1.1.0-beta.1")
    assert await _states(client, admin, plugin) == {
        "1.1.0-beta.1": ("prerelease", "approved", False),
        "1.0.0": ("stable", "approved", True),
    }


async def test_an_administrators_uploaded_prerelease_is_approved_but_not_current(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, plugin = await _listed(client, factory, type="tool", category="utility")
    ok(await upload_version(client, admin, plugin, "1.0.0", admin=True), 201)
    data = ok(
        await upload_version(client, admin, plugin, "2.0.0-rc.1", admin=True, channel="prerelease"),
        201,
    )
    assert (data["channel"], data["reviewStatus"], data["isLatest"]) == (
        "prerelease",
        "approved",
        False,
    )
    assert await _latest(client, dev, admin, plugin) == ("1.0.0", "2.0.0-rc.1")


@pytest.mark.parametrize("channel", ["bogus", "Prerelease"])
@pytest.mark.parametrize("group", ["developer", "admin"])
async def test_an_upload_with_an_unknown_channel_is_400_naming_the_field(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, group: str, channel: str
) -> None:
    dev, admin, plugin = await _listed(client, factory, type="tool", category="utility")
    account = admin if group == "admin" else dev
    response = await upload_version(
        client, account, plugin, "1.0.0", admin=group == "admin", channel=channel
    )
    assert field_names(err(response, 400, "VALIDATION_FAILED")) == {"channel"}
    assert await admin_versions(client, admin, plugin["id"]) == []
    # Refused before anything was stored.
    digest_key = blob_key(hashlib.sha256(tool_package(plugin["pluginKey"], "1.0.0")).hexdigest())
    assert not await app.state.blob_store.exists(digest_key)


async def test_approving_a_first_publication_releases_its_newest_stable_version(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """The linkage (CONTRACT 5) gives a first publication a current version: a pending
    prerelease, however new, is neither released by it nor counted as a release."""
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    stable = ok(await channel_version(client, dev, plugin, "1.0.0"), 201)
    beta = ok(await channel_version(client, dev, plugin, "1.1.0-beta.1", channel="prerelease"), 201)
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    assert await _latest(client, dev, admin, plugin) == ("1.0.0", None)
    versions = {v["id"]: v for v in await admin_versions(client, admin, plugin["id"])}
    assert (versions[stable["id"]]["reviewStatus"], versions[stable["id"]]["isLatest"]) == (
        "approved",
        True,
    )
    assert versions[beta["id"]]["reviewStatus"] == "pending"
