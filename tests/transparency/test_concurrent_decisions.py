"""Decisions committing at once get consecutive log indexes, no gap and no duplicate, and the
tree they build is the one an independent implementation computes. The race is real on
PostgreSQL (the approvals run on separate pooled connections and meet at the head's row
lock); on SQLite `BEGIN IMMEDIATE` serialises them before they reach the log, so there the
test shows the same outcome through the writer lock."""

from __future__ import annotations

import asyncio
import json

import httpx
from pymerkle import InmemoryTree

from marketplace_rules.canonical import b64decode
from tests.factories import Factory
from tests.helpers import ok
from tests.plugins.helpers import create_version, publish, review_plugin, review_version
from tests.takedown.helpers import admin_takedown, released_plugin
from tests.transparency.helpers import all_entries, checkpoint

CONCURRENT = 8


async def test_concurrent_approvals_and_takedowns_get_consecutive_indexes(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    pending = []
    for _ in range(CONCURRENT):
        plugin = await publish(client, dev)
        ok(await review_plugin(client, admin, plugin["id"], approved=True))
        pending.append((await create_version(client, dev, plugin, "1.0.0"))["id"])
    live = await released_plugin(client, factory, ("1.0.0", "1.1.0", "1.2.0"))
    before = (await checkpoint(client))["treeSize"]

    responses = await asyncio.gather(
        *(review_version(client, admin, version, approved=True) for version in pending),
        *(admin_takedown(client, live.admin, live.ids[v], "bad") for v in ("1.0.0", "1.1.0")),
    )

    assert [r.status_code for r in responses] == [200] * (CONCURRENT + 2)
    head = await checkpoint(client)
    leaves = await all_entries(client, head["treeSize"])  # asserts every index is there
    new = [json.loads(leaf) for leaf in leaves[before:]]
    assert [e["index"] for e in new] == list(range(before, head["treeSize"]))
    assert (
        sorted(e["action"] for e in new if e["action"] in ("approve", "takedown"))
        == ["approve"] * CONCURRENT + ["takedown"] * 2
    )
    tree = InmemoryTree(algorithm="sha256")
    for leaf in leaves:
        tree.append_entry(leaf)
    assert tree.get_root() == b64decode(head["rootHash"])
