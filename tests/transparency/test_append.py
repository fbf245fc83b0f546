"""A decision's append in one statement (migration 0015): PostgreSQL's function and SQLite's
trigger build the very tree that `append_many` and the RFC build, whichever way the entries
came in; nothing is written while the backfill is pending."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.kit.log_sql import node_id
from marketplace.transparency.log import (
    LogNotReady,
    append,
    append_many,
    entry_record,
    leaf_parts,
    locked_head,
)
from marketplace_rules.canonical import canonical_json
from marketplace_rules.merkle import CompactRange, leaf_hash
from tests.transparency.test_tree import mth

HOSTILE_VALUES = [
    'a"index":0',
    '"index":0,"kind":"x"}',
    '\\"index\\":0',
    "插件 🔌 \u2028 \x00 \x1f",
    "",
]


@pytest.mark.parametrize("value", HOSTILE_VALUES)
@pytest.mark.parametrize("index", [0, 7, 2**40 - 1])
def test_the_leaf_is_its_parts_around_the_index(value: str, index: int) -> None:
    fields = {"kind": value, "key": value, "version": "1.0.0", "at": value, "keyId": value}
    prefix, suffix = leaf_parts("approve", fields)
    expected = canonical_json(entry_record("approve", fields) | {"index": index})
    assert prefix + str(index).encode() + suffix == expected


def _fields(number: int) -> dict[str, Any]:
    return {
        "kind": "plugin",
        "key": f"append-{number}-插件",
        "version": f"1.0.{number}",
        "distribution": "tarball",
        "sha256": f"{number:064x}",
        "size": number,
        "keyId": "k1",
        "at": "2026-11-27T00:00:00Z",
    }


async def _tree_in_database(session: AsyncSession) -> tuple[list[bytes], dict[int, bytes], Any]:
    leaves = [
        bytes(row[0])
        for row in await session.execute(text("SELECT leaf FROM log_entries ORDER BY log_index"))
    ]
    nodes = {
        int(n): bytes(h)
        for n, h in await session.execute(text("SELECT node_id, hash FROM log_nodes"))
    }
    head = (await session.execute(text("SELECT size, compact FROM log_head"))).one()
    return leaves, nodes, head


async def test_single_and_batched_appends_build_one_tree(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    run = uuid.uuid4().hex[:12]
    async with sessionmaker() as session, session.begin():
        start = (await locked_head(session)).size
        indexes: list[int] = []
        # Singles, then a batch, then singles across several powers of two.
        for number in range(5):
            indexes.append(await append(session, "approve", f"{run}-{number}", _fields(number)))
        head = await locked_head(session)
        batch = [("approve", f"{run}-{n}", _fields(n)) for n in range(5, 12)]
        indexes += await append_many(session, batch, head)
        for number in range(12, 40):
            action = "takedown" if number % 5 == 0 else "approve"
            indexes.append(await append(session, action, f"{run}-{number}", _fields(number)))
        assert indexes == list(range(start, start + 40))

        leaves, nodes, (size, compact) = await _tree_in_database(session)
        assert size == len(leaves) == start + 40
        # Each new leaf is the canonical entry at its own index.
        for offset, index in enumerate(indexes):
            action = "takedown" if offset >= 12 and offset % 5 == 0 else "approve"
            expected = entry_record(action, _fields(offset)) | {"index": index}
            assert leaves[index] == canonical_json(expected)
        # The head, and every perfect subtree stored, are the RFC's.
        hashes = [leaf_hash(leaf) for leaf in leaves]
        rebuilt = CompactRange()
        expected_nodes: dict[int, bytes] = {}
        for hashed in hashes:
            expected_nodes |= {node_id(s): h for s, h in rebuilt.append(hashed)}
        assert nodes == expected_nodes
        assert bytes(compact) == rebuilt.to_bytes()
        assert CompactRange.from_bytes(size, bytes(compact)).root() == mth(leaves)
        await session.rollback()


async def test_nothing_is_appended_while_the_backfill_is_pending(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    async with sessionmaker() as session, session.begin():
        await session.execute(text("UPDATE log_head SET backfill_pending = true"))
        before = await _tree_in_database(session)
        with pytest.raises(LogNotReady):
            await append(session, "approve", uuid.uuid4().hex, _fields(1))
        assert await _tree_in_database(session) == before
        await session.rollback()
