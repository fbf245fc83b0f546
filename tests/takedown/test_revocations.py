"""`GET /api/v1/plugins/revocations`: signed, complete, ordered, cacheable, never stale."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import httpx
from fastapi import FastAPI

from marketplace.catalog.revocations import revocation_cache
from marketplace.publishing.revocations import RevocationCache
from marketplace_rules.canonical import b64decode, canonical_json
from tests.factories import Factory
from tests.helpers import err, ok
from tests.scenarios.helpers import released, version_id
from tests.takedown.helpers import (
    ADMIN_PLUGINS,
    ADMIN_SCENARIOS,
    REVOCATIONS,
    admin_takedown,
    developer_takedown,
    released_plugin,
    verified_list,
)


async def test_empty_list_is_signed_and_public(client: httpx.AsyncClient) -> None:
    document = await verified_list(client)
    assert document["items"] == []
    assert set(document) == {"issuedAt", "items"}
    issued = datetime.fromisoformat(document["issuedAt"].replace("Z", "+00:00"))
    assert issued.minute == issued.second == 0  # the start of the hour
    assert abs((datetime.now(UTC) - issued).total_seconds()) <= 3600


async def test_takedown_of_current_version_shows_in_the_signed_list(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    ok(await admin_takedown(client, r.admin, r.ids["1.1.0"], "steals tokens"))
    [item] = (await verified_list(client))["items"]
    manifest = ok(
        await client.get(f"{ADMIN_PLUGINS}/versions/{r.ids['1.1.0']}", headers=r.admin.headers)
    )["manifest"]
    assert item == {
        "kind": "plugin",
        "key": r.key,
        "version": "1.1.0",
        # A config_only version: the digest of its served manifest's canonical JSON.
        "sha256": hashlib.sha256(canonical_json(manifest)).hexdigest(),
        "reason": "steals tokens",
        "revokedAt": item["revokedAt"],
        "logIndex": item["logIndex"],
    }
    assert item["revokedAt"].endswith("Z")
    # The takedown's entry in the transparency log (CONTRACT 15) names the same withdrawal.
    index = item["logIndex"]
    [logged] = ok(await client.get(f"/api/v1/log/entries?start={index}&end={index + 1}"))["items"]
    entry = json.loads(b64decode(logged["entry"]))
    assert (entry["index"], entry["action"], entry["at"]) == (index, "takedown", item["revokedAt"])
    assert (entry["key"], entry["version"], entry["sha256"]) == (r.key, "1.1.0", item["sha256"])


async def test_list_holds_plugins_and_scenarios_oldest_first_with_package_digests(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    tarball = await factory.plugin(owner)
    row = await factory.version(tarball, "3.0.0")
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    admin = r.admin
    scenario = await released(client, owner, admin)
    ok(await developer_takedown(client, r.dev, r.key, r.ids["1.0.0"], "one"))
    sid = await version_id(client, admin, scenario["id"], "1.0.0")
    url = f"{ADMIN_SCENARIOS}/versions/{sid}/takedown"
    ok(await client.post(url, json={"reason": "two"}, headers=admin.headers))
    ok(await admin_takedown(client, admin, row.id, "three"))
    items = (await verified_list(client))["items"]
    assert [(i["kind"], i["key"], i["version"], i["reason"]) for i in items] == [
        ("plugin", r.key, "1.0.0", "one"),
        ("scenario", scenario["id"], "1.0.0", "two"),
        ("plugin", tarball.plugin_key, "3.0.0", "three"),
    ]
    assert items[2]["sha256"] == row.sha256  # a tarball: its package's digest
    scenario_detail = ok(
        await client.get(f"{ADMIN_SCENARIOS}/versions/{sid}", headers=admin.headers)
    )
    assert items[1]["sha256"] == scenario_detail["sha256"]
    times = [i["revokedAt"] for i in items]
    assert times == sorted(times)


async def test_a_revocation_outlives_the_deleted_plugin(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0",))
    ok(await admin_takedown(client, r.admin, r.ids["1.0.0"]))
    ok(await client.delete(f"{ADMIN_PLUGINS}/{r.plugin['id']}", headers=r.admin.headers))
    [item] = (await verified_list(client))["items"]
    assert (item["key"], item["version"]) == (r.key, "1.0.0")


async def test_etag_gives_304_until_a_new_takedown(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    first = await client.get(REVOCATIONS)
    assert first.status_code == 200
    assert first.headers["cache-control"] == "public, max-age=60"
    etag = first.headers["etag"]
    again = await client.get(REVOCATIONS, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    ok(await admin_takedown(client, r.admin, r.ids["1.1.0"]))
    changed = await client.get(REVOCATIONS, headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["etag"] != etag
    assert [i["version"] for i in (await verified_list(client))["items"]] == ["1.1.0"]


async def test_a_valid_token_changes_nothing_an_invalid_one_is_401(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    anonymous = await client.get(REVOCATIONS)
    logged_in = await client.get(REVOCATIONS, headers=user.headers)
    assert logged_in.status_code == 200
    assert logged_in.content == anonymous.content
    assert logged_in.headers["etag"] == anonymous.headers["etag"]
    err(
        await client.get(REVOCATIONS, headers={"Authorization": "Bearer nope"}), 401, "UNAUTHORIZED"
    )


async def test_revocations_is_its_own_route_not_a_plugin_reference(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    # Under the catalogue's prefix, with plugin references in other paths: answered by the
    # list, not by a plugin lookup (which would be 404 PLUGIN_NOT_FOUND).
    signed = ok(await client.get(REVOCATIONS))
    assert set(signed) == {"keyId", "payload", "signature"}
    err(await client.get("/api/v1/plugins/detail/revocations"), 404, "PLUGIN_NOT_FOUND")
    assert "/api/v1/plugins/revocations" in app.openapi()["paths"]
    response = await client.post(REVOCATIONS)
    assert response.status_code == 405


async def test_another_process_sees_a_takedown_made_elsewhere(
    client: httpx.AsyncClient, factory: Factory, own_app: FastAPI
) -> None:
    """Two API processes: each keeps its own copy, checked against the database."""
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    transport = httpx.ASGITransport(app=own_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as other:
        before = await other.get(REVOCATIONS)
        assert revocation_cache(own_app).last is not None
        ok(await admin_takedown(client, r.admin, r.ids["1.1.0"]))  # through the first app
        after = await other.get(REVOCATIONS)
    assert after.headers["etag"] != before.headers["etag"]
    mine = await client.get(REVOCATIONS)
    # Same rows, same key, same hour: the same bytes whichever process signs them.
    assert mine.content == after.content and mine.headers["etag"] == after.headers["etag"]


async def test_the_list_is_reissued_each_hour_and_stays_stable_within_it(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    clock = {"now": datetime(2026, 11, 24, 9, 10, tzinfo=UTC)}
    app.state.revocation_cache = RevocationCache(now=lambda: clock["now"])
    first = await verified_list(client)
    clock["now"] = datetime(2026, 11, 24, 9, 59, 59, tzinfo=UTC)
    assert await verified_list(client) == first
    assert first["issuedAt"] == "2026-11-24T09:00:00Z"
    clock["now"] = datetime(2026, 11, 24, 10, 0, 1, tzinfo=UTC)
    assert (await verified_list(client))["issuedAt"] == "2026-11-24T10:00:00Z"


async def test_signing_key_rotation_re_signs_the_list(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    from marketplace.trust.keyring import rotate_file

    before = ok(await client.get(REVOCATIONS))
    assert app.state.keyring.path is not None
    fresh, _ = rotate_file(app.state.keyring.path)
    after = ok(await client.get(REVOCATIONS))
    assert before["keyId"] != fresh.key_id
    assert after["keyId"] == fresh.key_id
    await verified_list(client)
