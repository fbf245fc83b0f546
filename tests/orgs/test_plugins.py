"""Plugins of organizations (CONTRACT 17): publishing into one, who operates them, moving a
personal plugin in, and `org` in every plugin representation."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from marketplace.models import OrgRole, ReviewStatus
from tests.accounts.tokens import issue
from tests.factories import Account, Factory
from tests.helpers import err, field_names, ok
from tests.orgs.helpers import (
    PLUGINS,
    Sessions,
    audit,
    plugin_by_key,
    plugin_row,
    publish,
    remove,
    transfer,
)
from tests.scenarios.helpers import DEV as SCENARIOS
from tests.scenarios.helpers import publish as publish_scenario

PUBLIC = "/api/v1/plugins"


def _ref(org: Any) -> dict[str, str]:
    return {"slug": org.slug, "name": org.name}


async def _update(
    client: httpx.AsyncClient, caller: Account, plugin_id: str, name: str = "Renamed"
) -> httpx.Response:
    return await client.put(f"{PLUGINS}/{plugin_id}", json={"name": name}, headers=caller.headers)


async def _detail(client: httpx.AsyncClient, caller: Account, plugin_id: str) -> httpx.Response:
    return await client.get(f"{PLUGINS}/{plugin_id}", headers=caller.headers)


async def _mine(client: httpx.AsyncClient, caller: Account, **params: Any) -> list[str]:
    data = ok(await client.get(PLUGINS, params=params, headers=caller.headers))
    assert data["total"] == len(data["items"])
    return [item["id"] for item in data["items"]]


# ---------------------------------------------------------------- publish


async def test_a_member_publishes_into_its_organization(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner, name="Acme Tools", members={member.id: OrgRole.MEMBER})
    data = ok(await publish(client, member, "acme-weather", org=org.slug), 201)
    assert data["org"] == {"slug": org.slug, "name": "Acme Tools"}
    assert data["ownerId"] == member.id
    row = await plugin_row(sessionmaker, data["id"])
    assert row is not None
    assert (row.org_id, row.owner_id) == (org.id, member.id)
    # Every member operates it, the owner who did not publish it too.
    assert ok(await _detail(client, owner, data["id"]))["org"] == _ref(org)
    assert ok(await _update(client, owner, data["id"]))["name"] == "Renamed"
    assert data["id"] in await _mine(client, owner)


async def test_a_plugin_published_without_org_is_personal(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev = await factory.developer()
    data = ok(await publish(client, dev, "solo-weather"), 201)
    assert data["org"] is None
    row = await plugin_row(sessionmaker, data["id"])
    assert row is not None
    assert row.org_id is None


async def test_publishing_into_an_unknown_organization_is_404_and_creates_nothing(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev = await factory.developer()
    error = err(await publish(client, dev, "lost-weather", org="acme-nowhere"), 404, "NOT_FOUND")
    assert error["details"] == {"org": "acme-nowhere"}
    assert await plugin_by_key(sessionmaker, "lost-weather") is None


async def test_a_non_member_publishing_into_an_organization_is_403_and_creates_nothing(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    org = await factory.org()
    outsider = await factory.developer()
    err(await publish(client, outsider, "sneaky-weather", org=org.slug), 403, "FORBIDDEN")
    assert await plugin_by_key(sessionmaker, "sneaky-weather") is None


async def test_the_organization_is_checked_before_the_category(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """CONTRACT 1: 404 and 403 before a 400 about the content."""
    dev = await factory.developer()
    org = await factory.org()
    response = await publish(client, dev, "order-weather", org="acme-nowhere", category="nope")
    err(response, 404, "NOT_FOUND")
    response = await publish(client, dev, "order-weather", org=org.slug, category="nope")
    err(response, 403, "FORBIDDEN")


async def test_an_org_slug_off_the_pattern_is_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    error = err(await publish(client, dev, "bad-org-weather", org="Acme"), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"org"}


async def test_an_administrators_creation_takes_no_org(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """`org` is a developer's publish field: the admin creation refuses it as unknown."""
    admin = await factory.admin()
    org = await factory.org(await factory.developer())
    body = {
        "pluginKey": "official-weather",
        "name": "Weather",
        "nameZh": "天气",
        "description": "Shows the weather",
        "descriptionZh": "显示天气",
        "type": "mcp",
        "org": org.slug,
    }
    response = await client.post("/api/v1/admin/plugins", json=body, headers=admin.headers)
    assert field_names(err(response, 400, "VALIDATION_FAILED")) == {"org"}
    del body["org"]
    assert (
        ok(await client.post("/api/v1/admin/plugins", json=body, headers=admin.headers), 201)["org"]
        is None
    )


# ---------------------------------------------------------------- who operates them


async def test_a_non_member_gets_plugin_not_owned(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    org = await factory.org()
    plugin = await factory.plugin(org_id=org.id, review_status=ReviewStatus.PENDING)
    outsider = await factory.developer()
    err(await _detail(client, outsider, plugin.id), 403, "PLUGIN_NOT_OWNED")
    err(await _update(client, outsider, plugin.id), 403, "PLUGIN_NOT_OWNED")
    assert plugin.id not in await _mine(client, outsider)
    row = await plugin_row(sessionmaker, plugin.id)
    assert row is not None
    assert row.name == plugin.name


async def test_every_verified_member_operates_the_organizations_plugins(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    publisher, member = await factory.developer(), await factory.developer()
    org = await factory.org(publisher, members={member.id: OrgRole.MEMBER})
    plugin = await factory.plugin(publisher, org_id=org.id, review_status=ReviewStatus.PENDING)
    ok(await _update(client, member, plugin.id, "By a member"))
    response = await client.put(
        f"{PLUGINS}/{plugin.id}/price", json={"price": 5}, headers=member.headers
    )
    assert ok(response)["price"] == 5
    manifest = {
        "id": plugin.plugin_key,
        "version": "1.0.0",
        "main": "",
        "category": "productivity",
        "type": "mcp",
        "mcp": {"command": "npx", "args": ["weather"]},
    }
    response = await client.post(
        f"{PLUGINS}/{plugin.id}/create-version",
        json={"version": "1.0.0", "manifest": manifest},
        headers=member.headers,
    )
    ok(response, 201)
    detail = ok(await _detail(client, member, plugin.id))
    assert (detail["name"], detail["ownerId"], detail["org"]) == (
        "By a member",
        publisher.id,
        _ref(org),
    )
    assert [v["version"] for v in detail["versions"]] == ["1.0.0"]
    row = await plugin_row(sessionmaker, plugin.id)
    assert row is not None
    assert (row.name, row.owner_id, row.is_free) == ("By a member", publisher.id, False)


async def test_an_unverified_member_reads_but_does_not_write(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    member = await factory.developer(verified=False)
    org = await factory.org(members={member.id: OrgRole.MEMBER})
    plugin = await factory.plugin(org_id=org.id, review_status=ReviewStatus.PENDING)
    assert ok(await _detail(client, member, plugin.id))["id"] == plugin.id
    err(await _update(client, member, plugin.id), 403, "DEVELOPER_NOT_VERIFIED")
    row = await plugin_row(sessionmaker, plugin.id)
    assert row is not None
    assert row.name == plugin.name


async def test_a_removed_member_loses_the_organizations_plugins_at_once(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={member.id: OrgRole.MEMBER})
    plugin = await factory.plugin(owner, org_id=org.id, review_status=ReviewStatus.PENDING)
    ok(await _detail(client, member, plugin.id))
    assert await _mine(client, member) == [plugin.id]
    ok(await remove(client, owner, org.slug, member.id))
    # The same access token, a moment later.
    err(await _detail(client, member, plugin.id), 403, "PLUGIN_NOT_OWNED")
    err(await _update(client, member, plugin.id), 403, "PLUGIN_NOT_OWNED")
    assert await _mine(client, member) == []


async def test_a_removed_members_publishing_token_loses_the_plugin_at_once(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={member.id: OrgRole.MEMBER})
    plugin = await factory.plugin(owner, org_id=org.id, review_status=ReviewStatus.PENDING)
    pat = await issue(client, member, plugins=[plugin.plugin_key])
    response = await client.put(f"{PLUGINS}/{plugin.id}", json={"name": "T"}, headers=pat.headers)
    ok(response)
    ok(await remove(client, owner, org.slug, member.id))
    response = await client.put(f"{PLUGINS}/{plugin.id}", json={"name": "U"}, headers=pat.headers)
    err(response, 403, "PLUGIN_NOT_OWNED")
    err(await client.get(f"{PLUGINS}/{plugin.id}", headers=pat.headers), 403, "PLUGIN_NOT_OWNED")


async def test_a_publisher_removed_from_the_organization_loses_its_plugin_too(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """Rights come from membership; ownerId only says who published it."""
    owner, publisher = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={publisher.id: OrgRole.MEMBER})
    data = ok(await publish(client, publisher, "left-weather", org=org.slug), 201)
    ok(await remove(client, owner, org.slug, publisher.id))
    err(await _detail(client, publisher, data["id"]), 403, "PLUGIN_NOT_OWNED")
    assert await _mine(client, publisher) == []
    detail = ok(await _detail(client, owner, data["id"]))
    assert detail["ownerId"] == publisher.id


async def test_the_developer_list_shows_personal_and_organization_plugins(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, colleague, stranger = [await factory.developer() for _ in range(3)]
    org = await factory.org(colleague, members={dev.id: OrgRole.MEMBER})
    other_org = await factory.org(colleague)
    personal = await factory.plugin(dev, review_status=ReviewStatus.PENDING)
    shared = await factory.plugin(colleague, org_id=org.id)
    await factory.plugin(colleague)  # the colleague's personal plugin
    await factory.plugin(colleague, org_id=other_org.id)  # an organization dev is not in
    await factory.plugin(stranger)
    assert set(await _mine(client, dev)) == {personal.id, shared.id}
    assert await _mine(client, dev, reviewStatus="pending") == [personal.id]
    data = ok(await client.get(PLUGINS, headers=dev.headers))
    shown = {item["id"]: item["org"] for item in data["items"]}
    assert shown == {personal.id: None, shared.id: _ref(org)}


async def test_scenarios_stay_their_owners_alone(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """Organizations hold plugins: an organization's members share no scenarios."""
    dev, colleague = await factory.developer(), await factory.developer()
    await factory.org(dev, members={colleague.id: OrgRole.OWNER})
    scenario = await publish_scenario(client, dev)
    response = await client.get(f"{SCENARIOS}/{scenario['id']}", headers=colleague.headers)
    err(response, 403, "SCENARIO_NOT_OWNED")


# ---------------------------------------------------------------- transfer


async def test_an_owner_moves_its_personal_plugin_into_its_organization(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev, member = await factory.developer(), await factory.developer()
    org = await factory.org(dev, members={member.id: OrgRole.MEMBER})
    plugin = await factory.plugin(dev, review_status=ReviewStatus.PENDING)
    err(await _detail(client, member, plugin.id), 403, "PLUGIN_NOT_OWNED")
    data = ok(await transfer(client, dev, plugin.id, org.slug))
    assert (data["id"], data["org"], data["ownerId"]) == (plugin.id, _ref(org), dev.id)
    row = await plugin_row(sessionmaker, plugin.id)
    assert row is not None
    assert (row.org_id, row.owner_id) == (org.id, dev.id)
    [record] = await audit(sessionmaker, plugin.id)
    assert (record.action, record.actor_id, record.resource_type, record.outcome) == (
        "PLUGIN_TRANSFER",
        dev.id,
        "plugin",
        "transferred",
    )
    assert record.note is not None
    assert org.slug in record.note
    # Now every member operates it.
    assert ok(await _detail(client, member, plugin.id))["org"] == _ref(org)
    assert await _mine(client, member) == [plugin.id]


async def test_a_transfer_by_key_works_too(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    org = await factory.org(dev)
    plugin = await factory.plugin(dev)
    assert ok(await transfer(client, dev, plugin.plugin_key, org.slug))["org"] == _ref(org)


async def test_a_transfer_into_an_organization_the_caller_only_belongs_to_is_403(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev = await factory.developer()
    org = await factory.org(members={dev.id: OrgRole.MEMBER})
    plugin = await factory.plugin(dev)
    err(await transfer(client, dev, plugin.id, org.slug), 403, "FORBIDDEN")
    row = await plugin_row(sessionmaker, plugin.id)
    assert row is not None
    assert row.org_id is None
    assert await audit(sessionmaker, plugin.id) == []


async def test_a_transfer_into_a_strangers_organization_is_403(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev = await factory.developer()
    org = await factory.org()
    plugin = await factory.plugin(dev)
    err(await transfer(client, dev, plugin.id, org.slug), 403, "FORBIDDEN")
    row = await plugin_row(sessionmaker, plugin.id)
    assert row is not None
    assert row.org_id is None


async def test_a_transfer_into_an_unknown_organization_is_404(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev = await factory.developer()
    plugin = await factory.plugin(dev)
    err(await transfer(client, dev, plugin.id, "acme-nowhere"), 404, "NOT_FOUND")
    row = await plugin_row(sessionmaker, plugin.id)
    assert row is not None
    assert row.org_id is None


async def test_a_transfer_of_another_developers_plugin_is_plugin_not_owned(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev = await factory.developer()
    org = await factory.org(dev)
    plugin = await factory.plugin()
    err(await transfer(client, dev, plugin.id, org.slug), 403, "PLUGIN_NOT_OWNED")
    row = await plugin_row(sessionmaker, plugin.id)
    assert row is not None
    assert row.org_id is None


async def test_a_transfer_of_an_unknown_plugin_is_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    org = await factory.org(dev)
    err(await transfer(client, dev, "no-such-plugin", org.slug), 404, "PLUGIN_NOT_FOUND")


async def test_a_plugin_of_an_organization_cannot_be_transferred_again(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev = await factory.developer()
    first, second = await factory.org(dev), await factory.org(dev)
    plugin = await factory.plugin(dev, org_id=first.id)
    for target in (second, first):
        err(await transfer(client, dev, plugin.id, target.slug), 409, "INVALID_STATE")
    row = await plugin_row(sessionmaker, plugin.id)
    assert row is not None
    assert row.org_id == first.id


async def test_a_transfer_needs_a_verified_developer(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev = await factory.developer(verified=False)
    org = await factory.org(dev)
    plugin = await factory.plugin(dev)
    err(await transfer(client, dev, plugin.id, org.slug), 403, "DEVELOPER_NOT_VERIFIED")
    err(
        await client.post(f"{PLUGINS}/{plugin.id}/transfer", json={"org": org.slug}),
        401,
        "UNAUTHORIZED",
    )
    row = await plugin_row(sessionmaker, plugin.id)
    assert row is not None
    assert row.org_id is None


@pytest.mark.parametrize("body", [{}, {"org": "Acme"}, {"org": "acme-x", "owner": "y"}])
async def test_a_transfer_body_that_does_not_validate_is_400(
    client: httpx.AsyncClient, factory: Factory, body: dict[str, str]
) -> None:
    dev = await factory.developer()
    plugin = await factory.plugin(dev)
    response = await client.post(f"{PLUGINS}/{plugin.id}/transfer", json=body, headers=dev.headers)
    err(response, 400, "VALIDATION_FAILED")


# ---------------------------------------------------------------- representations


async def test_public_reads_show_the_organization(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    publisher = await factory.developer()
    org = await factory.org(publisher, name="Acme Tools")
    shared = await factory.plugin(publisher, org_id=org.id, featured=True, download_count=9)
    personal = await factory.plugin(publisher, featured=True, download_count=8)
    detail = ok(await client.get(f"{PUBLIC}/detail/{shared.plugin_key}"))
    assert detail["org"] == {"slug": org.slug, "name": "Acme Tools"}
    assert detail["developer"]["id"] == publisher.id
    assert "ownerId" not in detail
    assert ok(await client.get(f"{PUBLIC}/detail/{personal.id}"))["org"] is None
    for path in ("browse", "featured", "popular"):
        items = ok(await client.get(f"{PUBLIC}/{path}"))["items"]
        assert {i["id"]: i["org"] for i in items} == {shared.id: _ref(org), personal.id: None}


async def test_a_transfer_shows_in_cached_public_pages(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    org = await factory.org(dev)
    plugin = await factory.plugin(dev)
    for path in ("browse", f"detail/{plugin.id}"):  # read (and cached) before the move
        ok(await client.get(f"{PUBLIC}/{path}"))
    ok(await transfer(client, dev, plugin.id, org.slug))
    [item] = ok(await client.get(f"{PUBLIC}/browse"))["items"]
    assert item["org"] == _ref(org)
    assert ok(await client.get(f"{PUBLIC}/detail/{plugin.id}"))["org"] == _ref(org)
    [item] = ok(await client.get(f"{PUBLIC}/browse", params={"q": plugin.plugin_key}))["items"]
    assert item["org"] == _ref(org)


async def test_admin_reads_show_the_organization(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    org = await factory.org()
    shared = await factory.plugin(org_id=org.id)
    personal = await factory.plugin()
    detail = ok(await client.get(f"/api/v1/admin/plugins/{shared.id}", headers=admin.headers))
    assert detail["org"] == _ref(org)
    items = ok(await client.get("/api/v1/admin/plugins", headers=admin.headers))["items"]
    assert {i["id"]: i["org"] for i in items} == {shared.id: _ref(org), personal.id: None}
    response = await client.put(
        f"/api/v1/admin/plugins/{shared.id}", json={"featured": True}, headers=admin.headers
    )
    assert ok(response)["org"] == _ref(org)


async def test_the_installed_list_shows_the_organization(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    org = await factory.org()
    plugin = await factory.plugin(org_id=org.id)
    await factory.version(plugin, "1.0.0")
    user = await factory.user()
    await factory.install(user, plugin)
    [item] = ok(await client.get(f"{PUBLIC}/installed", headers=user.headers))["items"]
    assert item["plugin"]["org"] == _ref(org)
