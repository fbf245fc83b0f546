"""The review state machine (seed part 3, CONTRACT 5): moves, refused moves, audit, isLatest."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from marketplace.models import AuditLog, Plugin, PluginVersion
from tests.factories import Factory
from tests.helpers import err, ok
from tests.plugins.helpers import (
    admin_versions,
    create_version,
    publish,
    review_plugin,
    review_version,
)


async def _audit(sessionmaker, resource_id: str) -> list[AuditLog]:
    async with sessionmaker() as session:
        return list(
            await session.scalars(
                select(AuditLog)
                .where(AuditLog.resource_id == resource_id)
                .order_by(AuditLog.created_at)
            )
        )


async def test_approving_plugin_releases_newest_pending_version(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    for version in ("1.0.0-alpha.9", "1.0.0-alpha.10", "0.9.0"):
        await create_version(client, dev, plugin, version)
    data = ok(await review_plugin(client, admin, plugin["id"], approved=True, reviewNote="welcome"))
    assert (
        data["reviewStatus"] == "approved"
        and data["enabled"] is True
        and data["reviewedBy"] == admin.id
    )
    assert data["latestVersion"] == "1.0.0-alpha.10" and data["reviewNote"] == "welcome"
    states = {
        v["version"]: (v["reviewStatus"], v["isLatest"])
        for v in await admin_versions(client, admin, plugin["id"])
    }
    assert states == {
        "1.0.0-alpha.10": ("approved", True),
        "1.0.0-alpha.9": ("pending", False),
        "0.9.0": ("pending", False),
    }
    linkage = [
        a
        for a in await _audit(
            sessionmaker,
            next(
                v["id"] for v in await admin_versions(client, admin, plugin["id"]) if v["isLatest"]
            ),
        )
    ]
    assert [(a.action, a.trigger, a.actor_id) for a in linkage] == [
        ("REVIEW_APPROVE", "linkage", admin.id)
    ]
    plugin_audit = await _audit(sessionmaker, plugin["id"])
    assert [(a.action, a.trigger, a.outcome, a.note, a.resource_type) for a in plugin_audit] == [
        ("REVIEW_APPROVE", "admin", "approved", "welcome", "plugin")
    ]


async def test_release_before_prerelease_in_semver_order(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    for version in ("1.0.0", "1.0.0-rc.1"):
        await create_version(client, dev, plugin, version)
    assert (
        ok(await review_plugin(client, admin, plugin["id"], approved=True))["latestVersion"]
        == "1.0.0"
    )


async def test_approve_pending_version_false_skips_release(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    await create_version(client, dev, plugin, "1.0.0")
    data = ok(
        await review_plugin(client, admin, plugin["id"], approved=True, approvePendingVersion=False)
    )
    assert data["latestVersion"] is None
    assert [v["reviewStatus"] for v in await admin_versions(client, admin, plugin["id"])] == [
        "pending"
    ]


async def test_plugin_approval_leaves_pending_versions_when_one_is_approved(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    await create_version(client, dev, plugin, "1.0.0")
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    ok(await client.delete(f"/api/v1/developer/plugins/{plugin['id']}", headers=dev.headers))
    await create_version(client, dev, plugin, "2.0.0")
    data = ok(await review_plugin(client, admin, plugin["id"], approved=True))
    assert data["latestVersion"] == "1.0.0"
    states = {
        v["version"]: v["reviewStatus"] for v in await admin_versions(client, admin, plugin["id"])
    }
    assert states == {"1.0.0": "approved", "2.0.0": "pending"}


async def test_reject_plugin_stores_note_and_disables(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    data = ok(
        await review_plugin(client, admin, plugin["id"], approved=False, reviewNote="malware")
    )
    assert (data["reviewStatus"], data["enabled"], data["reviewNote"]) == (
        "rejected",
        False,
        "malware",
    )
    mine = ok(
        await client.get(
            "/api/v1/developer/plugins", params={"reviewStatus": "rejected"}, headers=dev.headers
        )
    )
    assert [(p["id"], p["reviewNote"]) for p in mine["items"]] == [(plugin["id"], "malware")]
    assert [a.action for a in await _audit(sessionmaker, plugin["id"])] == [
        "REVIEW_APPROVE",
        "REVIEW_REJECT",
    ]


async def test_version_approval_moves_current_in_one_step(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    first = await create_version(client, dev, plugin, "1.0.0")
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    second = await create_version(client, dev, plugin, "1.1.0")
    # A pending version never becomes current.
    detail = ok(await client.get(f"/api/v1/developer/plugins/{plugin['id']}", headers=dev.headers))
    assert detail["latestVersion"] == "1.0.0"
    approved = ok(
        await review_version(client, admin, second["id"], approved=True, reviewNote="lgtm")
    )
    assert (
        approved["isLatest"] is True
        and approved["reviewStatus"] == "approved"
        and approved["reviewedBy"] == admin.id
    )
    async with sessionmaker() as session:
        rows = {
            v.version: v.is_latest
            for v in await session.scalars(
                select(PluginVersion).where(PluginVersion.plugin_id == plugin["id"])
            )
        }
        row = await session.get(Plugin, plugin["id"])
    assert rows == {"1.0.0": False, "1.1.0": True}
    assert row is not None and row.latest_version == "1.1.0"
    assert [(a.action, a.trigger) for a in await _audit(sessionmaker, second["id"])] == [
        ("REVIEW_APPROVE", "admin")
    ]
    assert first["id"] != second["id"]


async def test_version_rejection_stores_note(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    version = await create_version(client, dev, plugin, "1.0.0")
    data = ok(
        await review_version(client, admin, version["id"], approved=False, reviewNote="crashes")
    )
    assert (data["reviewStatus"], data["isLatest"], data["reviewNote"]) == (
        "rejected",
        False,
        "crashes",
    )
    assert [(a.action, a.outcome) for a in await _audit(sessionmaker, version["id"])] == [
        ("REVIEW_REJECT", "rejected")
    ]


@pytest.mark.parametrize("first", [True, False])
async def test_reviewing_a_reviewed_version_is_invalid_state(
    client: httpx.AsyncClient, factory: Factory, sessionmaker, first: bool
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    version = await create_version(client, dev, plugin, "1.0.0")
    ok(await review_version(client, admin, version["id"], approved=first))
    err(await review_version(client, admin, version["id"], approved=True), 409, "INVALID_STATE")
    err(await review_version(client, admin, version["id"], approved=False), 409, "INVALID_STATE")
    assert len(await _audit(sessionmaker, version["id"])) == 1


async def test_rejected_version_never_becomes_current_on_plugin_approval(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    newest = await create_version(client, dev, plugin, "2.0.0")
    await create_version(client, dev, plugin, "1.0.0")
    ok(await review_version(client, admin, newest["id"], approved=False))
    assert (
        ok(await review_plugin(client, admin, plugin["id"], approved=True))["latestVersion"]
        == "1.0.0"
    )


async def test_version_approval_of_taken_down_plugin_does_not_relist(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    await create_version(client, dev, plugin, "1.0.0")
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    ok(await client.delete(f"/api/v1/developer/plugins/{plugin['id']}", headers=dev.headers))
    second = await create_version(client, dev, plugin, "1.1.0")
    assert ok(await review_version(client, admin, second["id"], approved=True))["isLatest"] is True
    detail = ok(await client.get(f"/api/v1/admin/plugins/{plugin['id']}", headers=admin.headers))
    assert (detail["reviewStatus"], detail["enabled"], detail["latestVersion"]) == (
        "taken_down",
        False,
        "1.1.0",
    )


async def test_approving_a_lower_version_makes_it_current(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """Seed part 3 and 9.5: approval makes a version current, whatever its number."""
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    await create_version(client, dev, plugin, "2.0.0")
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    lower = await create_version(client, dev, plugin, "1.5.0")
    data = ok(await review_version(client, admin, lower["id"], approved=True))
    assert (data["reviewStatus"], data["isLatest"]) == ("approved", True)
    detail = ok(await client.get(f"/api/v1/admin/plugins/{plugin['id']}", headers=admin.headers))
    assert detail["latestVersion"] == "1.5.0"
    versions = ok(
        await client.get(f"/api/v1/admin/plugins/{plugin['id']}/versions", headers=admin.headers)
    )["items"]
    assert {v["version"]: v["isLatest"] for v in versions} == {"2.0.0": False, "1.5.0": True}
    public = ok(await client.get(f"/api/v1/plugins/versions/{plugin['id']}"))["items"]
    assert [v["version"] for v in public if v["isLatest"]] == ["1.5.0"]


async def test_review_errors(client: httpx.AsyncClient, factory: Factory) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    version = await create_version(client, dev, plugin, "1.0.0")
    err(
        await review_version(client, admin, "0e8c2b7e-3c4a-4b0e-9a3e-1f2d3c4b5a69", approved=True),
        404,
        "PLUGIN_VERSION_NOT_FOUND",
    )
    err(
        await review_version(client, admin, "not-a-uuid", approved=True),
        404,
        "PLUGIN_VERSION_NOT_FOUND",
    )
    err(
        await review_plugin(client, admin, "no-such-plugin", approved=True), 404, "PLUGIN_NOT_FOUND"
    )
    err(await review_plugin(client, dev, plugin["id"], approved=True), 403, "FORBIDDEN")
    err(await review_version(client, dev, version["id"], approved=True), 403, "FORBIDDEN")
    err(await review_plugin(client, admin, plugin["id"]), 400, "VALIDATION_FAILED")
    err(
        await review_plugin(client, admin, plugin["id"], approved="yes please"),
        400,
        "VALIDATION_FAILED",
    )


async def test_database_holds_at_most_one_current_version(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    first = await create_version(client, dev, plugin, "1.0.0")
    await create_version(client, dev, plugin, "1.1.0")
    ok(await review_version(client, admin, first["id"], approved=True))
    async with sessionmaker() as session:
        other = await session.scalar(
            select(PluginVersion).where(
                PluginVersion.version == "1.1.0", PluginVersion.plugin_id == plugin["id"]
            )
        )
        assert other is not None
        other.review_status = "approved"
        other.is_latest = True
        with pytest.raises(IntegrityError):
            await session.commit()


async def test_database_refuses_current_version_that_is_not_approved(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    await create_version(client, dev, plugin, "1.0.0")
    async with sessionmaker() as session:
        row = await session.scalar(
            select(PluginVersion).where(PluginVersion.plugin_id == plugin["id"])
        )
        assert row is not None
        row.is_latest = True
        with pytest.raises(IntegrityError):
            await session.commit()


async def test_concurrent_approvals_leave_exactly_one_current(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    versions = [await create_version(client, dev, plugin, f"1.{i}.0") for i in range(6)]
    responses = await asyncio.gather(
        *(review_version(client, admin, v["id"], approved=True) for v in versions)
    )
    assert [r.status_code for r in responses] == [200] * 6
    async with sessionmaker() as session:
        rows = list(
            await session.scalars(
                select(PluginVersion).where(PluginVersion.plugin_id == plugin["id"])
            )
        )
        row = await session.get(Plugin, plugin["id"])
    # Each approval makes its version current (seed 3): the one committed last stays so.
    current = [v.version for v in rows if v.is_latest]
    assert len(current) == 1
    assert row is not None and row.latest_version == current[0]


async def test_concurrent_identical_reviews_apply_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    version = await create_version(client, dev, plugin, "1.0.0")
    responses = await asyncio.gather(
        *(review_version(client, admin, version["id"], approved=True) for _ in range(5))
    )
    assert sorted(r.status_code for r in responses) == [200, 409, 409, 409, 409]
    assert len(await _audit(sessionmaker, version["id"])) == 1


async def test_concurrent_create_of_one_version_gives_one_201(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    from tests.plugins.helpers import config_manifest

    dev = await factory.developer()
    plugin = await publish(client, dev)
    body = {"version": "3.0.0", "manifest": config_manifest(plugin["pluginKey"], "3.0.0")}
    responses = await asyncio.gather(
        *(
            client.post(
                f"/api/v1/developer/plugins/{plugin['id']}/create-version",
                json=body,
                headers=dev.headers,
            )
            for _ in range(6)
        )
    )
    codes = sorted(r.status_code for r in responses)
    assert codes == [201, 409, 409, 409, 409, 409]
    assert all(
        r.json()["error"]["code"] == "PLUGIN_VERSION_EXISTS"
        for r in responses
        if r.status_code == 409
    )
    async with sessionmaker() as session:
        assert (
            len(
                list(
                    await session.scalars(
                        select(PluginVersion).where(PluginVersion.plugin_id == plugin["id"])
                    )
                )
            )
            == 1
        )


async def test_admin_list_counts_are_keyed_by_review_status_values(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    ok(await client.delete(f"/api/v1/developer/plugins/{plugin['id']}", headers=dev.headers))
    await publish(client, dev)
    for path in ("/api/v1/admin/plugins", "/api/v1/admin/plugins/versions/pending"):
        counts = ok(await client.get(path, headers=admin.headers))["counts"]
        assert set(counts) == {"all", "pending", "approved", "rejected", "taken_down"}
    counts = ok(await client.get("/api/v1/admin/plugins", headers=admin.headers))["counts"]
    assert counts == {"all": 2, "pending": 1, "approved": 0, "rejected": 0, "taken_down": 1}
