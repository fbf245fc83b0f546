"""A plugin version's rollout in the console: shown, set, halted and resumed through the
same moves as the API, audited with trigger admin; the queue's halted-rollouts tab."""

from __future__ import annotations

from typing import Any

import httpx

from marketplace.models import Plugin, PluginVersion
from tests.admin_console.helpers import csrf_of, logged_in, text_of
from tests.factories import Account, Factory
from tests.helpers import ok


async def _rolling(factory: Factory) -> tuple[Account, Plugin, PluginVersion]:
    admin = await factory.admin()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    version = await factory.version(plugin, "1.1.0", rollout_percent=10, rollout_state="rolling")
    return admin, plugin, version


def _url(version: PluginVersion) -> str:
    return f"/console/plugins/versions/{version.id}"


async def post_form(client: httpx.AsyncClient, path: str, data: dict[str, str]) -> httpx.Response:
    """POST a rollout form with the version page's CSRF token, as the page does."""
    page = await client.get(path.removesuffix("/rollout"))
    assert page.status_code == 200, page.text
    return await client.post(path, data={**data, "csrf_token": csrf_of(page.text)})


async def _version(
    client: httpx.AsyncClient, admin: Account, version: PluginVersion
) -> dict[str, Any]:
    found: dict[str, Any] = ok(
        await client.get(f"/api/v1/admin/plugins/versions/{version.id}", headers=admin.headers)
    )
    return found


async def _actions(client: httpx.AsyncClient, admin: Account, version: PluginVersion) -> list[Any]:
    data = ok(
        await client.get(
            "/api/v1/admin/audit-logs", params={"resourceId": version.id}, headers=admin.headers
        )
    )
    return [(e["action"], e["detail"]["trigger"]) for e in data["items"]]


async def test_the_version_page_shows_the_rollout_and_its_moves(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, _, version = await _rolling(factory)
    await logged_in(client, admin)
    response = await client.get(_url(version))
    assert response.status_code == 200
    text = text_of(response.text)
    assert "Rollout" in text and "rolling" in text and "10% of installs" in text
    assert "Set rollout" in text and "Halt rollout" in text and "Resume rollout" not in text


async def test_grow_halt_and_resume_through_the_console(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, _, version = await _rolling(factory)
    await logged_in(client, admin)
    rollout = f"{_url(version)}/rollout"
    response = await post_form(client, rollout, {"action": "set", "percent": "40"})
    assert response.status_code == 303
    assert (await _version(client, admin, version))["rollout"]["percent"] == 40
    response = await post_form(client, rollout, {"action": "halt", "reason": "crash reports"})
    assert response.status_code == 303
    shown = (await _version(client, admin, version))["rollout"]
    assert (shown["state"], shown["haltedReason"]) == ("halted", "crash reports")
    page = text_of((await client.get(_url(version))).text)
    assert "Resume rollout" in page and "Set rollout" not in page
    response = await post_form(client, rollout, {"action": "resume"})
    assert response.status_code == 303
    shown = (await _version(client, admin, version))["rollout"]
    assert (shown["state"], shown["percent"], shown["haltedReason"]) == ("rolling", 40, None)
    assert sorted(await _actions(client, admin, version)) == [
        ("ROLLOUT_HALT", "admin"),
        ("ROLLOUT_RESUME", "admin"),
        ("ROLLOUT_SET", "admin"),
    ]


async def test_a_refused_move_shows_why_and_changes_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, _, version = await _rolling(factory)
    await logged_in(client, admin)
    rollout = f"{_url(version)}/rollout"
    shrink = await post_form(client, rollout, {"action": "set", "percent": "5"})
    assert shrink.status_code == 409
    assert "may only grow" in text_of(shrink.text)
    for fields in (
        {"action": "set", "percent": "abc"},
        {"action": "set", "percent": "101"},
        {"action": "halt", "reason": ""},
        {"action": "explode"},
    ):
        assert (await post_form(client, rollout, fields)).status_code == 400
    resume = await post_form(client, rollout, {"action": "resume"})
    assert resume.status_code == 409
    shown = (await _version(client, admin, version))["rollout"]
    assert (shown["state"], shown["percent"]) == ("rolling", 10)
    assert await _actions(client, admin, version) == []


async def test_the_queue_lists_halted_rollouts(client: httpx.AsyncClient, factory: Factory) -> None:
    admin, plugin, version = await _rolling(factory)
    other = await factory.plugin()
    await factory.version(other, "2.0.0", rollout_percent=30, rollout_state="rolling")
    await logged_in(client, admin)
    empty = text_of((await client.get("/console?tab=halted-rollouts")).text)
    assert plugin.plugin_key not in empty
    response = await post_form(
        client, f"{_url(version)}/rollout", {"action": "halt", "reason": "bad update"}
    )
    assert response.status_code == 303
    page = (await client.get("/console?tab=halted-rollouts")).text
    assert _url(version) in page and "bad update" in text_of(page)
    assert other.plugin_key not in text_of(page)
    # The API's queue filters the same way.
    listed = ok(
        await client.get(
            "/api/v1/admin/plugins/versions/pending",
            params={"reviewStatus": "approved", "rolloutState": "halted"},
            headers=admin.headers,
        )
    )
    assert [item["id"] for item in listed["items"]] == [version.id]
    assert listed["total"] == 1
