"""The SQL functions SQLite's transparency-log trigger calls (migration 0015).

SQLite has no SHA-256, so these are registered on every connection (`db`): the trigger that
extends the tree when a decision inserts its entry calls them with the head's size and compact
range and the new leaf. They are pure (the same arguments give the same result), and the
arithmetic is `marketplace_rules.merkle`'s own, so the tree cannot differ between the two
ways of appending.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from marketplace_rules.merkle import CompactRange, Subtree, leaf_hash

NODE_LEVEL_SHIFT = 40  # a node's id is (level << 40) | index: room for 2**40 leaves a level


def node_id(subtree: Subtree) -> int:
    """The one integer a stored node is kept under."""
    level, index = subtree
    return level << NODE_LEVEL_SHIFT | index


def log_completed_nodes(size: int, compact: bytes, leaf: bytes) -> str:
    """JSON `[[node_id, hex hash], ...]`: the perfect subtrees the leaf completes."""
    completed = CompactRange.from_bytes(size, compact).append(leaf_hash(leaf))
    return json.dumps([[node_id(subtree), hash_.hex()] for subtree, hash_ in completed])


def log_compact_after(size: int, compact: bytes, leaf: bytes) -> bytes:
    """The compact range once the leaf is appended."""
    tree = CompactRange.from_bytes(size, compact)
    tree.append(leaf_hash(leaf))
    return tree.to_bytes()


def log_unhex(text: str) -> bytes:
    return bytes.fromhex(text)


SQLITE_FUNCTIONS: dict[str, tuple[int, Callable[..., Any]]] = {
    "marketplace_log_nodes": (3, log_completed_nodes),
    "marketplace_log_compact": (3, log_compact_after),
    "marketplace_unhex": (1, log_unhex),
}


def register_sqlite_functions(dbapi_connection: Any) -> None:
    for name, (arity, function) in SQLITE_FUNCTIONS.items():
        dbapi_connection.create_function(name, arity, function, deterministic=True)
