"""Bad input is a 4xx in the envelope, never a 500 (CONTRACT 1: 400 VALIDATION_FAILED for a
body that does not validate, "wrong type" included; 500 only for real faults).

The `client` fixture of tests/review does not re-raise app exceptions, so a 500 is seen as
the answer a real client gets.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.dbsetup import postgres_admin_url
from tests.factories import Factory
from tests.helpers import err, field_names, ok
from tests.plugins.helpers import config_manifest, publish, publish_body
from tests.plugins.test_upload import tool_package, tool_plugin, upload
from tests.scenarios import helpers as sc

pytestmark = pytest.mark.fault


DEV = "/api/v1/developer/plugins"
ADMIN = "/api/v1/admin/plugins"
JSON = {"content-type": "application/json"}

needs_postgres = pytest.mark.skipif(
    not postgres_admin_url(), reason="the fault shows on PostgreSQL only (NUL in text)"
)


# ---------- null for list / boolean fields of the update endpoints ----------


@pytest.mark.parametrize("field", ["tags", "platforms"])
async def test_developer_update_null_list_field_is_400(
    client: httpx.AsyncClient, factory: Factory, field: str
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev, tags=["a"])
    response = await client.put(f"{DEV}/{plugin['id']}", json={field: None}, headers=dev.headers)
    assert field in field_names(err(response, 400, "VALIDATION_FAILED"))
    detail = ok(await client.get(f"{DEV}/{plugin['id']}", headers=dev.headers))
    assert isinstance(detail[field], list)


@pytest.mark.parametrize("field", ["featured", "enabled", "tags", "platforms"])
async def test_admin_update_null_field_is_400(
    client: httpx.AsyncClient, factory: Factory, field: str
) -> None:
    admin = await factory.admin()
    created = ok(await client.post(ADMIN, json=publish_body(), headers=admin.headers), 201)
    response = await client.put(
        f"{ADMIN}/{created['id']}", json={field: None}, headers=admin.headers
    )
    assert field in field_names(err(response, 400, "VALIDATION_FAILED"))


# ---------- unbounded integers ----------


@pytest.mark.parametrize("sort_order", [2**40, 10**20])
async def test_category_sort_order_out_of_range_is_400(
    client: httpx.AsyncClient, factory: Factory, sort_order: int
) -> None:
    # 2**40 overflows PostgreSQL INTEGER; 10**20 overflows SQLite's 64-bit INTEGER as well.
    admin = await factory.admin()
    body = {"key": "huge-order", "name": "Huge", "nameZh": "大", "sortOrder": sort_order}
    created = await client.post(f"{ADMIN}/categories", json=body, headers=admin.headers)
    assert "sortOrder" in field_names(err(created, 400, "VALIDATION_FAILED"))
    renamed = await client.put(
        f"{ADMIN}/categories/ai", json={"sortOrder": sort_order}, headers=admin.headers
    )
    assert "sortOrder" in field_names(err(renamed, 400, "VALIDATION_FAILED"))


# ---------- manifests that JSON decoding accepts but storage or rendering cannot hold ----------


async def test_manifest_with_integer_beyond_64_bits_is_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    manifest = config_manifest(plugin["pluginKey"], "1.0.0", limits={"max": 10**30})
    response = await client.post(
        f"{DEV}/{plugin['id']}/create-version",
        json={"version": "1.0.0", "manifest": manifest},
        headers=dev.headers,
    )
    # CONTRACT 4 keeps other manifest keys exactly as sent; no JSON client reads 10**30
    # back exactly, so it is refused, naming the path (docs/decisions.md, "Manifests sent
    # as JSON must be JSON any client can read back").
    error = err(response, 400, "VALIDATION_FAILED")
    assert field_names(error) == {"manifest"}
    assert "manifest.limits.max" in error["message"]


async def test_uploaded_manifest_with_huge_integer_is_400_not_500(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    data = tool_package(plugin["pluginKey"], "1.0.0", limits={"max": 10**30})

    response = await upload(client, dev, plugin, data)

    error = err(response, 400, "PLUGIN_PACKAGE_INVALID")
    assert error["message"] == (
        "manifest.json holds a number out of the 64-bit range at manifest.limits.max"
    )
    listed = await client.get(f"{DEV}/{plugin['id']}", headers=dev.headers)
    assert ok(listed, 200)["versions"] == []


@pytest.mark.parametrize("number", ["1e20", "-1.5e300", "9.3e18"])
async def test_manifest_with_float_beyond_64_bits_is_400(
    client: httpx.AsyncClient, factory: Factory, number: str
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    manifest = json.dumps(config_manifest(plugin["pluginKey"], "1.0.0"))
    body = '{"version": "1.0.0", "manifest": ' + manifest[:-1] + ', "x": ' + number + "}}"
    response = await client.post(
        f"{DEV}/{plugin['id']}/create-version", content=body.encode(), headers=JSON | dev.headers
    )
    # PostgreSQL JSONB gives such a float back as an integer beyond 64 bits, which no
    # response could then carry: refused before anything is stored.
    error = err(response, 400, "VALIDATION_FAILED")
    assert "manifest.x" in error["message"]
    listed = await client.get(f"{DEV}/{plugin['id']}", headers=dev.headers)
    assert ok(listed, 200)["versions"] == []


async def test_uploaded_manifest_with_huge_float_is_400_and_stores_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    data = tool_package(plugin["pluginKey"], "1.0.0", limits={"max": 1e20})

    response = await upload(client, dev, plugin, data)

    error = err(response, 400, "PLUGIN_PACKAGE_INVALID")
    assert error["message"] == (
        "manifest.json holds a number out of the 64-bit range at manifest.limits.max"
    )
    listed = await client.get(f"{DEV}/{plugin['id']}", headers=dev.headers)
    assert ok(listed, 200)["versions"] == []


async def test_manifest_floats_in_range_read_back_from_every_list(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    numbers = {"big": 9.2e18, "small": 1e-300, "half": 0.5, "negative": -3.25e10}
    manifest = config_manifest(plugin["pluginKey"], "1.0.0", limits=numbers)
    created = await client.post(
        f"{DEV}/{plugin['id']}/create-version",
        json={"version": "1.0.0", "manifest": manifest},
        headers=dev.headers,
    )
    ok(created, 201)

    detail = ok(await client.get(f"{DEV}/{plugin['id']}", headers=dev.headers), 200)
    queue = await client.get(f"{ADMIN}/versions/pending", headers=admin.headers)
    versions = await client.get(f"{ADMIN}/{plugin['id']}/versions", headers=admin.headers)
    # Every number reads back as the same number (JSONB may write 9.2e18 as an integer).
    assert detail["versions"][0]["manifest"]["limits"] == numbers
    queued = [v for v in ok(queue, 200)["items"] if v["pluginId"] == plugin["id"]]
    assert [v["version"] for v in queued] == ["1.0.0"]
    assert ok(versions, 200)["items"][0]["manifest"]["limits"] == numbers


@pytest.mark.parametrize("constant", ["Infinity", "NaN"])
async def test_manifest_with_non_json_constant_is_400(
    client: httpx.AsyncClient, factory: Factory, constant: str
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    manifest = json.dumps(config_manifest(plugin["pluginKey"], "1.0.0"))
    body = '{"version": "1.0.0", "manifest": ' + manifest[:-1] + ', "x": ' + constant + "}}"
    response = await client.post(
        f"{DEV}/{plugin['id']}/create-version", content=body.encode(), headers=JSON | dev.headers
    )
    err(response, 400, "VALIDATION_FAILED")


async def test_manifest_with_lone_surrogate_is_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    manifest = json.dumps(config_manifest(plugin["pluginKey"], "1.0.0"))
    body = '{"version": "1.0.0", "manifest": ' + manifest[:-1] + ', "note": "\\ud800"}}'
    response = await client.post(
        f"{DEV}/{plugin['id']}/create-version", content=body.encode(), headers=JSON | dev.headers
    )
    # Not an auto-rejection (201 rejected) like invisible characters: no UTF-8 store can
    # hold an unpaired surrogate, so there is no version to keep (docs/decisions.md).
    error = err(response, 400, "VALIDATION_FAILED")
    assert field_names(error) == {"manifest"}
    assert "manifest.note" in error["message"]


# ---------- lax coercion: wrong JSON types are accepted ----------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("review", {"approved": "yes"}, "approved"),
        ("review", {"approved": 1}, "approved"),
        ("publish", {"isFree": "false", "price": 5}, "isFree"),
        ("publish", {"isFree": False, "price": 5, "validityDays": "30"}, "validityDays"),
    ],
)
async def test_wrong_json_type_is_400(
    client: httpx.AsyncClient, factory: Factory, path: str, body: dict[str, Any], field: str
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    if path == "review":
        plugin = await publish(client, dev)
        response = await client.post(
            f"{ADMIN}/{plugin['id']}/review", json=body, headers=admin.headers
        )
        assert field in field_names(err(response, 400, "VALIDATION_FAILED"))
        detail = ok(await client.get(f"{ADMIN}/{plugin['id']}", headers=admin.headers))
        assert detail["reviewStatus"] == "pending"
    else:
        response = await client.post(
            f"{DEV}/publish", json=publish_body(**body), headers=dev.headers
        )
        assert field in field_names(err(response, 400, "VALIDATION_FAILED"))


async def test_invalid_json_names_the_body_not_an_offset(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    response = await client.post(
        f"{DEV}/publish", content=b'{"pluginKey": ', headers=JSON | dev.headers
    )
    assert field_names(err(response, 400, "VALIDATION_FAILED")) == {"body"}


# ---------- NUL and control characters in text ----------


async def test_register_email_with_nul_is_400(client: httpx.AsyncClient) -> None:
    body = {"email": "a\u0000b@example.com", "password": "12345678", "name": "N"}
    response = await client.post("/api/v1/auth/register", json=body)
    assert "email" in field_names(err(response, 400, "VALIDATION_FAILED"))


async def test_identity_contact_email_with_nul_is_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer(verified=False)
    body = {"realName": "R", "contactEmail": "a\u0000@example.com"}
    response = await client.post("/api/v1/developer/identity", json=body, headers=dev.headers)
    assert "contactEmail" in field_names(err(response, 400, "VALIDATION_FAILED"))


@pytest.mark.parametrize("changelog", ["a\u0000b", "a\u202eb", "x" * 20_001])
async def test_upload_changelog_follows_create_version_rules(
    client: httpx.AsyncClient, factory: Factory, changelog: str
) -> None:
    # create-version refuses these changelogs with 400 naming the field; the upload form
    # takes the same field and must not store what the JSON route refuses.
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    response = await upload(
        client,
        dev,
        plugin,
        tool_package(plugin["pluginKey"], "1.0.0"),
        extra={"changelog": changelog},
    )
    assert "changelog" in field_names(err(response, 400, "VALIDATION_FAILED"))


@needs_postgres
async def test_login_email_with_nul_is_401(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/v1/auth/login", json={"email": "a\u0000@example.com", "password": "12345678"}
    )
    err(response, 401, "UNAUTHORIZED")


@needs_postgres
async def test_manifest_with_nul_is_auto_rejected_not_500(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    manifest = config_manifest(plugin["pluginKey"], "1.0.0", note="a\u0000b")
    response = await client.post(
        f"{DEV}/{plugin['id']}/create-version",
        json={"version": "1.0.0", "manifest": manifest},
        headers=dev.headers,
    )
    # CONTRACT 4: invisible characters in manifest text → 201, rejected by auto-validation.
    assert ok(response, 201)["reviewStatus"] == "rejected"


NUL_READS = [
    ("developer", "GET", DEV + "/%00", 404),
    ("admin", "GET", ADMIN + "/%00", 404),
    ("admin", "GET", ADMIN + "?search=%00", 200),
    ("admin", "GET", ADMIN + "/versions/pending?search=%00", 200),
    ("admin", "GET", "/api/v1/admin/developers?search=%00", 200),
    ("admin", "GET", "/api/v1/admin/audit-logs?resourceId=%00", 200),
    ("admin", "GET", "/api/v1/admin/scenarios/%00", 404),
    ("admin", "GET", "/api/v1/admin/scenarios?search=%00", 200),
    ("developer", "GET", sc.DEV + "/%00", 404),
    ("admin", "PUT", ADMIN + "/categories/%00", 404),
    ("admin", "POST", "/api/v1/admin/developers/%00/identity/review", 404),
    ("super", "PUT", "/api/v1/admin/users/%00/role", 404),
]


@pytest.mark.parametrize(("who", "method", "url", "status"), NUL_READS)
async def test_nul_in_path_or_query_is_not_500(
    client: httpx.AsyncClient, factory: Factory, who: str, method: str, url: str, status: int
) -> None:
    account = {
        "developer": factory.developer,
        "admin": factory.admin,
        "super": factory.super_admin,
    }[who]
    headers = (await account()).headers
    bodies = {
        "PUT": {"name": "x"} if "categories" in url else {"role": "ADMIN"},
        "POST": {"approved": True},
    }
    response = await client.request(method, url, json=bodies.get(method), headers=headers)
    # Refused before routing (no database can hold or compare NUL): never a 500.
    del status
    err(response, 400, "VALIDATION_FAILED")
