"""The log in the C2SP tlog-tiles layout: the signed note, hash tiles and entry bundles agree
with the JSON API and with hashes computed here from the entries."""

from __future__ import annotations

import hashlib

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.transparency.log import append_many, locked_head
from marketplace.transparency.tiles import TileMissing, parse_index, parse_tile
from marketplace.trust.keyring import verify
from marketplace_rules.canonical import b64decode
from marketplace_rules.merkle import leaf_hash, root_of
from tests.helpers import err, ok
from tests.transparency.helpers import all_entries, checkpoint

C2SP = "/api/v1/log/c2sp"


async def grow_log_past(sessions: async_sessionmaker[AsyncSession], size: int) -> None:
    """Real appends (the service's own code) until the log holds at least `size` entries."""
    async with sessions.begin() as session:
        head = await locked_head(session)
        missing = max(0, size - head.size)
        fields = {
            "kind": "plugin",
            "key": "tiles-filler",
            "version": "1.0.0",
            "at": "2026-01-01T00:00:00Z",
        }
        await append_many(
            session,
            [("approve", f"tiles-{head.size + i}", fields) for i in range(missing)],
            head,
        )


def tile_path(index: int) -> str:
    digits = f"{index:03d}"
    digits = "0" * (-len(digits) % 3) + digits
    groups = [digits[i : i + 3] for i in range(0, len(digits), 3)]
    return "/".join([*(f"x{g}" for g in groups[:-1]), groups[-1]])


async def test_tiles_hold_the_leaf_and_node_hashes_of_the_entries(
    client: httpx.AsyncClient, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    await grow_log_past(sessionmaker, 700)
    size = (await checkpoint(client))["treeSize"]
    leaves = [leaf_hash(entry) for entry in await all_entries(client, size)]

    full = await client.get(f"{C2SP}/tile/0/000")
    assert full.status_code == 200
    assert full.headers["content-type"] == "application/octet-stream"
    assert "immutable" in full.headers["cache-control"]
    assert full.content == b"".join(leaves[:256])

    last, width = divmod(size, 256)
    if width:
        partial = await client.get(f"{C2SP}/tile/0/{tile_path(last)}.p/{width}")
        assert partial.content == b"".join(leaves[last * 256 :])
        assert (await client.get(f"{C2SP}/tile/0/{tile_path(last)}")).status_code == 404
        wider = f"{C2SP}/tile/0/{tile_path(last)}.p/{width + 1}"
        err(await client.get(wider), 404, "NOT_FOUND")
    err(await client.get(f"{C2SP}/tile/0/000.p/5"), 404, "NOT_FOUND")  # tile 0 is full

    # Level 1: the roots of whole 256-leaf subtrees.
    count = size >> 8
    level_one = await client.get(f"{C2SP}/tile/1/000.p/{count}")
    expected = [root_of(leaves[i * 256 : (i + 1) * 256]) for i in range(count)]
    assert level_one.content == b"".join(expected)


async def test_entry_bundles_are_the_entries_with_uint16_lengths(
    client: httpx.AsyncClient, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    await grow_log_past(sessionmaker, 300)
    entries = await all_entries(client, 256)
    bundle = (await client.get(f"{C2SP}/tile/entries/000")).content
    parsed, at = [], 0
    while at < len(bundle):
        length = int.from_bytes(bundle[at : at + 2], "big")
        parsed.append(bundle[at + 2 : at + 2 + length])
        at += 2 + length
    assert parsed == entries


async def test_the_signed_note_is_the_checkpoint_with_a_c2sp_signature_line(
    client: httpx.AsyncClient,
) -> None:
    head = await checkpoint(client)
    response = await client.get(f"{C2SP}/checkpoint")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-cache"
    body, signature_line = response.content.decode().split("\n\n")
    assert body + "\n" == f"{head['origin']}\n{head['treeSize']}\n{head['rootHash']}\n"
    dash, name, stamp = signature_line.rstrip("\n").split(" ")
    assert (dash, name) == ("\u2014", head["origin"])
    keys = ok(await client.get("/api/v1/keys"))["items"]
    [key] = [k for k in keys if k["keyId"] == head["keyId"]]
    public = b64decode(key["publicKey"])
    raw = b64decode(stamp)
    key_hash = hashlib.sha256(name.encode() + b"\n\x01" + public).digest()[:4]
    assert raw[:4] == key_hash
    assert verify(public, (body + "\n").encode(), raw[4:])


@pytest.mark.parametrize(
    "path",
    [
        "0",
        "0/1",
        "0/x001",
        "0/x01/001",
        "0/0001",
        "6/000",
        "a/000",
        "0/000.p/0",
        "0/000.p/256",
        "0/000.p/x",
        "entries/abc",
        "entries",
        "0/000/extra.p",
        "0/x000/001",
    ],
)
async def test_malformed_or_absent_tiles_are_404(client: httpx.AsyncClient, path: str) -> None:
    err(await client.get(f"{C2SP}/tile/{path}"), 404, "NOT_FOUND")
    with pytest.raises(TileMissing):
        parse_tile(path)


def test_tile_indexes_use_three_digit_elements() -> None:
    assert parse_index(["x001", "x234", "067"]) == 1234067
    assert tile_path(1234067) == "x001/x234/067"
    assert parse_tile("3/x001/234.p/7") == (3, 1234, 7)
    assert parse_tile("entries/005") == (None, 5, 256)
