"""The console's audit log links each version decision to its transparency-log entry, and
the entry page shows the entry, its bytes and its inclusion in the current signed tree."""

from __future__ import annotations

import re

import httpx

from tests.admin_console.helpers import logged_in, text_of
from tests.factories import Factory
from tests.helpers import ok
from tests.takedown.helpers import admin_takedown, released_plugin
from tests.transparency.helpers import entry_bytes

USER_DOWNLOAD = "/api/v1/plugins/download"


async def test_audit_rows_link_approvals_and_takedowns_to_their_entries(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    user = await factory.user()
    info = ok(await client.get(f"{USER_DOWNLOAD}/{r.plugin['id']}/1.1.0", headers=user.headers))
    approval = info["release"]["logIndex"]
    ok(await admin_takedown(client, r.admin, r.ids["1.1.0"], "leaks keys"))
    await logged_in(client, r.admin)

    page = await client.get("/console/audit")

    assert page.status_code == 200
    links = [int(i) for i in re.findall(r'href="/console/log/(\d+)"', page.text)]
    # Two approvals (1.0.0, 1.1.0) and one takedown; the plugin's own approval has no entry.
    assert len(links) == 3 and approval in links
    takedown = max(links)
    assert b'"action":"takedown"' in await entry_bytes(client, takedown)
    audit_rows = re.findall(r"<tr>.*?</tr>", page.text, flags=re.S)
    [row] = [row for row in audit_rows if f"/console/log/{takedown}" in row]
    assert "TAKEDOWN" in row and "leaks keys" in row


async def test_the_entry_page_shows_the_entry_and_its_inclusion(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0",))
    user = await factory.user()
    info = ok(await client.get(f"{USER_DOWNLOAD}/{r.plugin['id']}/1.0.0", headers=user.headers))
    index = info["release"]["logIndex"]
    await logged_in(client, r.admin)

    page = await client.get(f"/console/log/{index}")

    assert page.status_code == 200
    text = text_of(page.text)
    assert "entries the checkpoint signs" in text
    assert (await entry_bytes(client, index)).decode() in text_of(page.text.replace("&#34;", '"'))
    assert f'href="/console/plugins/versions/{r.ids["1.0.0"]}"' in page.text  # its version
    missing = await client.get("/console/log/999999999")
    assert missing.status_code == 404
    assert "no entry 999999999" in text_of(missing.text)
    assert (await client.get("/console/log/-1")).status_code in (400, 404)


async def test_the_entry_page_needs_a_reviewer(client: httpx.AsyncClient) -> None:
    response = await client.get("/console/log/0")
    assert response.status_code == 303
    assert response.headers["location"].startswith("/console/login")
