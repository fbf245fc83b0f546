"""The console's Take down form: the API's takedown, read back through the API."""

from __future__ import annotations

import httpx

from tests.admin_console.helpers import csrf_of, logged_in, post_form
from tests.factories import Factory
from tests.helpers import ok
from tests.takedown.helpers import plugin_state, released_plugin, verified_list


def _url(version_id: str) -> str:
    return f"/console/plugins/versions/{version_id}"


async def test_take_down_through_the_console(client: httpx.AsyncClient, factory: Factory) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    await logged_in(client, r.admin)
    page = await client.get(_url(r.ids["1.1.0"]))
    assert 'action="/console/plugins/versions/' in page.text and "Take down" in page.text
    token = csrf_of(page.text)
    response = await client.post(
        _url(r.ids["1.1.0"]) + "/takedown", data={"reason": "malware", "csrf_token": token}
    )
    assert response.status_code == 303
    assert response.headers["location"] == _url(r.ids["1.1.0"]) + "?done=taken_down"
    latest, states = await plugin_state(client, r.admin, r.plugin["id"])
    assert latest == "1.0.0"
    assert states["1.1.0"] == ("taken_down", False)
    [item] = (await verified_list(client))["items"]
    assert (item["version"], item["reason"]) == ("1.1.0", "malware")
    page = await client.get(response.headers["location"])
    assert "Version taken down" in page.text
    assert "Take down</button>" not in page.text  # nothing more to take down


async def test_console_takedown_refusals_change_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0",))
    await logged_in(client, r.admin)
    url = _url(r.ids["1.0.0"]) + "/takedown"
    page = await client.get(_url(r.ids["1.0.0"]))
    token = csrf_of(page.text)
    empty = await client.post(url, data={"reason": "  ", "csrf_token": token})
    assert empty.status_code == 400
    assert "Reason: " in empty.text
    no_csrf = await client.post(url, data={"reason": "x"})
    assert no_csrf.status_code == 403
    assert (await plugin_state(client, r.admin, r.plugin["id"]))[0] == "1.0.0"
    ok(
        await client.post(
            f"/api/v1/admin/plugins/versions/{r.ids['1.0.0']}/takedown",
            json={"reason": "first"},
            headers=r.admin.headers,
        )
    )
    late = await client.post(url, data={"reason": "second", "csrf_token": token})
    assert late.status_code == 409
    assert "already taken down" in late.text
    assert (
        ok(
            await client.get(
                f"/api/v1/admin/plugins/versions/{r.ids['1.0.0']}", headers=r.admin.headers
            )
        )["reviewNote"]
        == "first"
    )


async def test_without_a_console_session_the_form_is_sent_to_login(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0",))
    response = await post_form(
        client, _url(r.ids["1.0.0"]) + "/takedown", {"reason": "x"}, csrf=False
    )
    assert response.status_code == 303
    assert response.headers["location"].startswith("/console/login")
    assert (await plugin_state(client, r.admin, r.plugin["id"]))[0] == "1.0.0"
