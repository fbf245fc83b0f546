"""Recording review decisions in the transparency log (CONTRACT 15), in their transaction.

An approval's entry repeats its signed release record (`at` is its `approvedAt`, `keyId` the
key that signed it), so a client can check one against the other; the signing key's own
`key-add` entry is appended first if the log lacks it (a key rotated by hand in a setting, or
a `keys rotate` whose database step failed). A takedown's entry names what was withdrawn.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace.transparency.log import (
    LogNotReady,
    append,
    append_key_changes,
    existing_index,
    iso,
    keys_known_logged,
    locked_head,
)
from marketplace.trust.keyring import Keyring
from marketplace_rules.canonical import b64decode

APPROVAL_FIELDS = ("kind", "key", "version", "distribution", "sha256", "size")


def approval_fields(release: dict[str, Any]) -> dict[str, Any]:
    """The approval entry's fields, from the signed release record itself."""
    record = json.loads(b64decode(release["payload"]))
    return {name: record[name] for name in APPROVAL_FIELDS} | {
        "keyId": release["keyId"],
        "at": record["approvedAt"],
    }


async def log_approval(
    session: AsyncSession, keyring: Keyring, version_id: str, release: dict[str, Any]
) -> int:
    """Append the approval of `version_id`, whose signed record is `release`; its index."""
    keys = keyring.loaded_keys()
    if not keys_known_logged(session, keys):
        head = await locked_head(session)
        if head.backfill_pending:
            raise LogNotReady()
        await append_key_changes(session, keys, head)
    return await append(session, "approve", version_id, approval_fields(release))


async def log_approval_once(
    session: AsyncSession, keyring: Keyring, version_id: str, release: dict[str, Any]
) -> int:
    """The approval's index, appending it unless an earlier call did (under the log's lock,
    so two first downloads of a legacy version append one entry)."""
    head = await locked_head(session)
    if head.backfill_pending:
        raise LogNotReady()
    found = await existing_index(session, "approve", version_id)
    if found is not None:
        return found
    await append_key_changes(session, keyring.loaded_keys(), head)
    return await append(session, "approve", version_id, approval_fields(release))


async def log_takedown(
    session: AsyncSession,
    kind: ItemKind[ItemT, VersionT],
    item: ItemT,
    version: VersionT,
    at: datetime,
) -> int:
    served = kind.served_content(version)
    fields = {
        "kind": kind.name,
        "key": kind.key_of(item),
        "version": version.version,
        "distribution": served.distribution,
        "sha256": served.sha256,
        "size": served.size,
        "at": iso(at),
    }
    return await append(session, "takedown", version.id, fields)
