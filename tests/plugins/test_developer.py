"""Developer plugin group: publish, list, detail, update, price, create-version, takedown."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest
from sqlalchemy import select

from marketplace.models import AuditLog, Plugin, PluginVersion, Purchase
from tests.factories import Factory
from tests.helpers import err, field_names, ok
from tests.plugins.helpers import (
    config_manifest,
    create_version,
    publish,
    publish_body,
    review_plugin,
    unique_key,
)

BASE = "/api/v1/developer/plugins"


async def test_publish_creates_pending_plugin_without_version(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    data = await publish(client, dev, category="development", tags=["weather", "天气"])
    assert data["reviewStatus"] == "pending" and data["enabled"] is False
    assert data["latestVersion"] is None and data["ownerId"] == dev.id
    assert data["category"] == "development" and data["tags"] == ["weather", "天气"]
    assert data["isFree"] is True and data["price"] == 0 and data["validityDays"] is None
    assert data["ratingAverage"] is None and data["downloadCount"] == 0
    async with sessionmaker() as session:
        plugin = await session.get(Plugin, data["id"])
        assert plugin is not None and plugin.plugin_key == data["pluginKey"]
        versions = await session.scalars(
            select(PluginVersion).where(PluginVersion.plugin_id == plugin.id)
        )
        assert list(versions) == []


async def test_publish_defaults_category_to_productivity(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    assert (await publish(client, dev))["category"] == "productivity"


async def test_publish_paid_plugin_stores_exact_price(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    data = await publish(client, dev, isFree=False, price=19.99, validityDays=30)
    assert data["price"] == 19.99 and data["isFree"] is False and data["validityDays"] == 30
    async with sessionmaker() as session:
        plugin = await session.get(Plugin, data["id"])
        assert plugin is not None and plugin.price == Decimal("19.99")


async def test_publish_validity_zero_is_stored_as_permanent(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    data = await publish(client, dev, isFree=False, price=5, validityDays=0)
    assert data["validityDays"] is None


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"pluginKey": "Upper-Case"}, "pluginKey"),
        ({"pluginKey": "ab"}, "pluginKey"),
        ({"pluginKey": "a" * 65}, "pluginKey"),
        ({"pluginKey": "1abc"}, "pluginKey"),
        ({"pluginKey": "0e8c2b7e-3c4a-4b0e-9a3e-1f2d3c4b5a69"}, "pluginKey"),
        ({"type": "widget"}, "type"),
        ({"name": ""}, "name"),
        ({"descriptionZh": "x\u202ey"}, "descriptionZh"),
        ({"price": -1}, "price"),
        ({"isFree": False, "price": 9.999}, "price"),
        ({"validityDays": -1}, "validityDays"),
        ({"featured": True}, "featured"),
    ],
)
async def test_publish_refuses_invalid_field(
    client: httpx.AsyncClient, factory: Factory, overrides: dict, field: str
) -> None:
    dev = await factory.developer()
    response = await client.post(
        f"{BASE}/publish", json=publish_body(**overrides), headers=dev.headers
    )
    assert field in field_names(err(response, 400, "VALIDATION_FAILED"))


async def test_publish_refuses_missing_required_fields(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    error = err(
        await client.post(f"{BASE}/publish", json={"pluginKey": "abc-def"}, headers=dev.headers),
        400,
        "VALIDATION_FAILED",
    )
    assert {"name", "nameZh", "description", "descriptionZh", "type"} <= field_names(error)


@pytest.mark.parametrize(
    "overrides", [{"isFree": True, "price": 5}, {"isFree": False}, {"isFree": False, "price": 0}]
)
async def test_publish_enforces_price_rule(
    client: httpx.AsyncClient, factory: Factory, overrides: dict
) -> None:
    dev = await factory.developer()
    err(
        await client.post(f"{BASE}/publish", json=publish_body(**overrides), headers=dev.headers),
        400,
        "VALIDATION_FAILED",
    )


async def test_publish_refuses_unknown_category(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    body = publish_body(category="games")
    error = err(
        await client.post(f"{BASE}/publish", json=body, headers=dev.headers),
        400,
        "PLUGIN_INVALID_CATEGORY",
    )
    assert error["message"] == 'Invalid category "games"'
    async with sessionmaker() as session:
        assert (
            await session.scalar(select(Plugin).where(Plugin.plugin_key == body["pluginKey"]))
            is None
        )


async def test_publish_refuses_taken_plugin_key(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    first, second = await factory.developer(), await factory.developer()
    data = await publish(client, first)
    err(
        await client.post(
            f"{BASE}/publish",
            json=publish_body(pluginKey=data["pluginKey"]),
            headers=second.headers,
        ),
        409,
        "PLUGIN_KEY_EXISTS",
    )


async def test_publish_needs_verified_developer(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    unverified, user = await factory.developer(verified=False), await factory.user()
    err(await client.post(f"{BASE}/publish", json=publish_body()), 401, "UNAUTHORIZED")
    err(
        await client.post(f"{BASE}/publish", json=publish_body(), headers=user.headers),
        403,
        "FORBIDDEN",
    )
    err(
        await client.post(f"{BASE}/publish", json=publish_body(), headers=unverified.headers),
        403,
        "DEVELOPER_NOT_VERIFIED",
    )


async def test_unverified_developer_may_read_own_list(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer(verified=False)
    assert ok(await client.get(BASE, headers=dev.headers))["items"] == []


async def test_list_shows_only_own_plugins_with_status_filter(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, other, admin = await factory.developer(), await factory.developer(), await factory.admin()
    mine = [await publish(client, dev) for _ in range(3)]
    await publish(client, other)
    ok(await review_plugin(client, admin, mine[0]["id"], approved=True))
    data = ok(await client.get(BASE, headers=dev.headers))
    assert {p["id"] for p in data["items"]} == {p["id"] for p in mine}
    assert data["total"] == 3 and data["page"] == 1 and data["pageSize"] == 20
    approved = ok(await client.get(BASE, params={"reviewStatus": "approved"}, headers=dev.headers))
    assert [p["id"] for p in approved["items"]] == [mine[0]["id"]] and approved["total"] == 1


async def test_list_pagination_rules(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    for _ in range(3):
        await publish(client, dev)
    page2 = ok(await client.get(BASE, params={"page": 2, "pageSize": 2}, headers=dev.headers))
    assert len(page2["items"]) == 1 and page2["total"] == 3
    assert (
        ok(await client.get(BASE, params={"pageSize": 1000}, headers=dev.headers))["pageSize"]
        == 100
    )
    err(await client.get(BASE, params={"page": 0}, headers=dev.headers), 400, "VALIDATION_FAILED")
    err(
        await client.get(BASE, params={"reviewStatus": "nope"}, headers=dev.headers),
        400,
        "VALIDATION_FAILED",
    )


async def test_detail_has_versions_newest_first_and_recent_purchases(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, buyer = await factory.developer(), await factory.user()
    plugin = await publish(client, dev, isFree=False, price=3)
    for version in ("1.0.0-alpha.9", "1.0.0", "1.0.0-alpha.10"):
        await create_version(client, dev, plugin, version)
    async with sessionmaker() as session:
        session.add(
            Purchase(
                user_id=buyer.id,
                plugin_id=plugin["id"],
                plugin_key=plugin["pluginKey"],
                price=Decimal("3"),
                status="paid",
                provider="builtin",
            )
        )
        await session.commit()
    data = ok(await client.get(f"{BASE}/{plugin['pluginKey']}", headers=dev.headers))
    assert [v["version"] for v in data["versions"]] == ["1.0.0", "1.0.0-alpha.10", "1.0.0-alpha.9"]
    assert all(v["reviewStatus"] == "pending" and v["isLatest"] is False for v in data["versions"])
    assert [(p["userId"], p["price"]) for p in data["recentPurchases"]] == [(buyer.id, 3)]


async def test_detail_of_other_developers_plugin_is_not_owned(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, other = await factory.developer(), await factory.developer()
    plugin = await publish(client, owner)
    err(await client.get(f"{BASE}/{plugin['id']}", headers=other.headers), 403, "PLUGIN_NOT_OWNED")
    err(await client.get(f"{BASE}/no-such-plugin", headers=other.headers), 404, "PLUGIN_NOT_FOUND")


async def test_update_changes_editable_fields(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    data = ok(
        await client.put(
            f"{BASE}/{plugin['id']}",
            json={
                "nameZh": "新名字",
                "descriptionZh": "新描述",
                "platforms": ["linux"],
                "category": "ai",
            },
            headers=dev.headers,
        )
    )
    assert (data["nameZh"], data["descriptionZh"], data["platforms"], data["category"]) == (
        "新名字",
        "新描述",
        ["linux"],
        "ai",
    )
    detail = ok(await client.get(f"{BASE}/{plugin['id']}", headers=dev.headers))
    assert detail["nameZh"] == "新名字"


@pytest.mark.parametrize(
    "field",
    [
        "pluginKey",
        "type",
        "featured",
        "enabled",
        "price",
        "validityDays",
        "isFree",
        "reviewStatus",
        "reviewNote",
        "reviewedBy",
        "latestVersion",
        "source",
    ],
)
async def test_update_refuses_protected_field_by_name(
    client: httpx.AsyncClient, factory: Factory, sessionmaker, field: str
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    response = await client.put(
        f"{BASE}/{plugin['id']}", json={field: "x", "nameZh": "changed"}, headers=dev.headers
    )
    assert field in field_names(err(response, 400, "VALIDATION_FAILED"))
    async with sessionmaker() as session:
        row = await session.get(Plugin, plugin["id"])
        assert row is not None and row.name_zh == "天气"  # nothing applied


async def test_update_of_rejected_plugin_resubmits_it(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    ok(await review_plugin(client, admin, plugin["id"], approved=False, reviewNote="needs icon"))
    data = ok(
        await client.put(
            f"{BASE}/{plugin['id']}", json={"description": "Better"}, headers=dev.headers
        )
    )
    assert data["reviewStatus"] == "pending"


async def test_update_refuses_unknown_category_and_null_name(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    err(
        await client.put(f"{BASE}/{plugin['id']}", json={"category": "games"}, headers=dev.headers),
        400,
        "PLUGIN_INVALID_CATEGORY",
    )
    err(
        await client.put(f"{BASE}/{plugin['id']}", json={"name": None}, headers=dev.headers),
        400,
        "VALIDATION_FAILED",
    )


async def test_writes_on_other_developers_plugin_are_not_owned(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, other = await factory.developer(), await factory.developer()
    plugin = await publish(client, owner)
    path = f"{BASE}/{plugin['id']}"
    err(
        await client.put(path, json={"nameZh": "x"}, headers=other.headers), 403, "PLUGIN_NOT_OWNED"
    )
    err(
        await client.put(f"{path}/price", json={"price": 1}, headers=other.headers),
        403,
        "PLUGIN_NOT_OWNED",
    )
    err(
        await client.post(
            f"{path}/create-version",
            json={"version": "1.0.0", "manifest": config_manifest(plugin["pluginKey"], "1.0.0")},
            headers=other.headers,
        ),
        403,
        "PLUGIN_NOT_OWNED",
    )
    err(await client.delete(path, headers=other.headers), 403, "PLUGIN_NOT_OWNED")


async def test_unverified_owner_write_is_refused_before_lookup(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer(verified=False)
    err(
        await client.put(f"{BASE}/does-not-exist", json={"nameZh": "x"}, headers=dev.headers),
        403,
        "DEVELOPER_NOT_VERIFIED",
    )


async def test_price_sets_paid_and_free(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    paid = ok(
        await client.put(
            f"{BASE}/{plugin['id']}/price",
            json={"price": 12.5, "validityDays": 365},
            headers=dev.headers,
        )
    )
    assert (paid["isFree"], paid["price"], paid["validityDays"]) == (False, 12.5, 365)
    permanent = ok(
        await client.put(
            f"{BASE}/{plugin['id']}/price",
            json={"price": 8, "validityDays": 0},
            headers=dev.headers,
        )
    )
    assert permanent["validityDays"] is None
    free = ok(
        await client.put(f"{BASE}/{plugin['id']}/price", json={"price": 0}, headers=dev.headers)
    )
    assert (free["isFree"], free["price"], free["validityDays"]) == (True, 0, None)
    async with sessionmaker() as session:
        row = await session.get(Plugin, plugin["id"])
        assert row is not None and row.is_free and row.price == 0


@pytest.mark.parametrize(
    "body",
    [
        {"price": -1},
        {"price": 1.234},
        {"price": 0, "validityDays": 30},
        {},
        {"price": "1"},
        {"price": 1, "currency": "USD"},
    ],
)
async def test_price_refuses_invalid_body(
    client: httpx.AsyncClient, factory: Factory, body: dict
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    err(
        await client.put(f"{BASE}/{plugin['id']}/price", json=body, headers=dev.headers),
        400,
        "VALIDATION_FAILED",
    )


async def test_create_version_config_only_is_pending_and_not_current(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    version = await create_version(client, dev, plugin, "1.0.0")
    assert version["distribution"] == "config_only" and version["reviewStatus"] == "pending"
    assert version["isLatest"] is False and version["sha256"] is None and version["size"] is None
    detail = ok(await client.get(f"{BASE}/{plugin['id']}", headers=dev.headers))
    assert detail["latestVersion"] is None


async def test_create_version_inline_code(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev, type="tool")
    manifest = {
        "id": plugin["pluginKey"],
        "version": "0.1.0",
        "main": "index.js",
        "category": "utility",
        "inlineCode": "export default () => 1",
    }
    data = ok(
        await client.post(
            f"{BASE}/{plugin['id']}/create-version",
            json={"version": "0.1.0", "manifest": manifest},
            headers=dev.headers,
        ),
        201,
    )
    assert (
        data["distribution"] == "inline"
        and data["manifest"]["inlineCode"] == "export default () => 1"
    )


@pytest.mark.parametrize(
    ("manifest_change", "version", "code", "message"),
    [
        (
            {"id": "SOMETHING"},
            "1.0.0",
            "PLUGIN_PACKAGE_INVALID",
            "manifest.id does not match plugin.pluginKey",
        ),
        (
            {"version": "1.0.1"},
            "1.0.0",
            "PLUGIN_PACKAGE_INVALID",
            "manifest.version does not match requested version",
        ),
        ({"category": "games"}, "1.0.0", "PLUGIN_INVALID_CATEGORY", 'Invalid category "games"'),
    ],
)
async def test_create_version_refuses_manifest_mismatch(
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker,
    manifest_change: dict,
    version: str,
    code: str,
    message: str,
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    manifest = config_manifest(plugin["pluginKey"], version) | manifest_change
    error = err(
        await client.post(
            f"{BASE}/{plugin['id']}/create-version",
            json={"version": version, "manifest": manifest},
            headers=dev.headers,
        ),
        400,
        code,
    )
    assert error["message"] == message
    async with sessionmaker() as session:
        assert (
            list(
                await session.scalars(
                    select(PluginVersion).where(PluginVersion.plugin_id == plugin["id"])
                )
            )
            == []
        )


async def test_create_version_id_check_is_case_sensitive(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    manifest = config_manifest(plugin["pluginKey"].upper(), "1.0.0")
    error = err(
        await client.post(
            f"{BASE}/{plugin['id']}/create-version",
            json={"version": "1.0.0", "manifest": manifest},
            headers=dev.headers,
        ),
        400,
        "PLUGIN_PACKAGE_INVALID",
    )
    assert error["message"] == "manifest.id does not match plugin.pluginKey"


@pytest.mark.parametrize("version", ["1.0", "v1.0.0", "1.0.0+build.1", "01.0.0"])
async def test_create_version_refuses_invalid_semver(
    client: httpx.AsyncClient, factory: Factory, version: str
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    manifest = config_manifest(plugin["pluginKey"], version)
    err(
        await client.post(
            f"{BASE}/{plugin['id']}/create-version",
            json={"version": version, "manifest": manifest},
            headers=dev.headers,
        ),
        400,
        "VALIDATION_FAILED",
    )


async def test_create_version_refuses_duplicate(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    await create_version(client, dev, plugin, "1.0.0")
    manifest = config_manifest(plugin["pluginKey"], "1.0.0")
    err(
        await client.post(
            f"{BASE}/{plugin['id']}/create-version",
            json={"version": "1.0.0", "manifest": manifest},
            headers=dev.headers,
        ),
        409,
        "PLUGIN_VERSION_EXISTS",
    )


async def test_create_version_without_distribution_is_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev, type="tool")
    manifest = {
        "id": plugin["pluginKey"],
        "version": "1.0.0",
        "main": "index.js",
        "category": "utility",
    }
    err(
        await client.post(
            f"{BASE}/{plugin['id']}/create-version",
            json={"version": "1.0.0", "manifest": manifest},
            headers=dev.headers,
        ),
        400,
        "VALIDATION_FAILED",
    )


async def test_create_version_of_mcp_plugin_needs_mcp_declaration(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev, type="mcp")
    manifest = {
        "id": plugin["pluginKey"],
        "version": "1.0.0",
        "main": "",
        "category": "utility",
        "inlineCode": "x",
    }
    err(
        await client.post(
            f"{BASE}/{plugin['id']}/create-version",
            json={"version": "1.0.0", "manifest": manifest},
            headers=dev.headers,
        ),
        400,
        "PLUGIN_PACKAGE_INVALID",
    )


async def test_create_version_with_findings_is_created_and_auto_rejected(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    version = await create_version(
        client,
        dev,
        plugin,
        "1.0.0",
        config=[{"key": "token", "secret": True}, {"key": "token"}, {"label": "no key"}],
        description="hidden\u200btext",
    )
    assert version["reviewStatus"] == "rejected" and version["reviewedBy"] == "system"
    note = version["reviewNote"]
    assert "token" in note and "key" in note and "U+200B" in note
    async with sessionmaker() as session:
        audit = (
            await session.scalars(select(AuditLog).where(AuditLog.resource_id == version["id"]))
        ).one()
        assert (audit.action, audit.actor_id, audit.trigger, audit.outcome) == (
            "REVIEW_REJECT",
            None,
            "auto-validation",
            "rejected",
        )
        assert audit.note == note


async def test_create_version_manifest_unknown_keys_are_kept(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    version = await create_version(client, dev, plugin, "1.0.0", vendorField={"nested": [1, 2]})
    assert version["manifest"]["vendorField"] == {"nested": [1, 2]}


async def test_takedown_keeps_versions_and_stops_listing(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    await create_version(client, dev, plugin, "1.0.0")
    ok(await review_plugin(client, admin, plugin["id"], approved=True))
    data = ok(await client.delete(f"{BASE}/{plugin['id']}", headers=dev.headers))
    assert data == {"id": plugin["id"], "reviewStatus": "taken_down"}
    async with sessionmaker() as session:
        row = await session.get(Plugin, plugin["id"])
        assert row is not None and row.review_status == "taken_down" and row.enabled is False
        versions = list(
            await session.scalars(
                select(PluginVersion).where(PluginVersion.plugin_id == plugin["id"])
            )
        )
        assert [v.review_status for v in versions] == ["approved"]
    err(await client.delete(f"{BASE}/{plugin['id']}", headers=dev.headers), 409, "INVALID_STATE")


async def test_takedown_of_pending_plugin(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    assert (
        ok(await client.delete(f"{BASE}/{plugin['pluginKey']}", headers=dev.headers))[
            "reviewStatus"
        ]
        == "taken_down"
    )


async def test_taken_down_plugin_can_be_relisted_by_admin_approval(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    ok(await client.delete(f"{BASE}/{plugin['id']}", headers=dev.headers))
    data = ok(await review_plugin(client, admin, plugin["id"], approved=True))
    assert data["reviewStatus"] == "approved" and data["enabled"] is True


async def test_key_lookup_uses_plugin_key_for_non_uuid(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    key = unique_key("lookup")
    plugin = await publish(client, dev, pluginKey=key)
    assert ok(await client.get(f"{BASE}/{key}", headers=dev.headers))["id"] == plugin["id"]
