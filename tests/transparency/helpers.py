"""Reading the service's transparency log back through its API (CONTRACT 15)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from marketplace.trust.keyring import verify
from marketplace_rules.canonical import b64decode
from tests.helpers import ok

LOG = "/api/v1/log"


async def checkpoint(client: httpx.AsyncClient) -> dict[str, Any]:
    """The checkpoint, after checking its signature with the key the service lists."""
    data: dict[str, Any] = ok(await client.get(f"{LOG}/checkpoint"))
    keys = ok(await client.get("/api/v1/keys"))["items"]
    [key] = [k for k in keys if k["keyId"] == data["keyId"]]
    body = f"{data['origin']}\n{data['treeSize']}\n{data['rootHash']}\n".encode()
    assert verify(b64decode(key["publicKey"]), body, b64decode(data["signature"]))
    return data


async def entry_bytes(client: httpx.AsyncClient, index: int) -> bytes:
    [item] = ok(await client.get(f"{LOG}/entries", params={"start": index, "end": index + 1}))[
        "items"
    ]
    assert item["index"] == index
    return b64decode(item["entry"])


async def entry(client: httpx.AsyncClient, index: int) -> dict[str, Any]:
    fields: dict[str, Any] = json.loads(await entry_bytes(client, index))
    return fields


async def all_entries(client: httpx.AsyncClient, size: int) -> list[bytes]:
    leaves: list[bytes] = []
    for start in range(0, size, 1000):
        end = min(size, start + 1000)
        items = ok(await client.get(f"{LOG}/entries", params={"start": start, "end": end}))["items"]
        assert [item["index"] for item in items] == list(range(start, end))
        leaves += [b64decode(item["entry"]) for item in items]
    return leaves


async def entries_about(client: httpx.AsyncClient, subject_field: str, value: str) -> list[dict]:
    """Every entry whose `subject_field` (e.g. keyId) is `value`, oldest first."""
    size = (await checkpoint(client))["treeSize"]
    return [
        fields
        for fields in (json.loads(leaf) for leaf in await all_entries(client, size))
        if fields[subject_field] == value
    ]
