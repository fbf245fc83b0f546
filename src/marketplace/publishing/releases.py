"""Signed release records (CONTRACT 11): what the service approved, signed when it approved it.

The record is `{kind, key, version, distribution, sha256, size, approvedAt}` as canonical
JSON, base64 in `payload`, with the Ed25519 signature of those bytes by the keyring's current
key, and `logIndex`, the index of the approval's entry in the transparency log (CONTRACT 15).
It is signed once, in the approval's transaction, and kept: a client sees the same record
whatever key signs today. Versions approved before release records existed are signed (and
logged) on their first download (`release_for_download`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import anyio
from fastapi import Depends, Request
from sqlalchemy import inspect as sa_inspect
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import ReviewStatus
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace.publishing.log import log_approval, log_approval_once
from marketplace.trust.keyring import Keyring
from marketplace.trust.schemas import ReleaseRecord
from marketplace_rules.canonical import b64decode, b64encode, canonical_json

# The record's keys, exactly (the client checks every one against the download info).
RECORD_KEYS = ("kind", "key", "version", "distribution", "sha256", "size", "approvedAt")
APPROVED_AT_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def approval_time() -> datetime:
    """Now, to the second: the stored `approved_at` and the signed `approvedAt` agree exactly
    whatever precision the database keeps."""
    return datetime.now(UTC).replace(microsecond=0)


def approved_at_text(moment: datetime) -> str:
    """ISO 8601 UTC to the second with a `Z`, as the API renders its examples."""
    return moment.astimezone(UTC).strftime(APPROVED_AT_FORMAT)


def release_record(
    kind: ItemKind[ItemT, VersionT], item: ItemT, version: VersionT, approved_at: datetime
) -> dict[str, Any]:
    served = kind.served_content(version)
    return {
        "kind": kind.name,
        "key": kind.key_of(item),
        "version": version.version,
        "distribution": served.distribution,
        "sha256": served.sha256,
        "size": served.size,
        "approvedAt": approved_at_text(approved_at),
    }


async def signed(keyring: Keyring, record: dict[str, Any]) -> dict[str, str]:
    """`{keyId, payload, signature}` for `record` (a file keyring is read off the loop)."""
    payload = canonical_json(record)
    signature = await anyio.to_thread.run_sync(keyring.sign, payload)
    return {
        "keyId": signature.key_id,
        "payload": b64encode(payload),
        "signature": signature.signature,
    }


async def sign_release(
    session: AsyncSession,
    keyring: Keyring,
    kind: ItemKind[ItemT, VersionT],
    item: ItemT,
    version: VersionT,
) -> None:
    """In the approval's transaction: date the approval, sign what will be served, and
    append the approval to the transparency log (its index joins the stored record)."""
    approved_at = approval_time()
    version.approved_at = approved_at
    await session.flush()
    # Sign the manifest as the database gives it back (what downloads serve), not the
    # request's dict: JSONB may write a number differently (1e3 comes back as 1000).
    # Its columns only: relationships loaded with it (a plugin's inspection) stay loaded.
    columns = [column.key for column in sa_inspect(version).mapper.column_attrs]
    await session.refresh(version, columns)
    record = await signed(keyring, release_record(kind, item, version, approved_at))
    index = await log_approval(session, keyring, version.id, record)
    version.release = record | {"logIndex": index}
    await session.flush()


@dataclass(frozen=True)
class Releases:
    """What a download needs to hand out (and, for a legacy version, make) release records."""

    keyring: Keyring
    sessions: async_sessionmaker[AsyncSession]


async def app_releases(request: Request) -> Releases:
    state = request.app.state
    return Releases(keyring=state.keyring, sessions=state.write_sessionmaker)


ReleasesDep = Annotated[Releases, Depends(app_releases)]


def needs_completing(release: Any) -> bool:
    """Whether `release_for_download` writes: a record missing, or without its log index."""
    stored = _stored_release(release)
    return stored is None or "logIndex" not in stored


async def release_for_download(
    releases: Releases, kind: ItemKind[ItemT, VersionT], item: ItemT, version: VersionT
) -> ReleaseRecord | None:
    """The version's release record with its log index; None for a version never approved.

    A version approved before records existed (migration 0007), or whose record predates
    the log, is completed now in a short write transaction of its own (the download's own
    transaction only reads): its version row is locked first, then the log (the order every
    decision takes), so of two first downloads at once one completes the record and both
    serve it.
    """
    stored = _stored_release(version.release)
    if stored is not None and "logIndex" in stored:
        return ReleaseRecord.model_validate(stored)
    if stored is None and version.review_status != ReviewStatus.APPROVED:
        return None
    column = kind.versions.release
    this_version = kind.versions.id == version.id
    async with releases.sessions.begin() as session:
        stored = _stored_release(
            await session.scalar(select(column).where(this_version).with_for_update())
        )
        if stored is not None and "logIndex" in stored:
            return ReleaseRecord.model_validate(stored)
        approved_at = version.approved_at or _record_time(stored) or approval_time()
        if stored is None:
            stored = await signed(
                releases.keyring, release_record(kind, item, version, approved_at)
            )
        index = await log_approval_once(session, releases.keyring, version.id, stored)
        completed = stored | {"logIndex": index}
        await session.execute(
            update(kind.version_model)
            .where(this_version)
            .values(release=completed, approved_at=approved_at)
            .execution_options(synchronize_session=False)
        )
    return ReleaseRecord.model_validate(completed)


def _record_time(record: dict[str, Any] | None) -> datetime | None:
    """The `approvedAt` a stored record signed, so the column never says another time."""
    if record is None:
        return None
    try:
        approved = json.loads(b64decode(record["payload"]))["approvedAt"]
        return datetime.strptime(approved, APPROVED_AT_FORMAT).replace(tzinfo=UTC)
    except (KeyError, TypeError, ValueError):
        return None


def _stored_release(value: Any) -> dict[str, Any] | None:
    """SQL NULL (migration 0007) and a JSON null both mean "not signed yet"."""
    return value if isinstance(value, dict) else None
