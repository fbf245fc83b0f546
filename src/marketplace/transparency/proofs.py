"""Reading the log: the head, entries, and proofs from the stored perfect subtrees.

A proof needs the hashes of O(log n) ranges; each is the fold of at most log2(n) stored
perfect subtrees, and the ranges of one proof share most of theirs, so a proof at a million
entries reads about 40 node rows, in one `IN` query, whatever the tree size asked for.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import InternalError
from marketplace.kit.log_sql import node_id
from marketplace.models import LogEntry, LogHead, LogNode
from marketplace.transparency.log import HEAD_ID
from marketplace_rules.merkle import (
    CompactRange,
    Range,
    Subtree,
    consistency_ranges,
    inclusion_ranges,
    range_hashes,
    subtrees_of,
)


class LogCorrupt(InternalError):
    """A row a proof needs is missing: the tables were changed behind the service's back."""

    message = "The transparency log is damaged"


async def current_tree(session: AsyncSession) -> CompactRange:
    """The committed tree's size and compact range (no lock: a reader never waits)."""
    row = (
        await session.execute(select(LogHead.size, LogHead.compact).where(LogHead.id == HEAD_ID))
    ).one()
    return CompactRange.from_bytes(row.size, row.compact)


async def read_nodes(session: AsyncSession, subtrees: Iterable[Subtree]) -> dict[Subtree, bytes]:
    by_id = {node_id(subtree): subtree for subtree in subtrees}
    if not by_id:
        return {}
    rows = await session.execute(
        select(LogNode.node_id, LogNode.hash).where(LogNode.node_id.in_(list(by_id)))
    )
    found = {by_id[row.node_id]: row.hash for row in rows}
    if len(found) != len(by_id):
        raise LogCorrupt()
    return found


async def hashes_of(session: AsyncSession, ranges: list[Range], size: int) -> list[bytes]:
    """The hashes of `ranges` in the tree of `size` leaves. Its last leaf is read along (same
    query): a tree of that size exists exactly when it does, so a proof never needs the head
    read first, and LogCorrupt means "no such tree" (or a damaged one: the caller looks)."""
    needed = subtrees_of(ranges) | ({(0, size - 1)} if size else set())
    return range_hashes(ranges, await read_nodes(session, needed))


async def inclusion_proof(session: AsyncSession, index: int, size: int) -> list[bytes]:
    return await hashes_of(session, inclusion_ranges(index, size), size)


async def consistency_proof(session: AsyncSession, first: int, second: int) -> list[bytes]:
    return await hashes_of(session, consistency_ranges(first, second), second)


async def entries(session: AsyncSession, start: int, end: int) -> list[tuple[int, bytes]]:
    """Entries [start, end), oldest first, as their exact leaf bytes."""
    rows = await session.execute(
        select(LogEntry.log_index, LogEntry.leaf)
        .where(LogEntry.log_index >= start, LogEntry.log_index < end)
        .order_by(LogEntry.log_index)
    )
    return [(row.log_index, row.leaf) for row in rows]


async def subject_of(session: AsyncSession, index: int) -> str | None:
    """The version or key id an entry is about (not part of its bytes)."""
    subject: str | None = await session.scalar(
        select(LogEntry.subject).where(LogEntry.log_index == index)
    )
    return subject
