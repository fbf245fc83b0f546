"""What changed in a version against the item's last approved one, as the page shows it.

`load_changes` is the one seam between the console and the version diff
(`publishing/diff.py`, written separately): it fills these plain classes, and the
templates read nothing else. Until the two are joined it answers None, and the page says
the changes are not available.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.publishing.kinds import ItemKind, ItemT, VersionT
from marketplace.storage.base import BlobStore


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
    """The version's changes and file listing; None while the diff module is not joined."""
    return None
