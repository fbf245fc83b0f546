"""The signed revocation list (CONTRACT 11): every version ever taken down, oldest first.

The list is a pure function of the revocation rows, the signing key and the hour it is
issued in: `issuedAt` is the start of the current hour (or the newest revocation's time, if
later), and Ed25519 signatures are deterministic. So every API process builds the same bytes,
and one ETag holds across processes behind a load balancer, while a client can still tell an
old list (replayed by a man in the middle) from a fresh one by its issuedAt.

Each process keeps the one list it built last, keyed by what it depends on. The key is read
from the database on every request (the rows are append-only, so their count and newest time
change with every takedown, in whichever process it happened): never a stale list.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import orjson
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import Revocation
from marketplace.transparency.log import iso
from marketplace.trust.keyring import Keyring
from marketplace_rules.canonical import b64encode, canonical_json

REISSUE_SECONDS = 3600
# Clients poll the list; a minute bounds how long a shared cache may hide a new takedown.
CACHE_CONTROL = "public, max-age=60"


@dataclass(frozen=True)
class ListKey:
    """Everything the signed list depends on; a new key means a new list."""

    count: int
    newest: datetime | None
    window: datetime
    key_id: str


@dataclass(frozen=True)
class SignedList:
    key: ListKey
    body: bytes  # the whole envelope, encoded once
    etag: str


def window_start(now: datetime) -> datetime:
    seconds = int(now.timestamp()) // REISSUE_SECONDS * REISSUE_SECONDS
    return datetime.fromtimestamp(seconds, UTC)


def issued_at(key: ListKey) -> datetime:
    """The window's start, unless a revocation in it is newer (a list never predates an item)."""
    if key.newest is not None and key.newest > key.window:
        return key.newest
    return key.window


async def list_key(session: AsyncSession, keyring: Keyring, now: Callable[[], datetime]) -> ListKey:
    count, newest = (
        await session.execute(select(func.count(), func.max(Revocation.revoked_at)))
    ).one()
    signing = await anyio.to_thread.run_sync(keyring.signing_key)  # reads the keyring file
    if newest is not None and newest.tzinfo is None:  # SQLite's max() returns text
        newest = newest.replace(tzinfo=UTC)
    return ListKey(int(count), newest, window_start(now()), signing.key_id)


def entry(row: Revocation) -> dict[str, Any]:
    return {
        "kind": row.kind,
        "key": row.key,
        "version": row.version,
        "sha256": row.sha256,
        "reason": row.reason,
        "revokedAt": iso(row.revoked_at),
        "logIndex": row.log_index,
    }


async def revocation_entries(session: AsyncSession) -> list[dict[str, Any]]:
    """Oldest first; the row id breaks ties between revocations of the same instant."""
    rows = await session.scalars(select(Revocation).order_by(Revocation.revoked_at, Revocation.id))
    return [entry(row) for row in rows]


def payload_of(key: ListKey, entries: list[dict[str, Any]]) -> bytes:
    return canonical_json({"issuedAt": iso(issued_at(key)), "items": entries})


def signed_envelope(keyring: Keyring, payload: bytes) -> bytes:
    signature = keyring.sign(payload)
    data = {
        "keyId": signature.key_id,
        "payload": b64encode(payload),
        "signature": signature.signature,
    }
    return orjson.dumps({"success": True, "data": data})


def etag_of(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


class RevocationCache:
    """The last list this process built (one entry: there is one list)."""

    def __init__(self, now: Callable[[], datetime] | None = None) -> None:
        self.now = now or (lambda: datetime.now(UTC))
        self.last: SignedList | None = None

    async def current(self, session: AsyncSession, keyring: Keyring) -> SignedList:
        key = await list_key(session, keyring, self.now)
        last = self.last
        if last is not None and last.key == key:
            return last
        payload = payload_of(key, await revocation_entries(session))
        body = await anyio.to_thread.run_sync(signed_envelope, keyring, payload)
        built = SignedList(key, body, etag_of(body))
        self.last = built
        return built
