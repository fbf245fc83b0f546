"""Admin review of scenario versions: moves, refused moves, audit records, lists with counts."""

from __future__ import annotations

import asyncio
import hashlib

import httpx
import pytest
from sqlalchemy import func, select

from marketplace.models import AuditLog, Scenario, ScenarioVersion
from tests.factories import Factory
from tests.helpers import err, field_names, ok
from tests.scenarios.helpers import (
    ADMIN,
    DEV,
    PUBLIC,
    admin_versions,
    publish,
    released,
    review,
    scenario_package,
    unique_id,
    upload,
    version_id,
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


async def _state(sessionmaker, scenario_id: str) -> tuple[Scenario, dict[str, ScenarioVersion]]:
    async with sessionmaker() as session:
        scenario = await session.get(Scenario, scenario_id)
        assert scenario is not None
        rows = await session.scalars(
            select(ScenarioVersion).where(ScenarioVersion.scenario_id == scenario_id)
        )
        return scenario, {v.version: v for v in rows}


async def test_approve_makes_the_version_current_and_public_with_audit(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    vid = await version_id(client, admin, scenario["id"], "1.0.0")
    data = ok(await review(client, admin, vid, approved=True, reviewNote="looks good"))
    assert (data["reviewStatus"], data["isLatest"], data["reviewedBy"], data["reviewNote"]) == (
        "approved",
        True,
        admin.id,
        "looks good",
    )
    row, versions = await _state(sessionmaker, scenario["id"])
    assert (row.review_status, row.latest_version) == ("approved", "1.0.0")
    assert (versions["1.0.0"].review_status, versions["1.0.0"].is_latest) == ("approved", True)
    audit = await _audit(sessionmaker, vid)
    assert [
        (a.action, a.actor_id, a.resource_type, a.outcome, a.trigger, a.note) for a in audit
    ] == [("REVIEW_APPROVE", admin.id, "scenario_version", "approved", "admin", "looks good")]
    assert [s["id"] for s in ok(await client.get(PUBLIC))["items"]] == [scenario["id"]]
    # The audit list serves the record in seed 2.6's shape.
    logs = ok(
        await client.get(
            "/api/v1/admin/audit-logs",
            params={"resourceType": "scenario_version", "resourceId": vid},
            headers=admin.headers,
        )
    )
    assert [item["detail"] for item in logs["items"]] == [
        {
            "resourceType": "scenario_version",
            "resourceId": vid,
            "outcome": "approved",
            "trigger": "admin",
            "note": "looks good",
        }
    ]


async def test_reject_stores_the_note_and_leaves_it_unlisted(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    vid = await version_id(client, admin, scenario["id"], "1.0.0")
    data = ok(await review(client, admin, vid, approved=False, reviewNote="needs docs"))
    assert (data["reviewStatus"], data["isLatest"], data["reviewNote"], data["reviewedBy"]) == (
        "rejected",
        False,
        "needs docs",
        admin.id,
    )
    row, _ = await _state(sessionmaker, scenario["id"])
    assert (row.review_status, row.latest_version) == ("rejected", None)
    assert [(a.action, a.outcome, a.trigger) for a in await _audit(sessionmaker, vid)] == [
        ("REVIEW_REJECT", "rejected", "admin")
    ]
    mine = ok(
        await client.get(
            f"{DEV}/scenarios", params={"reviewStatus": "rejected"}, headers=dev.headers
        )
    )
    assert [s["id"] for s in mine["items"]] == [scenario["id"]]
    detail = ok(await client.get(f"{DEV}/{scenario['id']}", headers=dev.headers))
    assert detail["versions"][0]["reviewNote"] == "needs docs"
    assert ok(await client.get(PUBLIC))["total"] == 0


@pytest.mark.parametrize(
    ("first", "second"), [(True, True), (True, False), (False, True), (False, False)]
)
async def test_only_pending_versions_are_reviewed(
    client: httpx.AsyncClient, factory: Factory, sessionmaker, first: bool, second: bool
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    vid = await version_id(client, admin, scenario["id"], "1.0.0")
    ok(await review(client, admin, vid, approved=first))
    err(await review(client, admin, vid, approved=second), 409, "INVALID_STATE")
    _, versions = await _state(sessionmaker, scenario["id"])
    assert versions["1.0.0"].review_status == ("approved" if first else "rejected")
    assert len(await _audit(sessionmaker, vid)) == 1


async def test_each_approved_version_becomes_current_whatever_its_number(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await released(client, dev, admin)
    await publish(client, dev, id=scenario["id"], version="2.0.0", name="Second")
    await publish(client, dev, id=scenario["id"], version="1.5.0", name="Hotfix")
    # A pending newer version does not replace what the public sees.
    public = ok(await client.get(f"{PUBLIC}/{scenario['id']}"))
    assert (public["version"], public["name"]) == ("1.0.0", "Code review")
    ok(
        await review(
            client, admin, await version_id(client, admin, scenario["id"], "2.0.0"), approved=True
        )
    )
    ok(
        await review(
            client, admin, await version_id(client, admin, scenario["id"], "1.5.0"), approved=True
        )
    )
    # Seed part 3 and 9.5: the version approved last is current, though 2.0.0 is higher.
    row, versions = await _state(sessionmaker, scenario["id"])
    assert row.latest_version == "1.5.0"
    assert {v: (r.review_status, r.is_latest) for v, r in versions.items()} == {
        "1.0.0": ("approved", False),
        "1.5.0": ("approved", True),
        "2.0.0": ("approved", False),
    }
    public = ok(await client.get(f"{PUBLIC}/{scenario['id']}"))
    assert (public["version"], public["name"]) == ("1.5.0", "Hotfix")


async def test_status_follows_the_newest_version_only(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await released(client, dev, admin)
    await publish(client, dev, id=scenario["id"], version="1.1.0")
    row, _ = await _state(sessionmaker, scenario["id"])
    assert row.review_status == "pending"  # the newest version is pending
    await publish(client, dev, id=scenario["id"], version="0.9.0")
    ok(
        await review(
            client, admin, await version_id(client, admin, scenario["id"], "0.9.0"), approved=False
        )
    )
    row, _ = await _state(sessionmaker, scenario["id"])
    assert row.review_status == "pending"  # an older version's review does not change it
    ok(
        await review(
            client, admin, await version_id(client, admin, scenario["id"], "1.1.0"), approved=False
        )
    )
    row, _ = await _state(sessionmaker, scenario["id"])
    assert (row.review_status, row.latest_version) == ("rejected", "1.0.0")
    # Still listed: the approved 1.0.0 is served.
    assert ok(await client.get(f"{PUBLIC}/{scenario['id']}"))["version"] == "1.0.0"


async def test_review_refusals(client: httpx.AsyncClient, factory: Factory, sessionmaker) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    vid = await version_id(client, admin, scenario["id"], "1.0.0")
    err(
        await client.post(f"{ADMIN}/versions/{vid}/review", json={"approved": True}),
        401,
        "UNAUTHORIZED",
    )
    err(await review(client, dev, vid, approved=True), 403, "FORBIDDEN")
    for missing in ("0b6a1c2e-1111-4222-8333-444455556666", "not-a-uuid"):
        err(await review(client, admin, missing, approved=True), 404, "SCENARIO_NOT_FOUND")
    error = err(
        await review(client, admin, vid, approved="maybe", extra=1),
        400,
        "SCENARIO_VALIDATION_FAILED",
    )
    assert field_names(error) == {"approved", "extra"}
    err(await review(client, admin, vid), 400, "SCENARIO_VALIDATION_FAILED")
    _, versions = await _state(sessionmaker, scenario["id"])
    assert versions["1.0.0"].review_status == "pending"
    async with sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(AuditLog)) == 0


async def test_admin_versions_lists_every_state_newest_first(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    for version in ("1.0.0-rc.1", "2.0.0"):
        await publish(client, dev, id=scenario["id"], version=version)
    ok(
        await review(
            client,
            admin,
            await version_id(client, admin, scenario["id"], "1.0.0-rc.1"),
            approved=False,
        )
    )
    items = await admin_versions(client, admin, scenario["id"])
    assert [(v["version"], v["reviewStatus"]) for v in items] == [
        ("2.0.0", "pending"),
        ("1.0.0", "pending"),
        ("1.0.0-rc.1", "rejected"),
    ]
    err(
        await client.get(f"{ADMIN}/{unique_id()}/versions", headers=admin.headers),
        404,
        "SCENARIO_NOT_FOUND",
    )
    err(
        await client.get(f"{ADMIN}/{scenario['id']}/versions", headers=dev.headers),
        403,
        "FORBIDDEN",
    )
    detail = ok(await client.get(f"{ADMIN}/{scenario['id']}", headers=admin.headers))
    assert detail["version"] == "2.0.0" and len(detail["versions"]) == 3


async def test_admin_list_with_counts_search_and_filter(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    pending = await publish(client, dev, name="Alpha flow", nameZh="流程甲")
    approved = await released(client, dev, admin, name="Beta flow")
    rejected = await publish(client, dev, name="Gamma")
    ok(
        await review(
            client, admin, await version_id(client, admin, rejected["id"], "1.0.0"), approved=False
        )
    )
    down = await publish(client, dev, name="Delta flow")
    ok(await client.delete(f"{DEV}/{down['id']}", headers=dev.headers))

    data = ok(await client.get(ADMIN, headers=admin.headers))
    assert data["counts"] == {"all": 4, "pending": 1, "approved": 1, "rejected": 1, "taken_down": 1}
    assert data["total"] == 4 and (data["page"], data["limit"]) == (1, 20)
    assert {s["id"]: s["reviewStatus"] for s in data["items"]} == {
        pending["id"]: "pending",
        approved["id"]: "approved",
        rejected["id"]: "rejected",
        down["id"]: "taken_down",
    }
    filtered = ok(
        await client.get(ADMIN, params={"reviewStatus": "approved"}, headers=admin.headers)
    )
    assert [s["id"] for s in filtered["items"]] == [approved["id"]] and filtered["total"] == 1
    assert filtered["counts"]["all"] == 4
    searched = ok(await client.get(ADMIN, params={"search": "FLOW"}, headers=admin.headers))
    assert searched["counts"] == {
        "all": 3,
        "pending": 1,
        "approved": 1,
        "rejected": 0,
        "taken_down": 1,
    }
    chinese = ok(await client.get(ADMIN, params={"search": "流程"}, headers=admin.headers))
    assert [s["id"] for s in chinese["items"]] == [pending["id"]]
    by_id = ok(await client.get(ADMIN, params={"search": rejected["id"]}, headers=admin.headers))
    assert [s["id"] for s in by_id["items"]] == [rejected["id"]]
    paged = ok(await client.get(ADMIN, params={"limit": 500, "page": 1}, headers=admin.headers))
    assert paged["limit"] == 100
    two = ok(await client.get(ADMIN, params={"limit": 2, "page": 2}, headers=admin.headers))
    assert len(two["items"]) == 2 and two["total"] == 4
    err(
        await client.get(ADMIN, params={"page": 0}, headers=admin.headers), 400, "VALIDATION_FAILED"
    )
    err(
        await client.get(ADMIN, params={"reviewStatus": "bogus"}, headers=admin.headers),
        400,
        "VALIDATION_FAILED",
    )
    err(await client.get(ADMIN, headers=dev.headers), 403, "FORBIDDEN")
    err(await client.get(ADMIN), 401, "UNAUTHORIZED")


async def test_version_queue_defaults_to_pending(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    approved = await released(client, dev, admin, name="Shipped")
    queued = await publish(client, dev, name="Waiting")
    await publish(client, dev, id=approved["id"], version="1.1.0", name="Shipped")
    data = ok(await client.get(f"{ADMIN}/versions/pending", headers=admin.headers))
    assert {(v["scenarioId"], v["version"]) for v in data["items"]} == {
        (queued["id"], "1.0.0"),
        (approved["id"], "1.1.0"),
    }
    assert data["counts"] == {"all": 3, "pending": 2, "approved": 1, "rejected": 0, "taken_down": 0}
    everything = ok(
        await client.get(
            f"{ADMIN}/versions/pending", params={"reviewStatus": "all"}, headers=admin.headers
        )
    )
    assert everything["total"] == 3
    labelled = next(v for v in everything["items"] if v["reviewStatus"] == "approved")
    assert labelled["reviewerLabel"] == admin.name and labelled["scenarioName"] == "Shipped"
    searched = ok(
        await client.get(
            f"{ADMIN}/versions/pending", params={"search": "waiting"}, headers=admin.headers
        )
    )
    assert [v["scenarioId"] for v in searched["items"]] == [queued["id"]]


async def test_admin_downloads_a_pending_package(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    data = scenario_package(scenario["id"], "1.0.0")
    version = ok(await upload(client, dev, scenario["id"], data))
    info = ok(await client.get(f"{ADMIN}/versions/{version['id']}/download", headers=admin.headers))
    assert (info["sha256"], info["size"], info["version"]) == (
        hashlib.sha256(data).hexdigest(),
        len(data),
        "1.0.0",
    )
    blob = await client.get(info["url"].removeprefix("http://test"))
    assert blob.status_code == 200 and blob.content == data
    err(
        await client.get(f"{ADMIN}/versions/{version['id']}/download", headers=dev.headers),
        403,
        "FORBIDDEN",
    )
    bare = await publish(client, dev)
    bare_id = await version_id(client, admin, bare["id"], "1.0.0")
    err(
        await client.get(f"{ADMIN}/versions/{bare_id}/download", headers=admin.headers),
        404,
        "SCENARIO_NOT_FOUND",
    )


async def test_concurrent_reviews_of_one_version_apply_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    vid = await version_id(client, admin, scenario["id"], "1.0.0")
    responses = await asyncio.gather(
        *(review(client, admin, vid, approved=i % 2 == 0) for i in range(4))
    )
    assert sorted(r.status_code for r in responses) == [200, 409, 409, 409]
    assert len(await _audit(sessionmaker, vid)) == 1


async def test_concurrent_approvals_leave_exactly_one_current_version(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    versions = ["1.0.1", "1.0.2", "1.1.0"]
    for version in versions:
        await publish(client, dev, id=scenario["id"], version=version)
    ids = [await version_id(client, admin, scenario["id"], v) for v in ["1.0.0", *versions]]
    responses = await asyncio.gather(*(review(client, admin, i, approved=True) for i in ids))
    assert [r.status_code for r in responses] == [200] * 4
    # Each approval makes its version current (seed 3): the one committed last stays so.
    row, rows = await _state(sessionmaker, scenario["id"])
    current = [v for v, r in rows.items() if r.is_latest]
    assert len(current) == 1
    assert (row.latest_version, row.review_status) == (current[0], "approved")
