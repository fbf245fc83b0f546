"""Versions of a rejected plugin wait with it: out of the console's queue, still in the API's
pending list (seed 4.5), back in the queue when the developer resubmits the plugin."""

from __future__ import annotations

import httpx

from marketplace.models import Plugin, PluginVersion, ReviewStatus, ScenarioVersion
from tests.admin_console.helpers import logged_in, post_form, scenario_with_version, text_of
from tests.factories import Account, Factory
from tests.helpers import ok


async def _pending_plugin_with_version(
    factory: Factory,
) -> tuple[Account, Account, Plugin, PluginVersion]:
    admin = await factory.admin()
    developer = await factory.developer()
    plugin = await factory.plugin(developer, review_status=ReviewStatus.PENDING)
    version = await factory.version(plugin, "1.0.0", review_status=ReviewStatus.PENDING)
    return admin, developer, plugin, version


async def _queue_versions(client: httpx.AsyncClient) -> str:
    response = await client.get("/console", params={"tab": "plugin-versions"})
    assert response.status_code == 200
    return response.text


async def _api_pending_ids(client: httpx.AsyncClient, admin: Account) -> list[str]:
    data = ok(await client.get("/api/v1/admin/plugins/versions/pending", headers=admin.headers))
    return [item["id"] for item in data["items"]]


async def _version_status(client: httpx.AsyncClient, admin: Account, plugin: Plugin) -> str:
    data = ok(
        await client.get(f"/api/v1/admin/plugins/{plugin.id}/versions", headers=admin.headers)
    )
    [version] = data["items"]
    return str(version["reviewStatus"])


async def test_rejecting_a_plugin_in_the_console_takes_its_pending_versions_out_of_the_queue(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, _, plugin, version = await _pending_plugin_with_version(factory)
    await logged_in(client, admin)
    assert f"/console/plugins/versions/{version.id}" in await _queue_versions(client)

    response = await post_form(
        client, f"/console/plugins/{plugin.id}", {"decision": "reject", "note": "name clash"}
    )
    assert response.status_code == 303
    answer = text_of((await client.get(response.headers["location"])).text)
    assert "Plugin rejected. 1 pending version waits with it" in answer

    queue = await _queue_versions(client)
    assert f"/console/plugins/versions/{version.id}" not in queue
    assert "Plugin versions 0" in text_of(queue)
    # Kept, pending, and still in the API's pending list: nothing was closed silently.
    assert await _version_status(client, admin, plugin) == "pending"
    assert await _api_pending_ids(client, admin) == [version.id]


async def test_rejecting_a_plugin_through_the_api_keeps_its_answer_and_the_pending_list(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, _, plugin, version = await _pending_plugin_with_version(factory)
    before = ok(await client.get(f"/api/v1/admin/plugins/{plugin.id}", headers=admin.headers))
    response = await client.post(
        f"/api/v1/admin/plugins/{plugin.id}/review",
        json={"approved": False, "reviewNote": "name clash"},
        headers=admin.headers,
    )
    rejected = ok(response)
    assert rejected["reviewStatus"] == "rejected"
    assert set(rejected) == set(before) - {"reviewerLabel"}  # the plugin, as before
    assert await _api_pending_ids(client, admin) == [version.id]
    await logged_in(client, admin)
    assert f"/console/plugins/versions/{version.id}" not in await _queue_versions(client)
    page = text_of((await client.get(f"/console/plugins/{plugin.id}")).text)
    assert "1 pending version waits with it" in page


async def test_a_resubmitted_plugin_brings_its_versions_back_to_the_queue(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, developer, plugin, version = await _pending_plugin_with_version(factory)
    await factory.version(plugin, "1.1.0", review_status=ReviewStatus.PENDING)
    ok(
        await client.post(
            f"/api/v1/admin/plugins/{plugin.id}/review",
            json={"approved": False, "reviewNote": "name clash"},
            headers=admin.headers,
        )
    )
    await logged_in(client, admin)
    assert "2 pending versions wait with it" in text_of(
        (await client.get(f"/console/plugins/{plugin.id}")).text
    )
    assert f"/console/plugins/versions/{version.id}" not in await _queue_versions(client)

    resubmitted = ok(
        await client.put(
            f"/api/v1/developer/plugins/{plugin.id}",
            json={"name": "Renamed Tool"},
            headers=developer.headers,
        )
    )
    assert resubmitted["reviewStatus"] == "pending"
    queue = await _queue_versions(client)
    assert f"/console/plugins/versions/{version.id}" in queue
    assert "Plugin versions 2" in text_of(queue)
    assert "wait with it" not in text_of((await client.get(f"/console/plugins/{plugin.id}")).text)


async def test_a_rejected_scenario_does_not_hide_its_other_pending_versions(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """Only plugins are reviewed themselves: a scenario's status follows its newest version,
    so a rejected newest version must not take an older pending one out of the queue."""
    admin = await factory.admin()
    rejected = await scenario_with_version(
        factory.sessions, await factory.developer(), "morning-brief", review_status="rejected"
    )
    older = ScenarioVersion(
        scenario_id="morning-brief",
        version="0.9.0",
        review_status="pending",
        name="Scenario morning-brief",
        type="programmatic",
        category="development",
        permissions=[],
    )
    async with factory.sessions() as db:
        db.add(older)
        await db.commit()
    await logged_in(client, admin)
    page = (await client.get("/console", params={"tab": "scenario-versions"})).text
    assert f"/console/scenarios/versions/{older.id}" in page
    assert f"/console/scenarios/versions/{rejected.id}" not in page
