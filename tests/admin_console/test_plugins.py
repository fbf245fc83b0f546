"""A new plugin's review in the console: the API's plugin review and its audit records."""

from __future__ import annotations

import base64

import httpx
import pytest

from marketplace.models import Plugin, ReviewStatus
from tests.admin_console.helpers import logged_in, post_form, text_of
from tests.factories import Account, Factory
from tests.helpers import ok

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
SVG = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg"/>').decode()


async def _new_plugin(factory: Factory) -> tuple[Account, Plugin]:
    admin = await factory.admin()
    plugin = await factory.plugin(review_status=ReviewStatus.PENDING)
    await factory.version(plugin, "1.0.0", review_status=ReviewStatus.PENDING)
    return admin, plugin


async def _state(client: httpx.AsyncClient, admin: Account, plugin: Plugin) -> tuple[str, str]:
    detail = ok(await client.get(f"/api/v1/admin/plugins/{plugin.id}", headers=admin.headers))
    versions = ok(
        await client.get(f"/api/v1/admin/plugins/{plugin.id}/versions", headers=admin.headers)
    )
    return detail["reviewStatus"], versions["items"][0]["reviewStatus"]


async def _audit(client: httpx.AsyncClient, admin: Account) -> list[tuple[str, str, str]]:
    data = ok(await client.get("/api/v1/admin/audit-logs", headers=admin.headers))
    return sorted(
        (e["detail"]["resourceType"], e["detail"]["outcome"], e["detail"]["trigger"])
        for e in data["items"]
    )


async def test_plugin_page_shows_the_review_form_with_the_release_choice(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin = await _new_plugin(factory)
    await logged_in(client, admin)
    page = await client.get(f"/console/plugins/{plugin.id}")
    assert page.status_code == 200
    assert plugin.plugin_key in page.text
    assert 'name="approve_pending_version" value="on" checked' in page.text
    assert '<label for="note">Note</label>' in page.text


async def test_approving_a_new_plugin_releases_its_pending_version(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin = await _new_plugin(factory)
    await logged_in(client, admin)
    response = await post_form(
        client,
        f"/console/plugins/{plugin.id}",
        {"decision": "approve", "approve_pending_version": "on"},
    )
    assert response.status_code == 303
    assert await _state(client, admin, plugin) == ("approved", "approved")
    assert await _audit(client, admin) == [
        ("plugin", "approved", "admin"),
        ("plugin_version", "approved", "linkage"),
    ]
    public = ok(await client.get(f"/api/v1/plugins/detail/{plugin.plugin_key}"))
    assert public["latestVersion"] == "1.0.0"


async def test_approving_without_the_release_box_keeps_the_version_pending(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin = await _new_plugin(factory)
    await logged_in(client, admin)
    response = await post_form(client, f"/console/plugins/{plugin.id}", {"decision": "approve"})
    assert response.status_code == 303
    assert await _state(client, admin, plugin) == ("approved", "pending")
    assert await _audit(client, admin) == [("plugin", "approved", "admin")]


async def test_rejecting_a_plugin_needs_a_note(client: httpx.AsyncClient, factory: Factory) -> None:
    admin, plugin = await _new_plugin(factory)
    await logged_in(client, admin)
    response = await post_form(client, f"/console/plugins/{plugin.id}", {"decision": "reject"})
    assert response.status_code == 400
    assert "A rejection needs a note" in response.text
    assert await _state(client, admin, plugin) == ("pending", "pending")
    assert await _audit(client, admin) == []


async def test_rejecting_a_plugin_with_a_note(client: httpx.AsyncClient, factory: Factory) -> None:
    admin, plugin = await _new_plugin(factory)
    await logged_in(client, admin)
    response = await post_form(
        client, f"/console/plugins/{plugin.id}", {"decision": "reject", "note": "name clash"}
    )
    assert response.status_code == 303
    detail = ok(await client.get(f"/api/v1/admin/plugins/{plugin.id}", headers=admin.headers))
    assert (detail["reviewStatus"], detail["reviewNote"], detail["enabled"]) == (
        "rejected",
        "name clash",
        False,
    )
    assert await _audit(client, admin) == [("plugin", "rejected", "admin")]


async def test_unknown_plugins_are_a_404_page(client: httpx.AsyncClient, factory: Factory) -> None:
    await logged_in(client, await factory.admin())
    response = await client.get("/console/plugins/00000000-0000-0000-0000-000000000000")
    assert response.status_code == 404
    assert "Plugin does not exist" in response.text


@pytest.mark.parametrize(
    ("icon", "shown_as_image"),
    [
        (f"data:image/png;base64,{PNG}", True),
        (f"data:image/svg+xml;base64,{SVG}", True),
        ("data:text/html;base64,PHNjcmlwdD4=", False),
        ("javascript:alert(1)", False),
        ("puzzle", False),
    ],
)
async def test_icons_show_only_as_image_data_urls(
    client: httpx.AsyncClient, factory: Factory, icon: str, shown_as_image: bool
) -> None:
    admin = await factory.admin()
    plugin = await factory.plugin(review_status=ReviewStatus.PENDING, icon=icon)
    await logged_in(client, admin)
    page = (await client.get(f"/console/plugins/{plugin.id}")).text
    assert (f'<img class="icon" src="{icon}"' in page) is shown_as_image
    if not shown_as_image:
        assert 'class="icon icon-empty"' in page


async def test_developer_addresses_are_text_not_links(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    plugin = await factory.plugin(
        review_status=ReviewStatus.PENDING,
        homepage="javascript:alert(document.cookie)",
        repository='https://example.com/"><script>alert(1)</script>',
    )
    await logged_in(client, admin)
    page = (await client.get(f"/console/plugins/{plugin.id}")).text
    assert 'href="javascript:' not in page
    assert "<script>alert(1)" not in page
    assert "javascript:alert(document.cookie)" in text_of(page)
