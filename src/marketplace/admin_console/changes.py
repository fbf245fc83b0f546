"""What changed in a version against the item's last approved one, as the page shows it.

`load_changes` is the one seam between the console and the version diff
(`publishing/diff.py`, the same comparison the API's diff answers): it fills these plain
classes, and the templates read nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.publishing import contents
from marketplace.publishing.contents import DEFAULT_MAX_TOTAL_BYTES, PackageUnreadable, file_diffs
from marketplace.publishing.diff import compare, diff_base
from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace.publishing.schemas import ManifestDiff
from marketplace.storage.base import BlobStore
from marketplace_rules.limits import MIB

log = structlog.get_logger("marketplace.console")


@dataclass(frozen=True)
class FileRow:
    path: str
    size: int


@dataclass(frozen=True)
class ChangedFile:
    path: str
    size_before: int
    size_after: int


@dataclass(frozen=True)
class ManifestChange:
    key: str
    before: object | None  # None: the key is new
    after: object | None  # None: the key was removed
    added: bool = False
    removed: bool = False


@dataclass(frozen=True)
class DiffLine:
    kind: Literal["header", "hunk", "add", "remove", "context"]
    text: str


@dataclass(frozen=True)
class TextDiff:
    path: str
    unified: str  # a unified diff of one text file, as difflib writes it ("" when none)
    note: str | None = None  # said instead of a diff: "binary file", "too large to show", ...

    @property
    def lines(self) -> list[DiffLine]:
        """Each line classified for colouring (CSS classes only). `---`/`+++` are headers
        only before the first hunk: inside one they are a removed `--` or added `++` line."""
        classified = []
        in_hunk = False
        for line in self.unified.splitlines():
            in_hunk = in_hunk or line.startswith("@@")
            classified.append(_classify(line, in_hunk))
        return classified


@dataclass(frozen=True)
class ChangesView:
    base_version: str | None  # the approved version compared against; None: nothing to compare
    files_added: tuple[FileRow, ...]
    files_removed: tuple[FileRow, ...]
    files_changed: tuple[ChangedFile, ...]
    manifest_changes: tuple[ManifestChange, ...]
    new_permissions: tuple[str, ...]
    text_diffs: tuple[TextDiff, ...]
    files: tuple[FileRow, ...]  # every file of this version's package, with its size

    @property
    def unchanged(self) -> bool:
        return not (
            self.files_added
            or self.files_removed
            or self.files_changed
            or self.manifest_changes
            or self.new_permissions
        )


def _classify(line: str, in_hunk: bool) -> DiffLine:
    if not in_hunk and line.startswith(("+++", "---")):
        return DiffLine("header", line)
    if line.startswith("@@"):
        return DiffLine("hunk", line)
    if line.startswith("+"):
        return DiffLine("add", line)
    if line.startswith("-"):
        return DiffLine("remove", line)
    return DiffLine("context", line)


async def load_changes(
    session: AsyncSession,
    store: BlobStore,
    kind: ItemKind[ItemT, VersionT],
    version: VersionT,
) -> ChangesView | None:
    """The version against the diff's base (the API's diff, `publishing.diff`), with text
    diffs of its changed files and its file listing; None when a stored package cannot be
    read (logged: a row never points at a missing blob, invariant 3)."""
    base = await diff_base(session, kind, version)
    try:
        comparison = await compare(store, kind, base, version)
        diff = comparison.diff
        paths = [
            *(f.path for f in diff.files.changed),
            *(f.path for f in diff.files.added),
            *(f.path for f in diff.files.removed),
        ]
        texts = (
            await file_diffs(store, base.blob_key if base else None, version.blob_key, paths)
            if paths
            else {}
        )
    except PackageUnreadable as exc:
        log.error("stored package unreadable", version_id=version.id, reason=str(exc))
        return None
    return ChangesView(
        base_version=base.version if base else None,
        files_added=tuple(FileRow(f.path, f.size) for f in diff.files.added),
        files_removed=tuple(FileRow(f.path, f.size) for f in diff.files.removed),
        files_changed=tuple(
            ChangedFile(f.path, f.size_before, f.size_after) for f in diff.files.changed
        ),
        manifest_changes=_manifest_changes(diff.manifest),
        new_permissions=tuple(diff.new_permissions),
        text_diffs=tuple(
            text for path in paths if (text := _text_diff(texts.get(path))) is not None
        ),
        files=tuple(
            FileRow(entry.path, entry.size)
            for entry in sorted(comparison.head_files, key=lambda e: e.path)
        ),
    )


def _manifest_changes(manifest: ManifestDiff) -> tuple[ManifestChange, ...]:
    changes = [
        *(ManifestChange(key, None, value, added=True) for key, value in manifest.added.items()),
        *(
            ManifestChange(key, value, None, removed=True)
            for key, value in manifest.removed.items()
        ),
        *(ManifestChange(key, c.before, c.after) for key, c in manifest.changed.items()),
    ]
    return tuple(sorted(changes, key=lambda change: change.key))


def _text_diff(found: contents.TextDiff | None) -> TextDiff | None:
    """The page's view of one file's diff; None when there is nothing to show."""
    if found is None or found.kind == "identical":
        return None
    if found.kind == "text":
        return TextDiff(found.path, found.diff)
    return TextDiff(found.path, "", note=_note(found))


def _note(found: contents.TextDiff) -> str:
    sides = [side for side in (found.before, found.after) if side is not None]
    if found.kind == "binary":
        shown = " → ".join(f"{side.size} bytes, sha256 {side.sha256[:12]}…" for side in sides)
        return f"Binary file ({shown})"
    if found.kind == "too_large":
        largest = max(side.size for side in sides)
        return f"Too large to show here ({largest} bytes); download the package to read it"
    return f"Not shown: this page shows at most {DEFAULT_MAX_TOTAL_BYTES // MIB} MiB of diffs"
