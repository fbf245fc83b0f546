"""The transparency log through its API (CONTRACT 15): what decisions append, the signed
checkpoint, entries and proofs, and every bad query refused in the envelope."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pymerkle import InmemoryTree

from marketplace.trust.keyring import Keyring, rotate_file
from marketplace_rules.canonical import b64decode, canonical_json
from marketplace_rules.merkle import leaf_hash, verify_consistency, verify_inclusion
from tests.factories import Factory
from tests.helpers import err, ok
from tests.plugins.helpers import create_version, publish, review_plugin
from tests.scenarios import helpers as scenarios
from tests.takedown.helpers import admin_takedown, released_plugin
from tests.transparency.helpers import LOG, all_entries, checkpoint, entry, entry_bytes
from tests.trust.releases import open_release

USER_DOWNLOAD = "/api/v1/plugins/download"
ENTRY_FIELDS = {
    "index",
    "action",
    "kind",
    "key",
    "version",
    "distribution",
    "sha256",
    "size",
    "keyId",
    "at",
}


async def download_release(
    client: httpx.AsyncClient, factory: Factory, plugin_id: str, version: str
) -> dict[str, Any]:
    user = await factory.user()
    info = ok(await client.get(f"{USER_DOWNLOAD}/{plugin_id}/{version}", headers=user.headers))
    release: dict[str, Any] = info["release"]
    return release


async def proves_inclusion(client: httpx.AsyncClient, index: int) -> bool:
    head = await checkpoint(client)
    proof = ok(
        await client.get(
            f"{LOG}/proof/inclusion", params={"index": index, "treeSize": head["treeSize"]}
        )
    )
    assert (proof["index"], proof["treeSize"]) == (index, head["treeSize"])
    leaf = leaf_hash(await entry_bytes(client, index))
    hashes = [b64decode(h) for h in proof["hashes"]]
    return verify_inclusion(leaf, index, head["treeSize"], hashes, b64decode(head["rootHash"]))


async def test_an_approval_appends_its_release_record_and_the_next_checkpoint_covers_it(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    before = await checkpoint(client)
    r = await released_plugin(client, factory, ("1.0.0",))
    release = await download_release(client, factory, r.plugin["id"], "1.0.0")
    record = open_release(app, release)

    logged = await entry(client, release["logIndex"])
    assert set(logged) == ENTRY_FIELDS
    assert logged == {
        "index": release["logIndex"],
        "action": "approve",
        "kind": "plugin",
        "key": r.key,
        "version": "1.0.0",
        "distribution": record["distribution"],
        "sha256": record["sha256"],
        "size": record["size"],
        "keyId": release["keyId"],
        "at": record["approvedAt"],
    }
    # The exact bytes are the canonical JSON of those fields.
    assert await entry_bytes(client, release["logIndex"]) == canonical_json(logged)
    after = await checkpoint(client)
    assert before["treeSize"] <= release["logIndex"] < after["treeSize"]
    assert await proves_inclusion(client, release["logIndex"])


async def test_the_signing_key_is_added_to_the_log_before_it_signs_there(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    keyring: Keyring = app.state.keyring
    r = await released_plugin(client, factory, ("1.0.0",))
    release = await download_release(client, factory, r.plugin["id"], "1.0.0")
    key = keyring.signing_key()
    size = (await checkpoint(client))["treeSize"]
    about_key = [
        fields
        for fields in (json.loads(leaf) for leaf in await all_entries(client, size))
        if fields["keyId"] == key.key_id and fields["action"].startswith("key-")
    ]
    [added] = about_key
    assert added["action"] == "key-add"
    assert added["at"] == key.created_at.isoformat().replace("+00:00", "Z")
    assert (added["kind"], added["key"], added["sha256"]) == (None, None, None)
    assert added["index"] < release["logIndex"]


async def test_a_rotation_logs_the_new_key_and_the_retirement_before_the_new_key_signs(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    keyring: Keyring = app.state.keyring
    r = await released_plugin(client, factory, ("1.0.0",))
    old = keyring.signing_key().key_id
    assert keyring.path is not None
    fresh, _ = rotate_file(keyring.path)
    admin = r.admin
    await create_version(client, admin, r.plugin, "1.1.0", admin=True)
    release = await download_release(client, factory, r.plugin["id"], "1.1.0")
    assert release["keyId"] == fresh.key_id

    size = (await checkpoint(client))["treeSize"]
    logged = [json.loads(leaf) for leaf in await all_entries(client, size)]
    events = {(e["action"], e["keyId"]): e["index"] for e in logged if e["action"] != "approve"}
    assert events[("key-add", fresh.key_id)] < release["logIndex"]
    assert events[("key-retire", old)] < release["logIndex"]
    assert events[("key-add", old)] < events[("key-retire", old)]
    # Once each: a later approval appends no second key entry.
    await create_version(client, admin, r.plugin, "1.2.0", admin=True)
    size = (await checkpoint(client))["treeSize"]
    keyed = [
        (e["action"], e["keyId"])
        for e in (json.loads(leaf) for leaf in await all_entries(client, size))
        if e["action"].startswith("key-")
    ]
    assert len(keyed) == len(set(keyed))


async def test_a_takedown_appends_what_was_withdrawn_and_the_revocation_names_it(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    release = await download_release(client, factory, r.plugin["id"], "1.1.0")
    ok(await admin_takedown(client, r.admin, r.ids["1.1.0"], "mines coins"))
    approval = await entry(client, release["logIndex"])
    size = (await checkpoint(client))["treeSize"]
    [takedown] = [
        e
        for e in (json.loads(leaf) for leaf in await all_entries(client, size))
        if e["action"] == "takedown" and e["key"] == r.key
    ]
    assert takedown["index"] > approval["index"]
    for name in ("kind", "key", "version", "distribution", "sha256", "size"):
        assert takedown[name] == approval[name], name
    assert takedown["keyId"] is None
    assert await proves_inclusion(client, takedown["index"])


async def test_a_scenario_approval_is_logged_with_its_release(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    owner, admin = await factory.developer(), await factory.admin()
    scenario = await scenarios.released(client, owner, admin)
    info = ok(
        await client.get(
            f"/api/v1/marketplace/scenarios/{scenario['id']}/download", headers=owner.headers
        )
    )
    record = open_release(app, info["release"])
    logged = await entry(client, info["release"]["logIndex"])
    assert (logged["action"], logged["kind"], logged["key"]) == (
        "approve",
        "scenario",
        record["key"],
    )
    assert (logged["sha256"], logged["at"]) == (record["sha256"], record["approvedAt"])


async def test_a_version_approved_before_the_log_is_logged_once_on_first_download(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """A factory-made version went round the approval path: its first downloads (two at
    once) sign and log it, once."""
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0", distribution="config_only")
    first, second = await asyncio.gather(
        download_release(client, factory, plugin.id, "1.0.0"),
        download_release(client, factory, plugin.id, "1.0.0"),
    )
    assert first == second
    assert (await entry(client, first["logIndex"]))["key"] == plugin.plugin_key
    size = (await checkpoint(client))["treeSize"]
    mine = [
        leaf
        for leaf in await all_entries(client, size)
        if json.loads(leaf)["key"] == plugin.plugin_key
    ]
    assert len(mine) == 1


async def test_the_service_root_equals_an_independent_implementation(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await released_plugin(client, factory, ("1.0.0", "1.1.0", "2.0.0"))
    head = await checkpoint(client)
    tree = InmemoryTree(algorithm="sha256")
    for leaf in await all_entries(client, head["treeSize"]):
        tree.append_entry(leaf)
    assert tree.get_root() == b64decode(head["rootHash"])


async def test_consistency_proofs_join_an_earlier_checkpoint_to_the_current_one(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await released_plugin(client, factory, ("1.0.0",))
    old = await checkpoint(client)
    await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    new = await checkpoint(client)
    assert new["treeSize"] > old["treeSize"]
    proof = ok(
        await client.get(
            f"{LOG}/proof/consistency",
            params={"first": old["treeSize"], "second": new["treeSize"]},
        )
    )
    assert (proof["first"], proof["second"]) == (old["treeSize"], new["treeSize"])
    hashes = [b64decode(h) for h in proof["hashes"]]
    old_root, new_root = b64decode(old["rootHash"]), b64decode(new["rootHash"])
    assert verify_consistency(old["treeSize"], new["treeSize"], old_root, new_root, hashes)
    assert not verify_consistency(old["treeSize"], new["treeSize"], new_root, new_root, hashes)


async def test_the_checkpoint_names_the_public_url_and_is_revalidated(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get(f"{LOG}/checkpoint")
    assert ok(response)["origin"] == "test/log"  # public_url http://test, without its scheme
    assert response.headers["cache-control"] == "no-cache"


async def test_entries_and_proofs_never_change_so_caches_keep_them(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await released_plugin(client, factory, ("1.0.0",))
    size = (await checkpoint(client))["treeSize"]
    for path, params in (
        ("entries", {"start": 0, "end": size}),
        ("proof/inclusion", {"index": 0, "treeSize": size}),
        ("proof/consistency", {"first": 1, "second": size}),
    ):
        response = await client.get(f"{LOG}/{path}", params=params)
        ok(response)
        assert "immutable" in response.headers["cache-control"], path


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("entries", {"start": 1, "end": 0}, "end"),
        ("entries", {"start": 0, "end": 1001}, "end"),
        ("entries", {"start": -1, "end": 1}, "start"),
        ("entries", {"start": "one", "end": 1}, "start"),
        ("entries", {"start": 0}, "end"),
        ("entries", {"start": 0, "end": 2**41}, "end"),
        ("proof/inclusion", {"index": 0, "treeSize": 0}, "treeSize"),
        ("proof/inclusion", {"index": -1, "treeSize": 1}, "index"),
        ("proof/inclusion", {"index": 5}, "treeSize"),
        ("proof/consistency", {"first": 2, "second": 1}, "first"),
        ("proof/consistency", {"first": 0, "second": "x"}, "second"),
    ],
)
async def test_bad_queries_are_400_naming_the_field(
    client: httpx.AsyncClient, path: str, params: dict[str, Any], field: str
) -> None:
    body = err(await client.get(f"{LOG}/{path}", params=params), 400, "VALIDATION_FAILED")
    assert field in json.dumps(body["details"])


async def test_ranges_past_the_tree_size_are_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await released_plugin(client, factory, ("1.0.0",))
    size = (await checkpoint(client))["treeSize"]
    for path, params in (
        ("entries", {"start": size - 1, "end": size + 1}),
        ("proof/inclusion", {"index": size, "treeSize": size}),
        ("proof/inclusion", {"index": 0, "treeSize": size + 1}),
        ("proof/consistency", {"first": 1, "second": size + 1}),
    ):
        body = err(await client.get(f"{LOG}/{path}", params=params), 400, "VALIDATION_FAILED")
        assert body["message"], path
    # The last entry itself is served.
    assert (
        ok(await client.get(f"{LOG}/entries", params={"start": size - 1, "end": size}))["items"][0][
            "index"
        ]
        == size - 1
    )


async def test_a_rejection_appends_nothing(client: httpx.AsyncClient, factory: Factory) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    before = (await checkpoint(client))["treeSize"]
    ok(await review_plugin(client, admin, plugin["id"], approved=False, reviewNote="not yet"))
    assert (await checkpoint(client))["treeSize"] == before
