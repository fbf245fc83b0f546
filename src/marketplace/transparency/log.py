"""Appending to the transparency log, in the transaction of the decision it records.

A decision appends with one statement: the database locks the head, writes the entry, the
perfect subtrees the new leaf completes (one on average) and the new head (migration 0015:
PostgreSQL's `marketplace_log_append`, SQLite's trigger on `log_entries`). Python sends the
leaf as the bytes around its index, the one field the database fills in. Two decisions
committing at once therefore get consecutive indexes (PostgreSQL's row lock; SQLite's writer
lock), and neither sees the other's half-written tree.

`append_many` (the backfill, key changes) computes the hashes here under `locked_head`, in a
constant number of statements whatever the batch.

Lock order: a decision locks its item row first and the head last, and nothing holds the head
while it waits for another lock, so appending cannot deadlock with the review paths.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Table, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.errors import ServiceUnavailable
from marketplace.kit.log_sql import node_id
from marketplace.models import LogEntry, LogHead, LogNode
from marketplace.trust.keyring import SigningKey
from marketplace_rules.canonical import canonical_json
from marketplace_rules.log_entries import ENTRY_FIELDS
from marketplace_rules.merkle import CompactRange, leaf_hash

HEAD_ID = 1
ENTRIES: Table = LogEntry.__table__  # type: ignore[assignment]
NODES: Table = LogNode.__table__  # type: ignore[assignment]
HEAD: Table = LogHead.__table__  # type: ignore[assignment]
# This process's memory, per database, of the key events it has read committed in the log:
# entries are never removed, so a key once logged stays logged, and a decision signed by a
# known key skips the query (`append_key_changes`).
_LOGGED_KEY_EVENTS: dict[str, frozenset[tuple[str, str]]] = {}
APPENDED_KEYS = "log_appended_key_entries"


class LogNotReady(ServiceUnavailable):
    """The log still waits for its backfill, which the service runs when it starts: a
    decision cannot be recorded before the history it follows."""

    message = "The transparency log is being prepared; retry shortly"


def iso(moment: datetime) -> str:
    """UTC with a `Z`, as every timestamp of the API (and of the revocation list)."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Head:
    """The locked head; `compact` grows as `append_many` appends under it. `append` (one
    statement) moves the head in the database only: read the head again after it."""

    compact: CompactRange
    backfill_pending: bool

    @property
    def size(self) -> int:
        return self.compact.size


async def locked_head(session: AsyncSession) -> Head:
    """The head row, locked until the transaction ends."""
    row = (
        await session.execute(
            select(LogHead.size, LogHead.compact, LogHead.backfill_pending)
            .where(LogHead.id == HEAD_ID)
            .with_for_update()
        )
    ).one()
    return Head(CompactRange.from_bytes(row.size, row.compact), row.backfill_pending)


def entry_record(action: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's fields; those that do not apply are null."""
    unknown = set(fields) - set(ENTRY_FIELDS)
    if unknown:
        raise ValueError(f"not fields of a log entry: {sorted(unknown)}")
    return {name: fields.get(name) for name in ENTRY_FIELDS} | {"action": action}


async def existing_index(session: AsyncSession, action: str, subject: str) -> int | None:
    index: int | None = await session.scalar(
        select(LogEntry.log_index).where(LogEntry.action == action, LogEntry.subject == subject)
    )
    return index


INDEX_MARKER = b'"index":0'


def leaf_parts(action: str, fields: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """The leaf's bytes before and after its index's digits: the canonical JSON sorts `index`
    among the fields, and a string value cannot hold the marker (its quotes are escaped)."""
    leaf = canonical_json(entry_record(action, fields) | {"index": 0})
    cut = leaf.index(INDEX_MARKER) + len(INDEX_MARKER) - 1
    return leaf[:cut], leaf[cut + 1 :]


_SQLITE_APPEND = text(
    "INSERT INTO log_entries (log_index, action, subject, leaf) "
    "SELECT size, :action, :subject, CAST(:prefix || size || :suffix AS BLOB) FROM log_head "
    "WHERE id = 1 AND NOT backfill_pending RETURNING log_index"
)
_POSTGRES_APPEND = text("SELECT marketplace_log_append(:action, :subject, :prefix, :suffix)")


async def append(
    session: AsyncSession, action: str, subject: str, fields: Mapping[str, Any]
) -> int:
    """Append one entry in one statement and return its index; LogNotReady while the
    backfill is pending."""
    prefix, suffix = leaf_parts(action, fields)
    if session.get_bind().dialect.name == "postgresql":
        params: dict[str, Any] = {"prefix": prefix, "suffix": suffix}
        statement = _POSTGRES_APPEND
    else:
        # SQLite concatenates text: the UTF-8 leaf goes in as text and comes out as its bytes.
        params = {"prefix": prefix.decode(), "suffix": suffix.decode()}
        statement = _SQLITE_APPEND
    index: int | None = await session.scalar(
        statement, params | {"action": action, "subject": subject}
    )
    if index is None:
        raise LogNotReady()
    return index


async def append_many(
    session: AsyncSession,
    entries: Iterable[tuple[str, str, Mapping[str, Any]]],
    head: Head,
    *,
    backfilled: bool = False,
) -> list[int]:
    """Append entries in order under a locked `head`: the new head, the entries and the
    perfect subtrees they complete, three statements whatever the batch (the backfill, key
    changes; a decision uses `append`). The head moves first, so on SQLite the entries'
    rows are not the head's next index and its trigger leaves the tree to us."""
    compact = head.compact
    rows: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []
    for action, subject, fields in entries:
        index = compact.size
        leaf = canonical_json(entry_record(action, fields) | {"index": index})
        rows.append({"log_index": index, "action": action, "subject": subject, "leaf": leaf})
        nodes.extend(
            {"node_id": node_id(subtree), "hash": hash_}
            for subtree, hash_ in compact.append(leaf_hash(leaf))
        )
    values: dict[str, Any] = {"size": compact.size, "compact": compact.to_bytes()}
    if backfilled:
        values["backfill_pending"] = False
    new_head = update(HEAD).where(HEAD.c.id == HEAD_ID).values(**values)
    await session.execute(new_head)
    if rows:
        await session.execute(insert(ENTRIES), rows)
        await session.execute(insert(NODES), nodes)
    return [row["log_index"] for row in rows]


def key_entries(
    keys: Iterable[SigningKey], logged: set[tuple[str, str]]
) -> list[tuple[str, str, dict[str, Any]]]:
    """The key-add and key-retire entries the log lacks: additions by creation time, then
    retirements by retirement time (a rotation adds its new key before it retires the old).
    The sorts are stable: the keyring lists keys oldest first, which breaks ties of a second."""
    added = [
        ("key-add", key.key_id, {"keyId": key.key_id, "at": iso(key.created_at)})
        for key in sorted(keys, key=lambda key: key.created_at)
        if ("key-add", key.key_id) not in logged
    ]
    retirements = [(key, key.retired_at) for key in keys if key.retired_at is not None]
    retired = [
        ("key-retire", key.key_id, {"keyId": key.key_id, "at": iso(at)})
        for key, at in sorted(retirements, key=lambda pair: pair[1])
        if ("key-retire", key.key_id) not in logged
    ]
    return added + retired


async def logged_key_events(session: AsyncSession) -> set[tuple[str, str]]:
    rows = await session.execute(
        select(LogEntry.action, LogEntry.subject).where(
            LogEntry.action.in_(("key-add", "key-retire"))
        )
    )
    return {(action, subject) for action, subject in rows}


def key_events(keys: Iterable[SigningKey]) -> frozenset[tuple[str, str]]:
    """What the log must say about these keys: each added, the retired ones retired."""
    events = {("key-add", key.key_id) for key in keys}
    events |= {("key-retire", key.key_id) for key in keys if key.retired_at is not None}
    return frozenset(events)


def _database(session: AsyncSession) -> str:
    return session.get_bind().engine.url.render_as_string(hide_password=True)


def keys_known_logged(session: AsyncSession, keys: list[SigningKey]) -> bool:
    """Whether this process has read every event of these keys committed in the log."""
    return key_events(keys) <= _LOGGED_KEY_EVENTS.get(_database(session), frozenset())


async def append_key_changes(
    session: AsyncSession, keys: list[SigningKey], head: Head
) -> list[int]:
    """Every key of the keyring added (and retired) in the log before it signs anything
    there. Free when this process already read them in the log; else one indexed read."""
    if keys_known_logged(session, keys):
        return []
    database = _database(session)
    logged = await logged_key_events(session)
    missing = key_entries(keys, logged)
    if not missing:
        # Committed rows, unless this session appended key entries of its own earlier (a
        # transaction that may still roll back): only then is the memory not extended.
        if not session.info.get(APPENDED_KEYS):
            _LOGGED_KEY_EVENTS[database] = frozenset(logged)
        return []
    session.info[APPENDED_KEYS] = True
    return await append_many(session, missing, head)


async def record_key_changes(session: AsyncSession, keys: list[SigningKey]) -> list[int]:
    """For `marketplace keys rotate`: the keyring's changes appended at once (nothing while
    the backfill is pending: it starts with every key)."""
    head = await locked_head(session)
    if head.backfill_pending:
        return []
    return await append_key_changes(session, keys, head)
