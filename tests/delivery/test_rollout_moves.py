"""Staged rollout moves (CONTRACT 16): set, halt and resume, by the owner and by an
administrator; refused moves leave the version as it was; every move is audited."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import Plugin, PluginVersion
from tests.delivery.helpers import (
    ADMIN_PLUGINS,
    DEV_PLUGINS,
    Mover,
    StoredRollout,
    admin_version,
    audit_summary,
    rollout_audits,
    rollout_path,
    stored_plugin,
    stored_rollout,
)
from tests.factories import Account, Factory
from tests.helpers import err, field_names, ok
from tests.plugins.helpers import create_version, publish, review_plugin, review_version
from tests.takedown.helpers import admin_takedown

Sessions = async_sessionmaker[AsyncSession]


@dataclass
class Stage:
    """A verified developer's listed plugin, an administrator, and the caller under test."""

    dev: Account
    admin: Account
    plugin: Plugin
    mover: Mover


@pytest.fixture(params=["developer", "admin"])
async def stage(
    request: pytest.FixtureRequest, client: httpx.AsyncClient, factory: Factory
) -> Stage:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await factory.plugin(dev)
    if request.param == "developer":
        mover = Mover(client, dev, plugin.id)
    else:
        mover = Mover(client, admin, None)
    return Stage(dev, admin, plugin, mover)


async def _rolling(factory: Factory, plugin: Plugin, percent: int = 10) -> PluginVersion:
    """1.0.0 approved and full, then 1.1.0 approved (current) and rolling at `percent`."""
    await factory.version(plugin, "1.0.0")
    return await factory.version(plugin, "1.1.0", rollout_percent=percent, rollout_state="rolling")


def _rollout(data: dict[str, Any]) -> tuple[int, str, str | None]:
    rollout = data["rollout"]
    return rollout["percent"], rollout["state"], rollout["haltedReason"]


def _instant(text: str) -> datetime:
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text)


# ---------------------------------------------------------------- pending versions


async def test_a_new_version_is_full_at_100_and_stable(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    data = await create_version(client, dev, plugin, "1.0.0")
    assert data["channel"] == "stable"
    assert set(data["rollout"]) == {"percent", "state", "haltedReason", "updatedAt"}
    assert _rollout(data) == (100, "full", None)
    # Never moved: the rollout dates from the version's creation.
    assert _instant(data["rollout"]["updatedAt"]) == _instant(data["createdAt"])


async def test_a_pending_versions_percent_is_set_freely(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await factory.version(stage.plugin, "1.0.0", review_status="pending")
    steps = [(50, "rolling"), (10, "rolling"), (30, "rolling"), (100, "full"), (20, "rolling")]
    before = 100
    notes = []
    for percent, state in steps:
        data = ok(await stage.mover.set(version.id, percent))
        assert (data["id"], data["reviewStatus"], data["isLatest"]) == (
            version.id,
            "pending",
            False,
        )
        assert _rollout(data) == (percent, state, None)
        assert _instant(data["rollout"]["updatedAt"]) >= _instant(data["createdAt"])
        notes.append((state, f"{before}% -> {percent}%"))
        before = percent
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "pending", False, 20, "rolling", None
    )
    audits = await rollout_audits(client, stage.admin, version.id)
    assert audit_summary(audits) == [
        ("ROLLOUT_SET", stage.mover.account.id, stage.mover.trigger, state, note)
        for state, note in notes
    ]
    assert all(
        (a["detail"]["resourceType"], a["detail"]["resourceId"]) == ("plugin_version", version.id)
        for a in audits
    )


async def test_approving_a_pending_version_at_10_percent_makes_it_current_and_rolling(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    await factory.version(stage.plugin, "1.0.0")
    pending = await factory.version(stage.plugin, "1.1.0", review_status="pending")
    ok(await stage.mover.set(pending.id, 10))
    approved = ok(await review_version(client, stage.admin, pending.id, approved=True))
    assert (approved["reviewStatus"], approved["isLatest"]) == ("approved", True)
    assert _rollout(approved) == (10, "rolling", None)
    assert await stored_rollout(sessionmaker, pending.id) == StoredRollout(
        "approved", True, 10, "rolling", None
    )
    plugin = ok(await client.get(f"{ADMIN_PLUGINS}/{stage.plugin.id}", headers=stage.admin.headers))
    assert plugin["latestVersion"] == "1.1.0"
    versions = ok(
        await client.get(f"{ADMIN_PLUGINS}/{stage.plugin.id}/versions", headers=stage.admin.headers)
    )
    assert {v["version"]: v["isLatest"] for v in versions["items"]} == {
        "1.1.0": True,
        "1.0.0": False,
    }
    # Approved below 100, its percent may now only grow.
    err(await stage.mover.set(pending.id, 5), 409, "INVALID_STATE")
    assert _rollout(ok(await stage.mover.set(pending.id, 40))) == (40, "rolling", None)


async def test_a_pending_version_cannot_be_halted_or_resumed(
    stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await factory.version(stage.plugin, "1.0.0", review_status="pending")
    for _ in range(2):  # full, then rolling
        err(await stage.mover.halt(version.id), 409, "INVALID_STATE")
        err(await stage.mover.resume(version.id), 409, "INVALID_STATE")
        ok(await stage.mover.set(version.id, 30))
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "pending", False, 30, "rolling", None
    )


# ---------------------------------------------------------------- approved versions


async def test_an_approved_rolling_version_grows_then_becomes_full(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await _rolling(factory, stage.plugin)
    assert _rollout(ok(await stage.mover.set(version.id, 25))) == (25, "rolling", None)
    data = ok(await stage.mover.set(version.id, 100))
    assert _rollout(data) == (100, "full", None)
    assert (data["reviewStatus"], data["isLatest"]) == ("approved", True)
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 100, "full", None
    )
    assert audit_summary(await rollout_audits(client, stage.admin, version.id)) == [
        ("ROLLOUT_SET", stage.mover.account.id, stage.mover.trigger, "rolling", "10% -> 25%"),
        ("ROLLOUT_SET", stage.mover.account.id, stage.mover.trigger, "full", "25% -> 100%"),
    ]


async def test_an_approved_rolling_version_never_shrinks(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await _rolling(factory, stage.plugin, 30)
    for percent in (29, 1):
        err(await stage.mover.set(version.id, percent), 409, "INVALID_STATE")
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 30, "rolling", None
    )
    assert await rollout_audits(client, stage.admin, version.id) == []


async def test_setting_the_percent_a_version_has_is_a_quiet_no_op(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    # Not a shrink, so not refused (a retried request); nothing moved, so nothing audited
    # and the rollout keeps its date.
    rolling = await _rolling(factory, stage.plugin, 30)
    pending = await factory.version(stage.plugin, "1.2.0", review_status="pending")
    for version, percent, state in ((rolling, 30, "rolling"), (pending, 100, "full")):
        before = await admin_version(client, stage.admin, stage.plugin.id, version.id)
        data = ok(await stage.mover.set(version.id, percent))
        assert data["rollout"] == before["rollout"]
        assert _rollout(data) == (percent, state, None)
        assert await rollout_audits(client, stage.admin, version.id) == []
    assert await stored_rollout(sessionmaker, rolling.id) == StoredRollout(
        "approved", True, 30, "rolling", None
    )
    assert await stored_rollout(sessionmaker, pending.id) == StoredRollout(
        "pending", False, 100, "full", None
    )


@pytest.mark.parametrize("percent", [1, 50, 100])
async def test_a_full_approved_version_never_rolls_again(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions, percent: int
) -> None:
    version = await factory.version(stage.plugin, "1.0.0")
    err(await stage.mover.set(version.id, percent), 409, "INVALID_STATE")
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 100, "full", None
    )
    assert await rollout_audits(client, stage.admin, version.id) == []


async def test_a_version_rolled_to_full_takes_no_further_put(
    stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await _rolling(factory, stage.plugin)
    ok(await stage.mover.set(version.id, 100))
    for percent in (100, 50):
        err(await stage.mover.set(version.id, percent), 409, "INVALID_STATE")
    err(await stage.mover.halt(version.id), 409, "INVALID_STATE")
    err(await stage.mover.resume(version.id), 409, "INVALID_STATE")
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 100, "full", None
    )


async def test_halting_a_rolling_version_keeps_its_percent_and_reason(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await _rolling(factory, stage.plugin, 20)
    data = ok(await stage.mover.halt(version.id, "crash on start for Windows users"))
    assert _rollout(data) == (20, "halted", "crash on start for Windows users")
    # Halting decides who is offered it, not which version is current.
    assert (data["reviewStatus"], data["isLatest"]) == ("approved", True)
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 20, "halted", "crash on start for Windows users"
    )
    assert audit_summary(await rollout_audits(client, stage.admin, version.id)) == [
        (
            "ROLLOUT_HALT",
            stage.mover.account.id,
            stage.mover.trigger,
            "halted",
            "crash on start for Windows users",
        )
    ]


async def test_a_halted_version_takes_no_put_or_second_halt(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await _rolling(factory, stage.plugin, 20)
    ok(await stage.mover.halt(version.id, "leaks memory"))
    for percent in (20, 50, 100):
        err(await stage.mover.set(version.id, percent), 409, "INVALID_STATE")
    err(await stage.mover.halt(version.id, "again"), 409, "INVALID_STATE")
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 20, "halted", "leaks memory"
    )
    assert [a["action"] for a in await rollout_audits(client, stage.admin, version.id)] == [
        "ROLLOUT_HALT"
    ]


async def test_resume_rolls_again_at_the_same_percent(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await _rolling(factory, stage.plugin, 20)
    halted = ok(await stage.mover.halt(version.id, "leaks memory"))
    # Resume takes no body at all.
    resumed = ok(await stage.mover.resume(version.id))
    assert _rollout(resumed) == (20, "rolling", None)
    assert _instant(resumed["rollout"]["updatedAt"]) >= _instant(halted["rollout"]["updatedAt"])
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 20, "rolling", None
    )
    err(await stage.mover.resume(version.id), 409, "INVALID_STATE")
    # Rolling again: it may grow, never shrink.
    err(await stage.mover.set(version.id, 10), 409, "INVALID_STATE")
    ok(await stage.mover.set(version.id, 60))
    actor, trigger = stage.mover.account.id, stage.mover.trigger
    assert audit_summary(await rollout_audits(client, stage.admin, version.id)) == [
        ("ROLLOUT_HALT", actor, trigger, "halted", "leaks memory"),
        ("ROLLOUT_RESUME", actor, trigger, "rolling", "at 20% (was halted: leaks memory)"),
        ("ROLLOUT_SET", actor, trigger, "rolling", "20% -> 60%"),
    ]


async def test_resume_of_a_rollout_that_is_not_halted_is_409(
    stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    full = await factory.version(stage.plugin, "1.0.0")
    rolling = await factory.version(
        stage.plugin, "1.1.0", rollout_percent=10, rollout_state="rolling"
    )
    for version, expected in (
        (full, StoredRollout("approved", False, 100, "full", None)),
        (rolling, StoredRollout("approved", True, 10, "rolling", None)),
    ):
        err(await stage.mover.resume(version.id), 409, "INVALID_STATE")
        assert await stored_rollout(sessionmaker, version.id) == expected


async def test_resume_refuses_a_body_with_fields_and_accepts_an_empty_one(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await _rolling(factory, stage.plugin, 20)
    ok(await stage.mover.halt(version.id, "leaks memory"))
    path = f"{rollout_path(version.id, stage.mover.plugin_ref)}/resume"
    headers = stage.mover.account.headers
    refused = err(
        await client.post(path, json={"percent": 5}, headers=headers), 400, "VALIDATION_FAILED"
    )
    assert field_names(refused) == {"percent"}
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 20, "halted", "leaks memory"
    )
    assert _rollout(ok(await client.post(path, json={}, headers=headers))) == (20, "rolling", None)


async def test_the_owner_and_an_administrator_move_the_same_rollout_with_their_triggers(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await factory.plugin(dev)
    version = await _rolling(factory, plugin)
    owner, staff = Mover(client, dev, plugin.plugin_key), Mover(client, admin, None)
    ok(await owner.set(version.id, 20))  # the path takes the pluginKey too
    ok(await staff.halt(version.id, "reports of data loss"))
    ok(await owner.resume(version.id))
    ok(await staff.set(version.id, 100))
    assert audit_summary(await rollout_audits(client, admin, version.id)) == [
        ("ROLLOUT_SET", dev.id, "developer", "rolling", "10% -> 20%"),
        ("ROLLOUT_HALT", admin.id, "admin", "halted", "reports of data loss"),
        (
            "ROLLOUT_RESUME",
            dev.id,
            "developer",
            "rolling",
            "at 20% (was halted: reports of data loss)",
        ),
        ("ROLLOUT_SET", admin.id, "admin", "full", "20% -> 100%"),
    ]


# ---------------------------------------------------------------- versions without a rollout


async def test_a_prerelease_has_no_rollout(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    await factory.version(stage.plugin, "1.0.0")
    approved = await factory.version(
        stage.plugin, "2.0.0-beta.1", channel="prerelease", is_latest=False
    )
    pending = await factory.version(
        stage.plugin, "2.0.0-beta.2", channel="prerelease", review_status="pending"
    )
    for version, status in ((approved, "approved"), (pending, "pending")):
        for percent in (10, 100):
            err(await stage.mover.set(version.id, percent), 409, "INVALID_STATE")
        err(await stage.mover.halt(version.id), 409, "INVALID_STATE")
        err(await stage.mover.resume(version.id), 409, "INVALID_STATE")
        assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
            status, False, 100, "full", None
        )
        assert await rollout_audits(client, stage.admin, version.id) == []


async def test_a_rejected_version_has_no_rollout(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await factory.version(stage.plugin, "1.0.0", review_status="pending")
    ok(await stage.mover.set(version.id, 10))
    ok(await review_version(client, stage.admin, version.id, approved=False, reviewNote="no"))
    for percent in (20, 100):
        err(await stage.mover.set(version.id, percent), 409, "INVALID_STATE")
    err(await stage.mover.halt(version.id), 409, "INVALID_STATE")
    err(await stage.mover.resume(version.id), 409, "INVALID_STATE")
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "rejected", False, 10, "rolling", None
    )


async def test_a_taken_down_version_has_no_rollout_even_when_halted(
    client: httpx.AsyncClient, stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await _rolling(factory, stage.plugin, 10)
    ok(await stage.mover.halt(version.id, "broken"))
    ok(await admin_takedown(client, stage.admin, version.id, "malware"))
    for percent in (20, 100):
        err(await stage.mover.set(version.id, percent), 409, "INVALID_STATE")
    err(await stage.mover.halt(version.id), 409, "INVALID_STATE")
    err(await stage.mover.resume(version.id), 409, "INVALID_STATE")
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "taken_down", False, 10, "halted", "broken"
    )
    assert [a["action"] for a in await rollout_audits(client, stage.admin, version.id)] == [
        "ROLLOUT_HALT"
    ]


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "body",
    [
        {"percent": 0},
        {"percent": 101},
        {"percent": -5},
        {"percent": "50"},
        {"percent": 50.5},
        {"percent": True},
        {"percent": None},
        {},
    ],
    ids=["zero", "101", "negative", "string", "fraction", "boolean", "null", "missing"],
)
async def test_a_percent_outside_1_to_100_or_not_an_integer_is_400(
    client: httpx.AsyncClient,
    stage: Stage,
    factory: Factory,
    sessionmaker: Sessions,
    body: dict[str, Any],
) -> None:
    pending = await factory.version(stage.plugin, "1.1.0", review_status="pending")
    rolling = await factory.version(
        stage.plugin, "1.0.0", rollout_percent=10, rollout_state="rolling"
    )
    for version in (pending, rolling):
        error = err(await stage.mover.put(version.id, body), 400, "VALIDATION_FAILED")
        assert "percent" in field_names(error)
    assert await stored_rollout(sessionmaker, pending.id) == StoredRollout(
        "pending", False, 100, "full", None
    )
    assert await stored_rollout(sessionmaker, rolling.id) == StoredRollout(
        "approved", True, 10, "rolling", None
    )
    for version in (pending, rolling):
        assert await rollout_audits(client, stage.admin, version.id) == []


async def test_an_unknown_field_in_the_rollout_body_is_400_naming_it(
    stage: Stage, factory: Factory, sessionmaker: Sessions
) -> None:
    version = await factory.version(stage.plugin, "1.0.0", review_status="pending")
    response = await stage.mover.put(version.id, {"percent": 50, "state": "rolling"})
    assert "state" in field_names(err(response, 400, "VALIDATION_FAILED"))
    assert (await stored_rollout(sessionmaker, version.id)).percent == 100


@pytest.mark.parametrize(
    "body",
    [{}, {"reason": ""}, {"reason": "   "}, {"reason": None}, {"reason": "x" * 2001}],
    ids=["missing", "empty", "blank", "null", "too-long"],
)
async def test_a_halt_needs_a_reason(
    client: httpx.AsyncClient,
    stage: Stage,
    factory: Factory,
    sessionmaker: Sessions,
    body: dict[str, Any],
) -> None:
    version = await _rolling(factory, stage.plugin, 10)
    response = await stage.mover.client.post(
        f"{rollout_path(version.id, stage.mover.plugin_ref)}/halt",
        json=body,
        headers=stage.mover.account.headers,
    )
    assert "reason" in field_names(err(response, 400, "VALIDATION_FAILED"))
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 10, "rolling", None
    )
    assert await rollout_audits(client, stage.admin, version.id) == []


# ---------------------------------------------------------------- callers and the order of checks


async def test_another_developers_plugin_is_not_owned(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, other = await factory.developer(), await factory.developer()
    plugin = await factory.plugin(owner)
    version = await _rolling(factory, plugin, 10)
    intruder = Mover(client, other, plugin.id)
    for response in (
        await intruder.set(version.id, 50),
        await intruder.put(version.id, {"percent": 0}),  # ownership before the body
        await intruder.halt(version.id),
        await intruder.halt(version.id, ""),
        await intruder.resume(version.id),
    ):
        err(response, 403, "PLUGIN_NOT_OWNED")
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 10, "rolling", None
    )


@pytest.mark.parametrize("ref", ["random-id", "not-an-id"])
async def test_an_unknown_version_is_404(stage: Stage, ref: str) -> None:
    version_id = str(uuid.uuid4()) if ref == "random-id" else "nope"
    for response in (
        await stage.mover.set(version_id, 50),
        await stage.mover.put(version_id, {"percent": 0}),  # the item before the body
        await stage.mover.halt(version_id),
        await stage.mover.resume(version_id),
    ):
        err(response, 404, "PLUGIN_VERSION_NOT_FOUND")


async def test_an_unknown_plugin_on_the_developer_path_is_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await factory.plugin(dev)
    version = await _rolling(factory, plugin)
    mover = Mover(client, dev, "no-such-plugin")
    err(await mover.set(version.id, 50), 404, "PLUGIN_NOT_FOUND")
    err(await mover.halt(version.id), 404, "PLUGIN_NOT_FOUND")
    err(await mover.resume(version.id), 404, "PLUGIN_NOT_FOUND")


async def test_a_version_of_the_owners_other_plugin_is_404_under_this_plugin(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev = await factory.developer()
    mine, other = await factory.plugin(dev), await factory.plugin(dev)
    version = await _rolling(factory, other, 10)
    mover = Mover(client, dev, mine.id)
    for response in (
        await mover.set(version.id, 50),
        await mover.halt(version.id),
        await mover.resume(version.id),
    ):
        err(response, 404, "PLUGIN_VERSION_NOT_FOUND")
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 10, "rolling", None
    )
    # Under its own plugin the same call works.
    ok(await Mover(client, dev, other.id).set(version.id, 50))


@pytest.mark.parametrize("group", ["developer", "admin"])
async def test_without_a_token_is_401(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions, group: str
) -> None:
    dev = await factory.developer()
    plugin = await factory.plugin(dev)
    version = await _rolling(factory, plugin, 10)
    path = rollout_path(version.id, plugin.id if group == "developer" else None)
    err(await client.put(path, json={"percent": 50}), 401, "UNAUTHORIZED")
    err(await client.put(path, json={"percent": 0}), 401, "UNAUTHORIZED")
    err(await client.post(f"{path}/halt", json={"reason": "x"}), 401, "UNAUTHORIZED")
    err(await client.post(f"{path}/resume"), 401, "UNAUTHORIZED")
    bad = {"Authorization": "Bearer not-a-token"}
    err(await client.put(path, json={"percent": 50}, headers=bad), 401, "UNAUTHORIZED")
    assert (await stored_rollout(sessionmaker, version.id)).percent == 10


async def test_the_admin_route_refuses_developers_and_users(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev, user = await factory.developer(), await factory.user()
    plugin = await factory.plugin(dev)
    version = await _rolling(factory, plugin, 10)
    for account in (dev, user):  # the owner too: this is the administrators' path
        mover = Mover(client, account, None)
        err(await mover.set(version.id, 50), 403, "FORBIDDEN")
        err(await mover.put(version.id, {"percent": 0}), 403, "FORBIDDEN")
        err(await mover.halt(version.id), 403, "FORBIDDEN")
        err(await mover.resume(version.id), 403, "FORBIDDEN")
    # An unknown version is still the role's 403 first.
    err(await Mover(client, dev, None).set(str(uuid.uuid4()), 50), 403, "FORBIDDEN")
    assert await stored_rollout(sessionmaker, version.id) == StoredRollout(
        "approved", True, 10, "rolling", None
    )


async def test_the_developer_route_refuses_users_and_unverified_developers(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    unverified = await factory.developer(verified=False)
    user = await factory.user()
    plugin = await factory.plugin(unverified)
    version = await _rolling(factory, plugin, 10)
    err(await Mover(client, user, plugin.id).set(version.id, 50), 403, "FORBIDDEN")
    mover = Mover(client, unverified, plugin.id)
    err(await mover.set(version.id, 50), 403, "DEVELOPER_NOT_VERIFIED")
    err(await mover.halt(version.id), 403, "DEVELOPER_NOT_VERIFIED")
    err(await mover.resume(version.id), 403, "DEVELOPER_NOT_VERIFIED")
    assert (await stored_rollout(sessionmaker, version.id)).percent == 10


async def test_an_administrator_moves_any_developers_rollout(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await factory.plugin(dev)
    version = await _rolling(factory, plugin, 10)
    ok(await Mover(client, admin, None).set(version.id, 70))
    assert (await stored_rollout(sessionmaker, version.id)).percent == 70


# ---------------------------------------------------------------- representations


async def test_every_version_read_shows_the_rollout_and_channel(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await factory.plugin(dev)
    version = await _rolling(factory, plugin, 10)
    owner = Mover(client, dev, plugin.id)

    async def reads() -> list[dict[str, Any]]:
        detail = ok(await client.get(f"{DEV_PLUGINS}/{plugin.id}", headers=dev.headers))
        public = ok(await client.get(f"/api/v1/plugins/versions/{plugin.plugin_key}"))
        return [
            next(v for v in detail["versions"] if v["id"] == version.id),
            await admin_version(client, admin, plugin.id, version.id),
            next(v for v in public["items"] if v["id"] == version.id),
        ]

    for read in await reads():  # also warms the public cache
        assert read["channel"] == "stable"
        assert set(read["rollout"]) == {"percent", "state", "haltedReason", "updatedAt"}
        assert _rollout(read) == (10, "rolling", None)
    moved = ok(await owner.set(version.id, 35))
    halted = ok(await owner.halt(version.id, "crash on macOS"))
    for read in await reads():
        assert read["channel"] == "stable"
        assert read["rollout"] == halted["rollout"]
        assert _rollout(read) == (35, "halted", "crash on macOS")
        assert _instant(read["rollout"]["updatedAt"]) >= _instant(moved["rollout"]["updatedAt"])


async def test_the_plugin_stays_current_and_listed_through_every_move(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await factory.plugin(dev)
    version = await _rolling(factory, plugin, 10)
    mover = Mover(client, admin, None)
    for move in (
        mover.set(version.id, 20),
        mover.halt(version.id, "slow"),
        mover.resume(version.id),
        mover.set(version.id, 100),
    ):
        ok(await move)
        detail = ok(await client.get(f"/api/v1/plugins/detail/{plugin.plugin_key}"))
        assert detail["latestVersion"] == "1.1.0"
        assert (await stored_plugin(sessionmaker, plugin.id)).latest_version == "1.1.0"


async def test_a_version_published_through_the_api_rolls_out_after_review(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    await create_version(client, admin, plugin, "1.0.0", admin=True)
    candidate = await create_version(client, dev, plugin, "1.1.0")
    owner = Mover(client, dev, plugin["id"])
    ok(await owner.set(candidate["id"], 5))
    approved = ok(await review_version(client, admin, candidate["id"], approved=True))
    assert (approved["isLatest"], _rollout(approved)) == (True, (5, "rolling", None))
    ok(await owner.set(candidate["id"], 50))
    assert await stored_rollout(sessionmaker, candidate["id"]) == StoredRollout(
        "approved", True, 50, "rolling", None
    )
    assert (await stored_plugin(sessionmaker, plugin["id"])).latest_version == "1.1.0"
