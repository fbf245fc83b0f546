"""POST /api/v1/plugins/install/{pluginId} and GET /api/v1/plugins/installed."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from marketplace.models import Install
from tests.factories import Account, Factory
from tests.helpers import err, field_names, ok

API = "/api/v1/plugins"


async def install(
    client: httpx.AsyncClient, user: Account, plugin_id: str, version: str = "1.0.0"
) -> httpx.Response:
    return await client.post(
        f"{API}/install/{plugin_id}", json={"version": version}, headers=user.headers
    )


async def downloads(client: httpx.AsyncClient, plugin_id: str) -> int:
    count: int = ok(await client.get(f"{API}/detail/{plugin_id}"))["downloadCount"]
    return count


async def test_first_install_report_is_201_and_counts_a_download(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    data = ok(await install(client, user, plugin.plugin_key), 201)
    assert set(data) == {"pluginId", "version", "installedAt"}
    assert (data["pluginId"], data["version"]) == (plugin.id, "1.0.0")
    assert await downloads(client, plugin.id) == 1
    async with sessionmaker() as session:
        record = await session.scalar(select(Install).where(Install.user_id == user.id))
        assert record is not None
        assert (record.plugin_id, record.version) == (plugin.id, "1.0.0")


async def test_repeat_install_report_is_200_and_updates_the_record(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.1.0")
    first = ok(await install(client, user, plugin.id, "1.0.0"), 201)
    second = ok(await install(client, user, plugin.id, "1.1.0"), 200)
    assert second["version"] == "1.1.0"
    assert second["installedAt"] >= first["installedAt"]
    async with sessionmaker() as session:
        records = (await session.scalars(select(Install).where(Install.user_id == user.id))).all()
    assert [r.version for r in records] == ["1.1.0"]


async def test_repeated_reports_do_not_inflate_download_count(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    for _ in range(3):
        await install(client, user, plugin.id)
    assert await downloads(client, plugin.id) == 1


async def test_download_count_is_distinct_installing_users(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    await factory.version(plugin)
    for _ in range(3):
        ok(await install(client, await factory.user(), plugin.id), 201)
    assert await downloads(client, plugin.id) == 3


async def test_concurrent_first_reports_of_one_user_count_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    responses = await asyncio.gather(*(install(client, user, plugin.id) for _ in range(5)))
    assert sorted(r.status_code for r in responses) == [200, 200, 200, 200, 201]
    assert await downloads(client, plugin.id) == 1
    async with sessionmaker() as session:
        records = (await session.scalars(select(Install).where(Install.user_id == user.id))).all()
    assert len(records) == 1


async def test_install_does_not_change_updated_at(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    await factory.version(plugin)
    before = ok(await client.get(f"{API}/detail/{plugin.id}"))["updatedAt"]
    await install(client, await factory.user(), plugin.id)
    after = ok(await client.get(f"{API}/detail/{plugin.id}"))
    assert after["downloadCount"] == 1
    assert after["updatedAt"] == before


async def test_install_latest_records_the_current_version(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.3.0")
    assert ok(await install(client, user, plugin.id, "latest"), 201)["version"] == "1.3.0"


async def test_install_needs_login(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin()
    response = await client.post(f"{API}/install/{plugin.id}", json={"version": "1.0.0"})
    err(response, 401, "UNAUTHORIZED")


async def test_install_of_unknown_plugin_is_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    err(await install(client, user, "missing-plugin"), 404, "PLUGIN_NOT_FOUND")


async def test_install_of_unknown_plugin_is_404_even_with_a_bad_body(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    response = await client.post(
        f"{API}/install/missing-plugin", json={"bogus": 1}, headers=user.headers
    )
    err(response, 404, "PLUGIN_NOT_FOUND")


async def test_install_of_unknown_version_is_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    err(await install(client, user, plugin.id, "3.0.0"), 404, "PLUGIN_VERSION_NOT_FOUND")


async def test_install_of_pending_version_is_403_and_records_nothing(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "2.0.0", review_status="pending")
    err(await install(client, user, plugin.id, "2.0.0"), 403, "PLUGIN_VERSION_NOT_APPROVED")
    async with sessionmaker() as session:
        assert await session.scalar(select(Install).where(Install.user_id == user.id)) is None
    assert await downloads(client, plugin.id) == 0


async def test_install_from_taken_down_plugin_is_403(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    await factory.update_plugin(plugin, review_status="taken_down", enabled=False)
    err(await install(client, user, plugin.id), 403, "PLUGIN_VERSION_NOT_APPROVED")


async def test_install_of_paid_plugin_without_purchase_is_402(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.version(plugin)
    err(await install(client, user, plugin.id), 402, "PLUGIN_NOT_PURCHASED")
    assert await downloads(client, plugin.id) == 0


async def test_install_of_purchased_plugin_counts(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.version(plugin)
    await factory.purchase(user, plugin)
    ok(await install(client, user, plugin.id), 201)
    assert await downloads(client, plugin.id) == 1


@pytest.mark.parametrize(
    ("body", "field"), [({}, "version"), ({"version": "1.0.0", "extra": 1}, "extra")]
)
async def test_install_body_is_validated(
    client: httpx.AsyncClient, factory: Factory, body: dict[str, Any], field: str
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    response = await client.post(f"{API}/install/{plugin.id}", json=body, headers=user.headers)
    assert field_names(err(response, 400, "VALIDATION_FAILED")) == {field}


# ---------------------------------------------------------------- installed list


async def test_installed_lists_the_callers_plugins_with_update_state(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user, other = await factory.user(), await factory.user()
    current = await factory.plugin(plugin_key="current")
    await factory.version(current, "1.0.0")
    behind = await factory.plugin(plugin_key="behind")
    await factory.version(behind, "1.0.0")
    ok(await install(client, user, current.id), 201)
    ok(await install(client, user, behind.id), 201)
    ok(await install(client, other, current.id), 201)
    await factory.version(behind, "1.10.0")
    await factory.version(behind, "2.0.0-beta.1", review_status="pending")
    items = ok(await client.get(f"{API}/installed", headers=user.headers))["items"]
    state = {i["plugin"]["pluginKey"]: (i["version"], i["updateAvailable"]) for i in items}
    assert state == {"current": ("1.0.0", False), "behind": ("1.0.0", True)}
    assert set(items[0]) == {"plugin", "version", "installedAt", "updateAvailable"}
    assert items[0]["plugin"]["purchase"] == {
        "purchased": False,
        "active": False,
        "expiresAt": None,
    }


async def test_installed_keeps_a_taken_down_plugin_without_update(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    ok(await install(client, user, plugin.id), 201)
    await factory.version(plugin, "1.1.0")
    await factory.update_plugin(plugin, review_status="taken_down", enabled=False)
    items = ok(await client.get(f"{API}/installed", headers=user.headers))["items"]
    assert len(items) == 1
    assert items[0]["plugin"]["reviewStatus"] == "taken_down"
    assert items[0]["updateAvailable"] is False


async def test_installed_is_empty_for_a_new_user(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    response = await client.get(f"{API}/installed", headers=user.headers)
    assert ok(response) == {"items": []}
    assert response.headers["cache-control"] == "private, no-store"


async def test_installed_needs_login(client: httpx.AsyncClient) -> None:
    err(await client.get(f"{API}/installed"), 401, "UNAUTHORIZED")
