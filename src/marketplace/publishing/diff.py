"""A version against the last approved version of its item, for reviewers (CONTRACT 12):
files added, removed and changed, top-level manifest keys, permissions newly asked for.

The comparisons are pure functions (`diff_files`, `diff_manifest`, `new_permissions`);
`compare_versions` feeds them from the stored packages, read as streams
(publishing.contents), so a 100 MiB package is never held in memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import ReviewStatus
from marketplace.packages.archive import ArchiveError, load_manifest
from marketplace.publishing.contents import FileEntry, PackageUnreadable, scan_package
from marketplace.publishing.kinds import ItemKind, ItemT, ReviewSubject, VersionT
from marketplace.publishing.schemas import (
    FileChangeOut,
    FileOut,
    FilesDiff,
    ManifestDiff,
    ValueChange,
    VersionDiffOut,
    VersionRef,
)
from marketplace.storage.base import BlobStore
from marketplace_rules.limits import MANIFEST_MAX_BYTES
from marketplace_rules.vocabulary import MANIFEST_NAME

__all__ = [
    "compare_versions",
    "diff_base",
    "diff_files",
    "diff_manifest",
    "new_permissions",
]

_NOTHING = ReviewSubject({}, frozenset())


def diff_files(before: Iterable[FileEntry], after: Iterable[FileEntry]) -> FilesDiff:
    """Files by path: added, removed, and changed (same path, other bytes or link target);
    each list sorted by path."""
    old = {entry.path: entry for entry in before}
    new = {entry.path: entry for entry in after}
    changed = [
        FileChangeOut(path=path, size_before=old[path].size, size_after=new[path].size)
        for path in sorted(old.keys() & new.keys())
        if (old[path].sha256, old[path].link) != (new[path].sha256, new[path].link)
    ]
    return FilesDiff(
        added=[FileOut(path=p, size=new[p].size) for p in sorted(new.keys() - old.keys())],
        removed=[FileOut(path=p, size=old[p].size) for p in sorted(old.keys() - new.keys())],
        changed=changed,
    )


def _same(a: Any, b: Any) -> bool:
    # As JSON, not as Python: true is not 1, and 1 is not 1.0.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def diff_manifest(before: Mapping[str, Any], after: Mapping[str, Any]) -> ManifestDiff:
    """Top-level keys added (with the new value), removed (with the old) and changed
    (`{before, after}`), sorted by key. Nested values are compared whole."""
    return ManifestDiff(
        added={k: after[k] for k in sorted(after.keys() - before.keys())},
        removed={k: before[k] for k in sorted(before.keys() - after.keys())},
        changed={
            k: ValueChange(before=before[k], after=after[k])
            for k in sorted(before.keys() & after.keys())
            if not _same(before[k], after[k])
        },
    )


def new_permissions(before: Iterable[str], after: Iterable[str]) -> list[str]:
    """Permissions `after` asks for that `before` did not, sorted."""
    return sorted(set(after) - set(before))


async def diff_base(
    session: AsyncSession, kind: ItemKind[ItemT, VersionT], version: VersionT
) -> VersionT | None:
    """The last approved version of the same item other than `version`: the item's current
    version (what approving `version` would replace) unless that is `version` itself, else
    the newest approved one by creation time. None for an item's first version."""
    approved = kind.loading_versions(
        select(kind.version_model)
        .where(
            kind.versions.item_id == kind.item_id_of(version),
            kind.versions.review_status == ReviewStatus.APPROVED.value,
            kind.versions.id != version.id,
        )
        .order_by(kind.versions.created_at.desc(), kind.versions.id.desc())
        .limit(1)
    )
    current = await session.scalar(approved.where(kind.versions.is_latest.is_(True)))
    return current if current is not None else await session.scalar(approved)


@dataclass(frozen=True)
class Comparison:
    """A diff and the file listing of its head version, read in the same pass (the console
    shows both)."""

    diff: VersionDiffOut
    head_files: list[FileEntry]


async def compare(
    store: BlobStore, kind: ItemKind[ItemT, VersionT], base: VersionT | None, head: VersionT
) -> Comparison:
    """`head` against `base` (None: a first version, everything in it is added).

    A version without a package (config_only, inline, a scenario without one) has no files.
    Raises PackageUnreadable when a stored package is missing or cannot be read.
    """
    head_files, head_subject = await _read(store, kind, head)
    base_files, base_subject = await _read(store, kind, base) if base else ([], _NOTHING)
    diff = VersionDiffOut(
        base=VersionRef(id=base.id, version=base.version) if base else None,
        files=diff_files(base_files, head_files),
        manifest=diff_manifest(base_subject.manifest, head_subject.manifest),
        new_permissions=new_permissions(base_subject.permissions, head_subject.permissions),
    )
    return Comparison(diff, head_files)


async def compare_versions(
    store: BlobStore, kind: ItemKind[ItemT, VersionT], base: VersionT | None, head: VersionT
) -> VersionDiffOut:
    """The diff alone (the API's answer); see `compare`."""
    return (await compare(store, kind, base, head)).diff


async def _read(
    store: BlobStore, kind: ItemKind[ItemT, VersionT], version: VersionT
) -> tuple[list[FileEntry], ReviewSubject]:
    if version.blob_key is None:
        return [], kind.review_subject(version, None)
    scan = await scan_package(
        store, version.blob_key, keep={MANIFEST_NAME}, max_keep_bytes=MANIFEST_MAX_BYTES
    )
    raw = scan.contents.get(MANIFEST_NAME)
    try:
        package_manifest = load_manifest(raw) if raw is not None else None
    except ArchiveError as exc:
        raise PackageUnreadable(f"package {version.blob_key}: {exc.message}") from None
    return list(scan.files.values()), kind.review_subject(version, package_manifest)
