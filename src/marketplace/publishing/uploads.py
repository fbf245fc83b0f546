"""A version package upload, top to bottom, for every kind:

1. stream the body to a temporary file, hashing and inspecting it as it arrives, outside
   any write transaction (`receive_package`): no lock or pooled connection is held while
   up to 100 MiB arrive;
2. one transaction (`store_package`): lock the item → the kind's checks → store the blob →
   write the rows (and their audit records) → commit.

The blob is stored before the row that references it commits (DESIGN invariant 3); if
writing or committing fails, the blob is deleted again unless another row uses the same
bytes. A crash in between leaves at most an unreferenced blob, which gc removes.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request

from marketplace.config import Settings
from marketplace.kit.upload import ReceivedUpload, receive_upload
from marketplace.models import User
from marketplace.packages.archive import ArchiveInfo, ArchiveLimits, inspect_archive
from marketplace.publishing.blobs import forget_blobs, lock_blob_key
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace.publishing.lookup import check_owner, find_item
from marketplace.publishing.secrets import refuse_live_tokens_apart
from marketplace.storage.base import PACKAGE_CONTENT_TYPE, BlobStore, blob_key
from marketplace_rules.secrets import scan_document


def upload_dir(settings: Settings) -> Path:
    path = settings.data_dir / "uploads"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class Package:
    """A received, hashed and inspected package with the form's text fields."""

    path: Path
    sha256: str
    size: int
    archive: ArchiveInfo
    fields: dict[str, str]


async def receive_package(
    request: Request,
    kind: ItemKind[ItemT, VersionT],
    settings: Settings,
    *,
    text_fields: Collection[str],
) -> ReceivedUpload[ArchiveInfo]:
    """Stream the multipart form in, with the kind's size limit and the archive checks.

    The caller owns the temporary file (`async with` the result removes it).
    """
    limit = kind.package_max_bytes(settings)
    inspector = functools.partial(
        inspect_archive,
        limits=ArchiveLimits.for_package(limit),
        require_manifest=kind.manifest_required,
    )
    upload = await receive_upload(
        request,
        max_file_bytes=limit,
        too_large=kind.package_too_large,
        temp_dir=upload_dir(settings),
        text_fields=text_fields,
        inspector=inspector,
    )
    if not upload.has_file:
        upload.cleanup()
        raise kind.file_required()
    if upload.inspection_error is not None:
        upload.cleanup()
        raise kind.package_invalid(upload.inspection_error)
    return upload


def package_of(kind: ItemKind[ItemT, VersionT], upload: ReceivedUpload[ArchiveInfo]) -> Package:
    if upload.file_path is None or upload.sha256 is None or upload.inspection is None:
        raise kind.file_required()  # unreachable after receive_package's checks
    return Package(upload.file_path, upload.sha256, upload.size, upload.inspection, upload.fields)


async def refuse_leaked_tokens(
    sessions: async_sessionmaker[AsyncSession], kind: ItemKind[ItemT, VersionT], package: Package
) -> None:
    """A live publishing token in the package's files or manifest (escaped strings too) is
    revoked at once and the package refused, before any other check of its content."""
    archive = package.archive
    found = set(archive.found_tokens)
    if archive.manifest is not None:
        found |= scan_document(archive.manifest).tokens
    await refuse_live_tokens_apart(sessions, kind, found)


R = TypeVar("R")
# Writes the rows that reference the stored blob (its key given), with their audit records.
RowWriter = Callable[[str], Awaitable[R]]
# The kind's checks under the item's lock (refuse before anything is stored); returns the
# writer to run once the blob is stored.
CheckThenWrite = Callable[[AsyncSession, ItemT], Awaitable[RowWriter[R]]]


async def store_package(
    sessions: async_sessionmaker[AsyncSession],
    store: BlobStore,
    kind: ItemKind[ItemT, VersionT],
    item_id: str,
    package: Package,
    check: CheckThenWrite[ItemT, R],
    *,
    operator: User | None = None,
) -> R:
    """One write transaction: lock → checks → blob → rows → commit; see the module doc.

    `operator` is the developer whose rights the request checked before its body arrived:
    they are checked again under the lock, because an organization's owner may have
    removed it from the organization while the package streamed in (None: an admin)."""
    key = blob_key(package.sha256)
    stored = False
    try:
        async with sessions.begin() as session:
            item = await find_item(session, kind, item_id, lock=True)
            if operator is not None:
                await check_owner(session, kind, item, operator)
            write = await check(session, item)
            await lock_blob_key(session, key)
            await store.put_file(
                key, package.path, content_type=PACKAGE_CONTENT_TYPE, sha256=package.sha256
            )
            stored = True
            return await write(key)
    except BaseException:
        if stored:
            await forget_blobs(sessions, store, [key])
        raise
