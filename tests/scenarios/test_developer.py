"""Scenario developer group: publish, own list, detail, update, takedown, checks and their order."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from marketplace.models import Role, Scenario, ScenarioVersion
from tests.factories import Factory
from tests.helpers import err, field_names, ok
from tests.scenarios.helpers import (
    DEV,
    PUBLIC,
    admin_versions,
    approve,
    publish,
    publish_body,
    released,
    unique_id,
)


async def _rows(sessionmaker, scenario_id: str) -> tuple[Scenario | None, list[ScenarioVersion]]:
    async with sessionmaker() as session:
        scenario = await session.get(Scenario, scenario_id)
        versions = list(
            await session.scalars(
                select(ScenarioVersion).where(ScenarioVersion.scenario_id == scenario_id)
            )
        )
    return scenario, versions


# ---------- publish ----------


async def test_publish_new_id_creates_pending_scenario(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    body = publish_body()
    data = ok(await client.post(f"{DEV}/publish", json=body, headers=dev.headers), 201)
    expected = {
        k: body[k]
        for k in (
            "id",
            "version",
            "name",
            "nameZh",
            "description",
            "descriptionZh",
            "type",
            "category",
            "permissions",
            "changelog",
        )
    }
    assert {k: data[k] for k in expected} == expected
    assert (data["reviewStatus"], data["sha256"], data["size"], data["ownerId"]) == (
        "pending",
        None,
        None,
        dev.id,
    )
    assert [(v["version"], v["reviewStatus"], v["isLatest"]) for v in data["versions"]] == [
        ("1.0.0", "pending", False)
    ]
    scenario, versions = await _rows(sessionmaker, body["id"])
    assert scenario is not None and scenario.owner_id == dev.id
    assert scenario.review_status == "pending" and scenario.latest_version is None
    assert [(v.version, v.review_status, v.name) for v in versions] == [
        ("1.0.0", "pending", "Code review")
    ]


async def test_publish_only_required_fields(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    body = {
        "id": unique_id(),
        "version": "0.1.0",
        "name": "Minimal",
        "type": "programmatic",
        "category": "ai",
    }
    data = ok(await client.post(f"{DEV}/publish", json=body, headers=dev.headers), 201)
    assert (data["nameZh"], data["description"], data["descriptionZh"], data["changelog"]) == (
        None,
        None,
        None,
        None,
    )
    assert data["permissions"] == []


async def test_publish_owned_id_adds_a_version_that_becomes_newest(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    first = await publish(client, dev)
    data = ok(
        await client.post(
            f"{DEV}/publish",
            json={
                "id": first["id"],
                "version": "1.1.0",
                "name": "Code review 2",
                "type": "programmatic",
                "category": "ai",
                "permissions": ["network"],
                "changelog": "second",
            },
            headers=dev.headers,
        ),
        201,
    )
    assert (data["version"], data["name"], data["category"], data["changelog"]) == (
        "1.1.0",
        "Code review 2",
        "ai",
        "second",
    )
    # Texts left out keep the scenario's values; permissions belong to the version.
    assert (data["nameZh"], data["description"], data["permissions"]) == (
        "代码评审",
        "Reviews a pull request",
        ["network"],
    )
    assert [v["version"] for v in data["versions"]] == ["1.1.0", "1.0.0"]
    scenario, versions = await _rows(sessionmaker, first["id"])
    assert scenario is not None and scenario.version == "1.1.0"
    assert sorted(v.version for v in versions) == ["1.0.0", "1.1.0"]


async def test_publishing_a_lower_version_keeps_the_newest(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    first = await publish(client, dev, version="2.0.0")
    data = ok(
        await client.post(
            f"{DEV}/publish",
            json=publish_body(id=first["id"], version="1.9.0", name="Hotfix"),
            headers=dev.headers,
        ),
        201,
    )
    assert (data["version"], data["name"]) == ("2.0.0", "Code review")
    assert [v["version"] for v in data["versions"]] == ["2.0.0", "1.9.0"]


async def test_publish_existing_version_is_409(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    first = await publish(client, dev)
    err(
        await client.post(
            f"{DEV}/publish",
            json=publish_body(id=first["id"], name="Other"),
            headers=dev.headers,
        ),
        409,
        "SCENARIO_VERSION_EXISTS",
    )
    scenario, versions = await _rows(sessionmaker, first["id"])
    assert scenario is not None and scenario.name == "Code review" and len(versions) == 1


async def test_publish_another_owners_id_is_not_owned(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    owner, other = await factory.developer(), await factory.developer()
    first = await publish(client, owner)
    err(
        await client.post(
            f"{DEV}/publish",
            json=publish_body(id=first["id"], version="2.0.0"),
            headers=other.headers,
        ),
        403,
        "SCENARIO_NOT_OWNED",
    )
    # Ownership is checked before the content: an invalid body still gets the 403.
    err(
        await client.post(
            f"{DEV}/publish",
            json={"id": first["id"], "version": "not semver", "bogus": 1},
            headers=other.headers,
        ),
        403,
        "SCENARIO_NOT_OWNED",
    )
    scenario, versions = await _rows(sessionmaker, first["id"])
    assert scenario is not None and scenario.owner_id == owner.id and len(versions) == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"id": "ab"}, "id"),
        ({"id": "x" * 65}, "id"),
        ({"id": "Upper-case"}, "id"),
        ({"id": "9starts-with-digit"}, "id"),
        ({"id": "has_underscore"}, "id"),
        ({"id": "0b6a1c2e-1111-4222-8333-444455556666"}, "id"),
        ({"id": "publish"}, "id"),
        ({"id": "scenarios"}, "id"),
        ({"version": "1.0"}, "version"),
        ({"version": "v1.0.0"}, "version"),
        ({"version": "1.0.0+build.1"}, "version"),
        ({"name": ""}, "name"),
        ({"name": "evil\u202ename"}, "name"),
        ({"type": "Programmatic"}, "type"),
        ({"type": "two words"}, "type"),
        ({"type": ""}, "type"),
        ({"permissions": "filesystem:read"}, "permissions"),
        ({"permissions": [""]}, "permissions.0"),
        ({"category": ""}, "category"),
        ({"reviewStatus": "approved"}, "reviewStatus"),
        ({"ownerId": "someone"}, "ownerId"),
        ({"sha256": "0" * 64}, "sha256"),
        ({"name_zh": "snake case"}, "name_zh"),
    ],
)
async def test_publish_refuses_invalid_or_unknown_field_by_name(
    client: httpx.AsyncClient, factory: Factory, sessionmaker, change: dict[str, Any], field: str
) -> None:
    dev = await factory.developer()
    body = publish_body(**change)
    error = err(
        await client.post(f"{DEV}/publish", json=body, headers=dev.headers),
        400,
        "SCENARIO_VALIDATION_FAILED",
    )
    assert field in field_names(error)
    async with sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(Scenario)) == 0


@pytest.mark.parametrize("missing", ["id", "version", "name", "type", "category"])
async def test_publish_requires_field(
    client: httpx.AsyncClient, factory: Factory, missing: str
) -> None:
    dev = await factory.developer()
    body = publish_body()
    del body[missing]
    error = err(
        await client.post(f"{DEV}/publish", json=body, headers=dev.headers),
        400,
        "SCENARIO_VALIDATION_FAILED",
    )
    assert field_names(error) == {missing}


async def test_publish_refuses_unknown_category(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    error = err(
        await client.post(
            f"{DEV}/publish", json=publish_body(category="toys"), headers=dev.headers
        ),
        400,
        "SCENARIO_VALIDATION_FAILED",
    )
    assert field_names(error) == {"category"} and 'Invalid category "toys"' in error["message"]
    async with sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(Scenario)) == 0


@pytest.mark.parametrize("raw", [b"not json", b"[]", b"null"])
async def test_publish_refuses_a_body_that_is_not_an_object(
    client: httpx.AsyncClient, factory: Factory, raw: bytes
) -> None:
    dev = await factory.developer()
    response = await client.post(
        f"{DEV}/publish",
        content=raw,
        headers={**dev.headers, "content-type": "application/json"},
    )
    err(response, 400, "SCENARIO_VALIDATION_FAILED")


async def test_publish_permission_order(client: httpx.AsyncClient, factory: Factory) -> None:
    unverified, user = await factory.developer(verified=False), await factory.user()
    body = publish_body(version="bad")
    err(await client.post(f"{DEV}/publish", json=body), 401, "UNAUTHORIZED")
    err(
        await client.post(
            f"{DEV}/publish", json=body, headers={"Authorization": "Bearer not-a-token"}
        ),
        401,
        "UNAUTHORIZED",
    )
    err(await client.post(f"{DEV}/publish", json=body, headers=user.headers), 403, "FORBIDDEN")
    err(
        await client.post(f"{DEV}/publish", json=body, headers=unverified.headers),
        403,
        "DEVELOPER_NOT_VERIFIED",
    )


async def test_admin_may_publish_as_a_developer(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    assert (await publish(client, admin))["ownerId"] == admin.id


async def test_concurrent_publishes_of_one_new_id_give_one_201(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    body = publish_body()
    responses = await asyncio.gather(
        *(client.post(f"{DEV}/publish", json=body, headers=dev.headers) for _ in range(4))
    )
    assert sorted(r.status_code for r in responses) == [201, 409, 409, 409]
    assert {r.json()["error"]["code"] for r in responses if r.status_code == 409} == {
        "SCENARIO_VERSION_EXISTS"
    }
    _, versions = await _rows(sessionmaker, body["id"])
    assert len(versions) == 1


# ---------- own list and detail ----------


async def test_list_shows_only_own_scenarios_in_every_state(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, other, admin = await factory.developer(), await factory.developer(), await factory.admin()
    pending = await publish(client, dev)
    approved = await released(client, dev, admin)
    down = await publish(client, dev)
    ok(await client.delete(f"{DEV}/{down['id']}", headers=dev.headers))
    await publish(client, other)
    data = ok(await client.get(f"{DEV}/scenarios", headers=dev.headers))
    assert data["total"] == 3 and (data["page"], data["pageSize"]) == (1, 20)
    states = {s["id"]: s["reviewStatus"] for s in data["items"]}
    assert states == {
        pending["id"]: "pending",
        approved["id"]: "approved",
        down["id"]: "taken_down",
    }
    filtered = ok(
        await client.get(
            f"{DEV}/scenarios", params={"reviewStatus": "taken_down"}, headers=dev.headers
        )
    )
    assert [s["id"] for s in filtered["items"]] == [down["id"]] and filtered["total"] == 1


async def test_list_pagination(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    made = [(await publish(client, dev))["id"] for _ in range(3)]
    first = ok(await client.get(f"{DEV}/scenarios", params={"pageSize": 2}, headers=dev.headers))
    second = ok(
        await client.get(f"{DEV}/scenarios", params={"pageSize": 2, "page": 2}, headers=dev.headers)
    )
    assert first["total"] == second["total"] == 3
    assert len(first["items"]) == 2 and len(second["items"]) == 1
    seen = [s["id"] for s in first["items"] + second["items"]]
    assert sorted(seen) == sorted(made)
    assert seen == list(reversed(made))  # newest first
    capped = ok(await client.get(f"{DEV}/scenarios", params={"pageSize": 500}, headers=dev.headers))
    assert capped["pageSize"] == 100
    err(
        await client.get(f"{DEV}/scenarios", params={"page": 0}, headers=dev.headers),
        400,
        "VALIDATION_FAILED",
    )


async def test_list_needs_a_developer_but_not_a_verified_one(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    unverified, user = await factory.developer(verified=False), await factory.user()
    assert ok(await client.get(f"{DEV}/scenarios", headers=unverified.headers))["total"] == 0
    err(await client.get(f"{DEV}/scenarios"), 401, "UNAUTHORIZED")
    err(await client.get(f"{DEV}/scenarios", headers=user.headers), 403, "FORBIDDEN")


async def test_detail_has_versions_newest_first(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, other = await factory.developer(), await factory.developer()
    first = await publish(client, dev, version="1.0.0-alpha.9")
    for version in ("1.0.0-alpha.10", "0.9.0"):
        await publish(client, dev, id=first["id"], version=version)
    data = ok(await client.get(f"{DEV}/{first['id']}", headers=dev.headers))
    assert data["version"] == "1.0.0-alpha.10"
    assert [v["version"] for v in data["versions"]] == ["1.0.0-alpha.10", "1.0.0-alpha.9", "0.9.0"]
    err(await client.get(f"{DEV}/{first['id']}", headers=other.headers), 403, "SCENARIO_NOT_OWNED")
    err(await client.get(f"{DEV}/{unique_id()}", headers=dev.headers), 404, "SCENARIO_NOT_FOUND")


async def test_static_paths_are_not_read_as_ids(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    await publish(client, dev)
    listing = ok(await client.get(f"{DEV}/scenarios", headers=dev.headers))
    assert set(listing) == {"items", "total", "page", "pageSize"}
    assert (
        await client.post(f"{DEV}/publish", json=publish_body(), headers=dev.headers)
    ).status_code == 201
    # A concrete path owns its methods (as OpenAPI matches paths): the others are 405 there,
    # not a scenario id "publish" or "scenarios".
    read = await client.get(f"{DEV}/publish", headers=dev.headers)
    err(read, 405, "METHOD_NOT_ALLOWED")
    assert read.headers["allow"] == "POST, OPTIONS"
    update = await client.put(f"{DEV}/scenarios", json={"name": "x"}, headers=dev.headers)
    err(update, 405, "METHOD_NOT_ALLOWED")
    assert update.headers["allow"] == "GET, HEAD, OPTIONS"


# ---------- update ----------


async def test_update_changes_metadata_of_the_newest_version(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    first = await publish(client, dev)
    await publish(client, dev, id=first["id"], version="1.1.0")
    changes = {
        "name": "Renamed",
        "nameZh": "改名",
        "description": "New text",
        "descriptionZh": "新描述",
        "category": "automation",
        "changelog": "fixed typo",
    }
    data = ok(await client.put(f"{DEV}/{first['id']}", json=changes, headers=dev.headers))
    assert {k: data[k] for k in changes} == changes
    assert data["version"] == "1.1.0" and data["reviewStatus"] == "pending"
    scenario, versions = await _rows(sessionmaker, first["id"])
    by_version = {v.version: v for v in versions}
    assert scenario is not None and scenario.name == "Renamed"
    assert (by_version["1.1.0"].name, by_version["1.1.0"].category) == ("Renamed", "automation")
    assert by_version["1.0.0"].name == "Code review"
    # Partial update: what is not sent stays.
    again = ok(
        await client.put(f"{DEV}/{first['id']}", json={"nameZh": "再改"}, headers=dev.headers)
    )
    assert (again["name"], again["nameZh"]) == ("Renamed", "再改")


async def test_update_of_an_approved_newest_version_shows_publicly(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await released(client, dev, admin)
    ok(await client.put(f"{DEV}/{scenario['id']}", json={"nameZh": "新名"}, headers=dev.headers))
    public = ok(await client.get(f"{PUBLIC}/{scenario['id']}"))
    assert public["nameZh"] == "新名"
    assert (
        ok(await client.get(f"{DEV}/{scenario['id']}", headers=dev.headers))["reviewStatus"]
        == "approved"
    )


@pytest.mark.parametrize(
    "field",
    ["id", "version", "type", "permissions", "reviewStatus", "sha256", "size", "ownerId", "bogus"],
)
async def test_update_refuses_fields_it_does_not_change(
    client: httpx.AsyncClient, factory: Factory, field: str
) -> None:
    dev = await factory.developer()
    first = await publish(client, dev)
    error = err(
        await client.put(f"{DEV}/{first['id']}", json={field: "x"}, headers=dev.headers),
        400,
        "SCENARIO_VALIDATION_FAILED",
    )
    assert field in field_names(error)
    assert (
        ok(await client.get(f"{DEV}/{first['id']}", headers=dev.headers))["name"] == "Code review"
    )


async def test_update_refuses_null_name_and_unknown_category(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    first = await publish(client, dev)
    err(
        await client.put(f"{DEV}/{first['id']}", json={"name": None}, headers=dev.headers),
        400,
        "SCENARIO_VALIDATION_FAILED",
    )
    error = err(
        await client.put(f"{DEV}/{first['id']}", json={"category": "toys"}, headers=dev.headers),
        400,
        "SCENARIO_VALIDATION_FAILED",
    )
    assert field_names(error) == {"category"}
    assert (
        ok(await client.get(f"{DEV}/{first['id']}", headers=dev.headers))["category"]
        == "development"
    )


# ---------- takedown ----------


async def test_takedown_hides_the_scenario_and_keeps_its_versions(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin, user = await factory.developer(), await factory.admin(), await factory.user()
    scenario = await released(client, dev, admin)
    listed = ok(await client.get(PUBLIC))
    assert [s["id"] for s in listed["items"]] == [scenario["id"]]
    data = ok(await client.delete(f"{DEV}/{scenario['id']}", headers=dev.headers))
    assert data == {"id": scenario["id"], "reviewStatus": "taken_down"}
    assert ok(await client.get(PUBLIC)) == {"items": [], "total": 0, "page": 1, "pageSize": 20}
    err(await client.get(f"{PUBLIC}/{scenario['id']}"), 404, "SCENARIO_NOT_FOUND")
    err(
        await client.get(f"{PUBLIC}/{scenario['id']}/download", headers=user.headers),
        404,
        "SCENARIO_NOT_FOUND",
    )
    row, versions = await _rows(sessionmaker, scenario["id"])
    assert row is not None and row.review_status == "taken_down"
    assert [(v.review_status, v.is_latest) for v in versions] == [("approved", True)]
    mine = ok(await client.get(f"{DEV}/{scenario['id']}", headers=dev.headers))
    assert mine["reviewStatus"] == "taken_down"


async def test_taken_down_scenario_refuses_further_writes(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    ok(await client.delete(f"{DEV}/{scenario['id']}", headers=dev.headers))
    err(await client.delete(f"{DEV}/{scenario['id']}", headers=dev.headers), 409, "INVALID_STATE")
    err(
        await client.put(f"{DEV}/{scenario['id']}", json={"name": "x"}, headers=dev.headers),
        409,
        "INVALID_STATE",
    )
    err(
        await client.post(
            f"{DEV}/publish",
            json=publish_body(id=scenario["id"], version="2.0.0"),
            headers=dev.headers,
        ),
        409,
        "INVALID_STATE",
    )
    assert (
        ok(await client.get(f"{DEV}/{scenario['id']}", headers=dev.headers))["version"] == "1.0.0"
    )


async def test_approving_a_version_of_a_taken_down_scenario_does_not_relist_it(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    ok(await client.delete(f"{DEV}/{scenario['id']}", headers=dev.headers))
    version = await approve(client, admin, scenario["id"])
    assert (version["reviewStatus"], version["isLatest"]) == ("approved", True)
    assert ok(await client.get(PUBLIC))["total"] == 0
    assert (
        ok(await client.get(f"{DEV}/{scenario['id']}", headers=dev.headers))["reviewStatus"]
        == "taken_down"
    )


# ---------- ownership, roles and identity on every id path ----------


def _id_calls(scenario_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("GET", f"{DEV}/{scenario_id}", {}),
        ("PUT", f"{DEV}/{scenario_id}", {"json": {"name": "Taken"}}),
        ("DELETE", f"{DEV}/{scenario_id}", {}),
        (
            "POST",
            f"{DEV}/{scenario_id}/upload-package",
            {"files": {"file": ("s.tar.gz", b"x", "application/gzip")}},
        ),
    ]


async def test_every_id_path_refuses_another_developer(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    owner, other = await factory.developer(), await factory.developer()
    scenario = await publish(client, owner)
    for method, url, kwargs in _id_calls(scenario["id"]):
        response = await client.request(method, url, headers=other.headers, **kwargs)
        err(response, 403, "SCENARIO_NOT_OWNED")
    row, versions = await _rows(sessionmaker, scenario["id"])
    assert row is not None and (row.name, row.review_status) == ("Code review", "pending")
    assert [v.sha256 for v in versions] == [None]


async def test_every_id_path_answers_404_for_a_missing_scenario(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    for method, url, kwargs in _id_calls(unique_id()):
        err(
            await client.request(method, url, headers=dev.headers, **kwargs),
            404,
            "SCENARIO_NOT_FOUND",
        )


async def test_every_write_checks_token_role_and_identity_before_the_scenario(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    unverified = await factory.developer(verified=False)
    user = await factory.user(Role.USER)
    scenario = await publish(client, owner)
    for method, url, kwargs in _id_calls(scenario["id"]):
        err(await client.request(method, url, **kwargs), 401, "UNAUTHORIZED")
        err(await client.request(method, url, headers=user.headers, **kwargs), 403, "FORBIDDEN")
        if method != "GET":
            # Before the lookup: a missing scenario is still DEVELOPER_NOT_VERIFIED.
            for target in (url, url.replace(scenario["id"], unique_id())):
                err(
                    await client.request(method, target, headers=unverified.headers, **kwargs),
                    403,
                    "DEVELOPER_NOT_VERIFIED",
                )


async def test_owner_reads_own_scenario_without_verified_identity(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    # Identity verification is withdrawn later: reading still works, writing does not.
    from marketplace.models import DeveloperProfile

    async with sessionmaker() as session:
        profile = await session.get(DeveloperProfile, dev.id)
        assert profile is not None
        profile.identity_status = "rejected"
        await session.commit()
    assert (
        ok(await client.get(f"{DEV}/{scenario['id']}", headers=dev.headers))["id"] == scenario["id"]
    )
    err(
        await client.put(f"{DEV}/{scenario['id']}", json={"name": "x"}, headers=dev.headers),
        403,
        "DEVELOPER_NOT_VERIFIED",
    )


async def test_versions_listed_to_admin_match_what_the_developer_published(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    await publish(client, dev, id=scenario["id"], version="1.0.1")
    assert [v["version"] for v in await admin_versions(client, admin, scenario["id"])] == [
        "1.0.1",
        "1.0.0",
    ]
