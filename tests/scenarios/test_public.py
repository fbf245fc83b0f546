"""Public scenarios: what is listed, what the public view shows, and the download."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import httpx
import pytest

from tests.factories import Factory
from tests.helpers import err, ok
from tests.scenarios.helpers import (
    DEV,
    PUBLIC,
    approve,
    publish,
    released,
    review,
    scenario_package,
    unique_id,
    upload,
    version_id,
)

PUBLIC_FIELDS = {
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
    "reviewStatus",
    "sha256",
    "size",
    "developer",
    "createdAt",
    "updatedAt",
}


async def test_only_scenarios_with_an_approved_version_are_listed(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    shown = await released(client, dev, admin)
    await publish(client, dev)  # pending
    rejected = await publish(client, dev)
    ok(
        await review(
            client, admin, await version_id(client, admin, rejected["id"], "1.0.0"), approved=False
        )
    )
    data = ok(await client.get(PUBLIC))
    assert [s["id"] for s in data["items"]] == [shown["id"]]
    assert (data["total"], data["page"], data["pageSize"]) == (1, 1, 20)
    item = data["items"][0]
    assert set(item) == PUBLIC_FIELDS
    assert item["developer"] == {"id": dev.id, "name": dev.name}
    assert item["reviewStatus"] == "approved" and item["sha256"] is not None


async def test_public_view_is_the_newest_approved_version(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await released(client, dev, admin, permissions=["filesystem:read"])
    await publish(
        client, dev, id=scenario["id"], version="2.0.0", name="Next", permissions=["network"]
    )
    detail = ok(await client.get(f"{PUBLIC}/{scenario['id']}"))
    assert (detail["version"], detail["name"], detail["permissions"]) == (
        "1.0.0",
        "Code review",
        ["filesystem:read"],
    )
    await approve(client, admin, scenario["id"], "2.0.0")
    detail = ok(await client.get(f"{PUBLIC}/{scenario['id']}"))
    assert (detail["version"], detail["name"], detail["permissions"], detail["sha256"]) == (
        "2.0.0",
        "Next",
        ["network"],
        None,
    )


async def test_detail_of_an_unlisted_or_missing_scenario_is_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    pending = await publish(client, dev)
    for scenario_id in (pending["id"], unique_id(), "publish"):
        err(await client.get(f"{PUBLIC}/{scenario_id}"), 404, "SCENARIO_NOT_FOUND")


async def test_list_search_filters_and_pagination(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    first = await released(
        client, dev, admin, name="Deploy helper", nameZh="部署助手", category="automation"
    )
    second = await released(client, dev, admin, name="Lint", type="interactive")
    third = await released(client, dev, admin, name="Docs", description="Writes deploy notes")
    assert [s["id"] for s in ok(await client.get(PUBLIC, params={"q": "DEPLOY"}))["items"]] == [
        third["id"],
        first["id"],
    ]
    assert [s["id"] for s in ok(await client.get(PUBLIC, params={"q": "部署"}))["items"]] == [
        first["id"]
    ]
    assert [
        s["id"] for s in ok(await client.get(PUBLIC, params={"category": "automation"}))["items"]
    ] == [first["id"]]
    assert [
        s["id"] for s in ok(await client.get(PUBLIC, params={"type": "interactive"}))["items"]
    ] == [second["id"]]
    page = ok(await client.get(PUBLIC, params={"pageSize": 2, "page": 2}))
    assert page["total"] == 3 and [s["id"] for s in page["items"]] == [first["id"]]
    assert ok(await client.get(PUBLIC, params={"pageSize": 1000}))["pageSize"] == 100
    err(await client.get(PUBLIC, params={"page": 0}), 400, "VALIDATION_FAILED")


async def test_public_group_refuses_an_invalid_token(client: httpx.AsyncClient) -> None:
    bad = {"Authorization": "Bearer nope"}
    err(await client.get(PUBLIC, headers=bad), 401, "UNAUTHORIZED")
    err(await client.get(f"{PUBLIC}/{unique_id()}", headers=bad), 401, "UNAUTHORIZED")


async def test_logged_in_user_downloads_the_exact_bytes(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, user = await factory.developer(), await factory.admin(), await factory.user()
    scenario = await publish(client, dev)
    data = scenario_package(scenario["id"], "1.0.0")
    ok(await upload(client, dev, scenario["id"], data))
    await approve(client, admin, scenario["id"])
    info = ok(await client.get(f"{PUBLIC}/{scenario['id']}/download", headers=user.headers))
    assert set(info) == {"url", "sha256", "size", "expiresAt", "version", "release"}
    assert info["release"] is not None
    assert (info["sha256"], info["size"], info["version"]) == (
        hashlib.sha256(data).hexdigest(),
        len(data),
        "1.0.0",
    )
    expires = datetime.fromisoformat(info["expiresAt"].replace("Z", "+00:00"))
    assert 0 < (expires - datetime.now(UTC)).total_seconds() <= 900
    blob = await client.get(info["url"].removeprefix("http://test"))
    assert blob.status_code == 200 and blob.content == data
    assert hashlib.sha256(blob.content).hexdigest() == info["sha256"]


async def test_download_needs_login_and_a_public_scenario(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, user = await factory.developer(), await factory.admin(), await factory.user()
    scenario = await released(client, dev, admin)
    err(await client.get(f"{PUBLIC}/{scenario['id']}/download"), 401, "UNAUTHORIZED")
    err(
        await client.get(
            f"{PUBLIC}/{scenario['id']}/download", headers={"Authorization": "Bearer x"}
        ),
        401,
        "UNAUTHORIZED",
    )
    pending = await publish(client, dev)
    ok(await upload(client, dev, pending["id"], scenario_package(pending["id"], "1.0.0")))
    for scenario_id in (pending["id"], unique_id()):
        err(
            await client.get(f"{PUBLIC}/{scenario_id}/download", headers=user.headers),
            404,
            "SCENARIO_NOT_FOUND",
        )
    # The owner gets no shortcut: pending packages are for reviewers only.
    err(
        await client.get(f"{PUBLIC}/{pending['id']}/download", headers=dev.headers),
        404,
        "SCENARIO_NOT_FOUND",
    )


async def test_download_serves_the_current_version_else_the_newest_approved_package(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, user = await factory.developer(), await factory.admin(), await factory.user()
    scenario = await released(client, dev, admin)
    # 2.0.0 is approved without a package; 1.5.0 has one but is still pending.
    await publish(client, dev, id=scenario["id"], version="2.0.0")
    await approve(client, admin, scenario["id"], "2.0.0")
    await publish(client, dev, id=scenario["id"], version="1.5.0")
    ok(
        await upload(
            client, dev, scenario["id"], scenario_package(scenario["id"], "1.5.0"), "1.5.0"
        )
    )
    # The current version (2.0.0) has no package: the newest approved one with a package.
    info = ok(await client.get(f"{PUBLIC}/{scenario['id']}/download", headers=user.headers))
    assert info["version"] == "1.0.0"
    # Approving 1.5.0 makes it current (seed 3): its package is served and it is shown.
    await approve(client, admin, scenario["id"], "1.5.0")
    info = ok(await client.get(f"{PUBLIC}/{scenario['id']}/download", headers=user.headers))
    assert info["version"] == "1.5.0"
    assert ok(await client.get(f"{PUBLIC}/{scenario['id']}"))["version"] == "1.5.0"


async def test_listed_scenario_without_any_package_has_nothing_to_download(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin, user = await factory.developer(), await factory.admin(), await factory.user()
    scenario = await publish(client, dev)
    await approve(client, admin, scenario["id"])
    assert ok(await client.get(f"{PUBLIC}/{scenario['id']}"))["sha256"] is None
    err(
        await client.get(f"{PUBLIC}/{scenario['id']}/download", headers=user.headers),
        404,
        "SCENARIO_NOT_FOUND",
    )


@pytest.mark.parametrize("path", ["", "/{id}", "/{id}/download"])
async def test_takedown_hides_from_every_public_path(
    client: httpx.AsyncClient, factory: Factory, path: str
) -> None:
    dev, admin, user = await factory.developer(), await factory.admin(), await factory.user()
    scenario = await released(client, dev, admin)
    url = PUBLIC + path.replace("{id}", scenario["id"])
    ok(await client.get(url, headers=user.headers))
    ok(await client.delete(f"{DEV}/{scenario['id']}", headers=dev.headers))
    response = await client.get(url, headers=user.headers)
    if path:
        err(response, 404, "SCENARIO_NOT_FOUND")
    else:
        assert ok(response)["items"] == []
