"""The portal's flows (CONTRACT 17): a publisher reads its plugins' reviews, moves a
rollout, sees installs and ratings, manages tokens and organizations. Every write goes
through the API's own services: the state is read back through the API."""

from __future__ import annotations

import re
from typing import Any

import httpx

from marketplace.models import Plugin
from tests.admin_console.helpers import text_of
from tests.factories import Account, Factory
from tests.helpers import ok
from tests.portal.helpers import in_portal, post_from


def _plugin_url(plugin: Plugin) -> str:
    return f"/portal/plugins/{plugin.id}"


async def _audit(client: httpx.AsyncClient, admin: Account, resource_id: str) -> list[Any]:
    data = ok(
        await client.get(
            "/api/v1/admin/audit-logs", params={"resourceId": resource_id}, headers=admin.headers
        )
    )
    return [(e["action"], e["detail"]["trigger"]) for e in data["items"]]


async def test_a_rejection_and_its_note_are_on_the_list_and_the_plugin_page(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    note = 'The icon is <script>alert("x")</script> a copyrighted logo; use your own.'
    plugin = await factory.plugin(developer, review_status="rejected", enabled=False)
    await factory.update_plugin(plugin, review_note=note)
    version = await factory.version(
        plugin, "1.0.0", review_status="rejected", review_note="Bad icon"
    )
    other = await factory.plugin()  # someone else's: not listed
    await in_portal(client, developer)

    listing = await client.get("/portal")
    assert listing.status_code == 200
    assert plugin.plugin_key in listing.text and other.plugin_key not in listing.text
    assert note in text_of(listing.text)
    assert "<script>alert" not in listing.text  # escaped, never mark-up

    page = await client.get(_plugin_url(plugin))
    assert page.status_code == 200
    text = text_of(page.text)
    assert "Reviewer's note" in text and note in text and "Bad icon" in text
    assert f"/portal/plugins/{plugin.id}/versions/{version.id}" in page.text


async def test_another_developers_plugin_is_refused_as_the_api_refuses_it(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    await in_portal(client, await factory.developer())
    response = await client.get(_plugin_url(plugin))
    assert response.status_code == 403
    assert plugin.name not in response.text
    assert (await client.get("/portal/plugins/not-an-id")).status_code == 404


async def test_set_halt_and_resume_a_rollout(client: httpx.AsyncClient, factory: Factory) -> None:
    developer = await factory.developer()
    admin = await factory.admin()
    plugin = await factory.plugin(developer)
    await factory.version(plugin, "1.0.0")
    rolling = await factory.version(plugin, "1.1.0", rollout_percent=10, rollout_state="rolling")
    await in_portal(client, developer)
    url = _plugin_url(plugin)
    action = f"{url}/versions/{rolling.id}/rollout"

    async def state() -> tuple[str, int, str | None]:
        found = ok(
            await client.get(f"/api/v1/admin/plugins/versions/{rolling.id}", headers=admin.headers)
        )
        rollout = found["rollout"]
        return rollout["state"], rollout["percent"], rollout.get("haltedReason")

    page = await client.get(url)
    assert "Set rollout" in page.text and "Halt rollout" in page.text

    moved = await post_from(client, url, action, {"action": "set", "percent": "30"})
    assert moved.status_code == 303
    assert moved.headers["location"].startswith(f"{url}?done=rollout_set")
    assert await state() == ("rolling", 30, None)

    shrink = await post_from(client, url, action, {"action": "set", "percent": "20"})
    assert shrink.status_code == 409
    assert "it may only grow" in text_of(shrink.text)
    assert await state() == ("rolling", 30, None)

    halted = await post_from(client, url, action, {"action": "halt", "reason": "crash on start"})
    assert halted.status_code == 303
    assert await state() == ("halted", 30, "crash on start")
    assert "Resume rollout" in (await client.get(url)).text

    resumed = await post_from(client, url, action, {"action": "resume"})
    assert resumed.status_code == 303
    assert await state() == ("rolling", 30, None)
    assert await _audit(client, admin, rolling.id) == [
        ("ROLLOUT_RESUME", "developer"),
        ("ROLLOUT_HALT", "developer"),
        ("ROLLOUT_SET", "developer"),
    ]

    bad = await post_from(client, url, action, {"action": "set", "percent": "abc"})
    assert bad.status_code == 400
    assert "whole number from 1 to 100" in text_of(bad.text)


async def test_an_unverified_developer_reads_but_cannot_move_a_rollout(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer(verified=False)
    plugin = await factory.plugin(developer)
    await factory.version(plugin, "1.0.0")
    rolling = await factory.version(plugin, "1.1.0", rollout_percent=10, rollout_state="rolling")
    await in_portal(client, developer)
    url = _plugin_url(plugin)
    response = await post_from(
        client, url, f"{url}/versions/{rolling.id}/rollout", {"action": "set", "percent": "50"}
    )
    assert response.status_code == 403
    found = ok(
        await client.get(f"/api/v1/developer/plugins/{plugin.id}", headers=developer.headers)
    )
    version = next(v for v in found["versions"] if v["version"] == "1.1.0")
    assert version["rollout"]["percent"] == 10


async def test_the_chart_counts_installs_and_uninstalls_and_ratings_are_shown(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    plugin = await factory.plugin(developer)
    await factory.version(plugin, "1.0.0")
    users = [await factory.user() for _ in range(3)]
    for user in users:
        ok(
            await client.post(
                f"/api/v1/plugins/install/{plugin.id}",
                json={"version": "1.0.0"},
                headers=user.headers,
            ),
            201,
        )
    ok(
        await client.post(
            f"/api/v1/plugins/uninstall/{plugin.id}",
            json={"version": "1.0.0"},
            headers=users[0].headers,
        ),
        201,
    )
    ok(
        await client.post(
            f"/api/v1/plugins/rate/{plugin.id}",
            json={"score": 4, "comment": "Works <b>well</b>"},
            headers=users[1].headers,
        ),
        201,
    )
    await in_portal(client, developer)
    page = await client.get(_plugin_url(plugin))
    assert page.status_code == 200
    text = text_of(page.text)
    assert "Installs: 3" in text and "Uninstalls: 1" in text
    assert re.search(r"<svg[^>]*role=\"img\"", page.text)
    assert page.text.count("<rect") == 2  # today's two bars; empty days draw nothing
    assert "Works <b>well</b>" in text and "<b>well</b>" not in page.text
    assert "4.00 of 5 from 1" in text
    assert users[1].name not in text and users[1].email not in text  # raters stay unnamed


async def test_a_new_token_is_shown_once_works_and_can_be_revoked(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    await in_portal(client, developer)
    created = await post_from(
        client,
        "/portal/tokens",
        "/portal/tokens",
        {"name": "CI", "scope_read": "on", "expires_in_days": "30"},
    )
    assert created.status_code == 201
    match = re.search(r"mkt_pat_[A-Za-z0-9_\-]+", created.text)
    assert match
    token = match.group(0)
    assert created.headers["Cache-Control"] == "no-store"
    bearer = {"Authorization": f"Bearer {token}"}
    ok(await client.get("/api/v1/developer/plugins", headers=bearer))

    again = await client.get("/portal/tokens")
    assert token not in again.text  # shown once
    (listed,) = ok(await client.get("/api/v1/auth/tokens", headers=developer.headers))["items"]
    assert (listed["name"], listed["scopes"], listed["revokedAt"]) == ("CI", ["read"], None)

    revoked = await post_from(client, "/portal/tokens", f"/portal/tokens/{listed['id']}/revoke", {})
    assert revoked.status_code == 303
    assert (await client.get("/api/v1/developer/plugins", headers=bearer)).status_code == 401
    (listed,) = ok(await client.get("/api/v1/auth/tokens", headers=developer.headers))["items"]
    assert listed["revokedAt"] is not None


async def test_a_token_form_without_a_scope_is_refused_and_makes_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    await in_portal(client, developer)
    refused = await post_from(
        client, "/portal/tokens", "/portal/tokens", {"name": "CI", "expires_in_days": "30"}
    )
    assert refused.status_code == 400
    assert "Scopes" in text_of(refused.text)
    assert "token-value" not in refused.text  # no token was shown
    assert ok(await client.get("/api/v1/auth/tokens", headers=developer.headers))["items"] == []


async def test_an_organization_its_members_and_their_access(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    member = await factory.developer()
    await in_portal(client, owner)
    created = await post_from(
        client, "/portal/orgs", "/portal/orgs", {"slug": "acme-tools", "name": "Acme Tools"}
    )
    assert created.status_code == 303
    assert created.headers["location"] == "/portal/orgs/acme-tools?done=created"
    plugin = await factory.plugin(owner)
    ok(
        await client.post(
            f"/api/v1/developer/plugins/{plugin.id}/transfer",
            json={"org": "acme-tools"},
            headers=owner.headers,
        )
    )
    org_page = "/portal/orgs/acme-tools"
    unknown = await post_from(
        client, org_page, f"{org_page}/members", {"email": "nobody@example.com", "role": "member"}
    )
    assert unknown.status_code == 404
    added = await post_from(
        client, org_page, f"{org_page}/members", {"email": member.email, "role": "member"}
    )
    assert added.status_code == 303
    members = ok(
        await client.get("/api/v1/developer/orgs/acme-tools/members", headers=owner.headers)
    )
    assert sorted((m["email"], m["role"]) for m in members["items"]) == sorted(
        [(owner.email, "owner"), (member.email, "member")]
    )

    # The last owner cannot leave: a 409 page, and the owner is still there.
    left = await post_from(client, org_page, f"{org_page}/members/{owner.id}/remove", {})
    assert left.status_code == 409
    assert "last owner" in text_of(left.text)

    member_client = httpx.AsyncClient(transport=client._transport, base_url=str(client.base_url))
    async with member_client:
        await in_portal(member_client, member)
        assert plugin.plugin_key in (await member_client.get("/portal")).text
        assert (await member_client.get(_plugin_url(plugin))).status_code == 200
        # A member sees the members but gets no forms to change them.
        assert "Add a member" not in (await member_client.get(org_page)).text

        removed = await post_from(client, org_page, f"{org_page}/members/{member.id}/remove", {})
        assert removed.status_code == 303
        # Rights are read at every request: the member's session loses the plugin at once.
        assert (await member_client.get(_plugin_url(plugin))).status_code == 403
        assert plugin.plugin_key not in (await member_client.get("/portal")).text
        assert (await member_client.get(org_page)).status_code == 403
    members = ok(
        await client.get("/api/v1/developer/orgs/acme-tools/members", headers=owner.headers)
    )
    assert [m["email"] for m in members["items"]] == [owner.email]


async def test_a_slug_in_use_is_refused_on_the_page(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    first, second = await factory.developer(), await factory.developer()
    ok(
        await client.post(
            "/api/v1/developer/orgs", json={"slug": "taken", "name": "Taken"}, headers=first.headers
        ),
        201,
    )
    await in_portal(client, second)
    refused = await post_from(
        client, "/portal/orgs", "/portal/orgs", {"slug": "taken", "name": "Mine"}
    )
    assert refused.status_code == 409
    assert "already exists" in text_of(refused.text)
    assert ok(await client.get("/api/v1/developer/orgs", headers=second.headers))["items"] == []


async def test_odd_numbers_in_the_token_form_are_refused_in_words(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    await in_portal(client, developer)
    for days in ("²", "9" * 5000, "-3", "1.5", ""):
        refused = await post_from(
            client,
            "/portal/tokens",
            "/portal/tokens",
            {"name": "CI", "scope_publish": "on", "expires_in_days": days},
        )
        assert refused.status_code == 400, days
        assert "Expires in (days)" in text_of(refused.text)
    assert ok(await client.get("/api/v1/auth/tokens", headers=developer.headers))["items"] == []


async def test_odd_rollout_percents_are_refused_in_words(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    plugin = await factory.plugin(developer)
    await factory.version(plugin, "1.0.0")
    rolling = await factory.version(plugin, "1.1.0", rollout_percent=10, rollout_state="rolling")
    await in_portal(client, developer)
    url = _plugin_url(plugin)
    for percent in ("²", "9" * 5000, "0", "101", ""):
        refused = await post_from(
            client,
            url,
            f"{url}/versions/{rolling.id}/rollout",
            {"action": "set", "percent": percent},
        )
        assert refused.status_code == 400, percent
        assert "Percent" in text_of(refused.text)
    other = await factory.version(await factory.plugin(developer), "1.0.0")
    mismatch = await post_from(
        client, url, f"{url}/versions/{other.id}/rollout", {"action": "set", "percent": "50"}
    )
    assert mismatch.status_code == 404  # another plugin's version: not this plugin's
    found = ok(
        await client.get(f"/api/v1/developer/plugins/{plugin.id}", headers=developer.headers)
    )
    assert next(v for v in found["versions"] if v["version"] == "1.1.0")["rollout"]["percent"] == 10
