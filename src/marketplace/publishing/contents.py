"""What a stored package holds, for reviewers: its file tree with sizes and hashes, and text
diffs of files between two packages.

A package is read straight from the blob store, never whole: a worker thread pulls the
blob's chunks from the event loop one at a time (anyio.from_thread) and pushes them through
packages.archive's guarded inflater and tar walk, hashing each file as it passes. At most
one blob chunk, tarfile's buffer and the bytes a caller asked to keep (capped) are held.
Paths are relative to the package root: a single top-level folder is stripped, the same
rule as at upload (archive.root_folder).
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import hashlib
import posixpath
import tarfile
import weakref
from collections.abc import AsyncIterator, Collection, Iterable
from dataclasses import dataclass, field
from typing import IO, Literal

import anyio
import anyio.from_thread
import anyio.to_thread

from marketplace.packages.archive import (
    ArchiveError,
    ArchiveLimits,
    iter_members,
    root_folder,
)
from marketplace.storage.base import BlobNotFound, BlobStore
from marketplace_rules.limits import ARCHIVE_MAX_UNPACKED_BYTES, KIB, MIB

__all__ = [
    "FileEntry",
    "PackageScan",
    "PackageUnreadable",
    "TextDiff",
    "file_diffs",
    "package_listing",
    "scan_package",
]

# A stored package passed the upload checks under limits at most these large; reading it
# back under the largest ones never refuses it, even after the settings shrank.
STORED_PACKAGE_LIMITS = ArchiveLimits(max_unpacked_bytes=ARCHIVE_MAX_UNPACKED_BYTES)
_READ_CHUNK = 64 * KIB
# Package readers hold a worker thread while they wait for the event loop to hand them
# the next blob chunk, and reading that chunk may itself need a thread of anyio's default
# pool (local files, boto3): readers get a pool of their own, so they can never take every
# thread of the default pool and wait on each other for ever.
PACKAGE_READER_THREADS = 4

DEFAULT_MAX_FILE_BYTES = 256 * KIB
DEFAULT_MAX_TOTAL_BYTES = 2 * MIB


class PackageUnreadable(Exception):
    """A stored package is missing or cannot be read back (storage or data fault)."""


@dataclass(frozen=True)
class FileEntry:
    """A file of a package. A symbolic link is listed with its target in `link`, size 0
    and the SHA-256 of the target text, so a changed target shows as a changed file."""

    path: str
    size: int
    sha256: str
    link: str | None = None


@dataclass
class PackageScan:
    """One pass over a package: every file, and the bytes of those asked for."""

    files: dict[str, FileEntry]  # by root-relative path, in archive order
    contents: dict[str, bytes]  # root-relative path -> bytes, for the paths asked for
    root: str | None  # the top-level folder that was stripped, if any
    hard_links: dict[str, str] = field(default_factory=dict)  # path -> path of its target


async def package_listing(store: BlobStore, key: str) -> list[FileEntry]:
    """Every file of the package stored under `key`, sorted by path (folders left out).

    Raises PackageUnreadable when the blob is missing or is not a readable package.
    """
    scan = await scan_package(store, key)
    return sorted(scan.files.values(), key=lambda entry: entry.path)


async def scan_package(
    store: BlobStore,
    key: str,
    *,
    keep: Collection[str] = (),
    max_keep_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> PackageScan:
    """Read the package under `key` once: list and hash its files, and keep the bytes of
    the root-relative paths in `keep` that are regular files of at most `max_keep_bytes`.

    Until the walk ends it is not known whether a top-level folder will be stripped, so a
    kept path may be held twice (as itself and under a folder): at most 2 x the sum of
    the kept files' sizes is held. PackageUnreadable on a missing or unreadable blob.
    """
    chunks = store.iter_bytes(key)
    reader = _BlobReader(chunks)
    work = functools.partial(_scan, reader, frozenset(keep), max_keep_bytes)
    try:
        return await anyio.to_thread.run_sync(work, limiter=_reader_limiter())
    except BlobNotFound:
        raise PackageUnreadable(f"package {key} is missing from storage") from None
    except (ArchiveError, tarfile.TarError) as exc:
        raise PackageUnreadable(f"package {key} cannot be read: {exc}") from None
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()


Change = Literal["added", "removed", "changed", "unchanged"]
# text: `diff` holds a unified diff; binary: NUL bytes or not UTF-8; too_large: a side is
# over max_file_bytes; omitted: max_total_bytes ran out; identical: same bytes both sides.
DiffKind = Literal["text", "binary", "too_large", "omitted", "identical"]


@dataclass(frozen=True)
class TextDiff:
    """How one path differs between two packages. `before`/`after` (None where the path is
    absent) carry the sizes and hashes shown for binary and too-large files."""

    path: str
    change: Change
    kind: DiffKind
    diff: str  # "" unless kind is "text"
    before: FileEntry | None
    after: FileEntry | None


async def file_diffs(
    store: BlobStore,
    base_key: str | None,
    head_key: str | None,
    paths: Iterable[str],
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
) -> dict[str, TextDiff]:
    """Unified diffs (`a/path`, `b/path`; `/dev/null` for an absent side) of the given
    root-relative paths between the package under `base_key` and the one under `head_key`
    (None: no package, every path absent on that side). Paths in neither are left out.

    A side over `max_file_bytes` is "too_large"; files are loaded in path order while the
    bytes of both sides together stay within `max_total_bytes`, later ones are "omitted".
    Reads each package at most twice (listing, then the chosen files). PackageUnreadable
    when a package cannot be read.
    """
    wanted = sorted(set(paths))
    before = await _scan_or_empty(store, base_key)
    after = await _scan_or_empty(store, head_key)
    plan = _Plan(max_file_bytes, max_total_bytes)
    for path in wanted:
        plan.add(path, before.files.get(path), after.files.get(path))
    loaded_before = await _load(store, base_key, before, plan.load_before, max_file_bytes)
    loaded_after = await _load(store, head_key, after, plan.load_after, max_file_bytes)
    return await anyio.to_thread.run_sync(
        plan.render, loaded_before, loaded_after, limiter=_reader_limiter()
    )


# ---------------------------------------------------------------------- the worker thread


async def _next_chunk(chunks: AsyncIterator[bytes]) -> bytes | None:
    try:
        return await anext(chunks)
    except StopAsyncIteration:
        return None


class _BlobReader:
    """A blocking read() over a blob's async chunks, for a worker thread started by anyio:
    each read that needs more asks the event loop for the next chunk, so one is held."""

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self._chunks = chunks
        self._chunk = b""
        self._offset = 0
        self._done = False

    def read(self, size: int = -1, /) -> bytes:
        while self._offset >= len(self._chunk):  # an empty chunk is not the end
            if self._done:
                return b""
            chunk = anyio.from_thread.run(_next_chunk, self._chunks)
            if chunk is None:
                self._done = True
                return b""
            self._chunk, self._offset = chunk, 0
        start = self._offset
        end = len(self._chunk) if size < 0 else min(len(self._chunk), start + size)
        self._offset = end
        return self._chunk[start:end]


def _strip_top(name: str) -> str | None:
    return name.split("/", 1)[1] if "/" in name else None


def _scan(reader: _BlobReader, keep: frozenset[str], max_keep_bytes: int) -> PackageScan:
    kinds: dict[str, str] = {}
    files: dict[str, FileEntry] = {}
    hard_links: dict[str, str] = {}
    kept: dict[str, bytes] = {}
    for member in iter_members(reader, STORED_PACKAGE_LIMITS):
        name = member.name
        if not name:
            continue  # the archive's "." entry
        kinds[name] = member.kind
        if member.kind == "file" and member.content is not None:
            hold = member.size <= max_keep_bytes and (name in keep or _strip_top(name) in keep)
            digest, data = _hash(member.content, hold=hold)
            files[name] = FileEntry(name, member.size, digest)
            if data is not None:
                kept[name] = data
        elif member.kind == "hardlink":
            target = files.get(member.link)
            if target is None:  # pragma: no cover - refused at upload (inspect_archive)
                raise ArchiveError(f"hard link {name} to a file the package does not hold")
            files[name] = FileEntry(name, target.size, target.sha256)
            # A link to a link: point at the regular file holding the bytes.
            hard_links[name] = hard_links.get(member.link, member.link)
        elif member.kind == "symlink":
            target_text = member.link.encode("utf-8", "surrogateescape")
            digest = hashlib.sha256(target_text).hexdigest()
            files[name] = FileEntry(name, 0, digest, link=member.link)
    return _rooted(files, kept, hard_links, root_folder(kinds), keep)


def _hash(content: IO[bytes], *, hold: bool) -> tuple[str, bytes | None]:
    digest = hashlib.sha256()
    pieces: list[bytes] | None = [] if hold else None
    while chunk := content.read(_READ_CHUNK):
        digest.update(chunk)
        if pieces is not None:
            pieces.append(chunk)
    return digest.hexdigest(), (b"".join(pieces) if pieces is not None else None)


def _rooted(
    files: dict[str, FileEntry],
    kept: dict[str, bytes],
    hard_links: dict[str, str],
    root: str | None,
    keep: frozenset[str],
) -> PackageScan:
    """Names relative to the package root (the root folder, when there is one, stripped)."""
    cut = len(root) + 1 if root else 0

    def rel(name: str) -> str:
        return name[cut:]

    return PackageScan(
        files={rel(n): FileEntry(rel(n), e.size, e.sha256, e.link) for n, e in files.items()},
        contents={rel(n): data for n, data in kept.items() if rel(n) in keep},
        root=root,
        hard_links={rel(n): rel(target) for n, target in hard_links.items()},
    )


_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)


def _reader_limiter() -> anyio.CapacityLimiter:
    loop = asyncio.get_running_loop()
    limiter = _limiters.get(loop)
    if limiter is None:
        limiter = _limiters[loop] = anyio.CapacityLimiter(PACKAGE_READER_THREADS)
    return limiter


# ------------------------------------------------------------------------- text diffs

_EMPTY = PackageScan(files={}, contents={}, root=None)


async def _scan_or_empty(store: BlobStore, key: str | None) -> PackageScan:
    return await scan_package(store, key) if key is not None else _EMPTY


async def _load(
    store: BlobStore, key: str | None, listing: PackageScan, paths: set[str], max_bytes: int
) -> dict[str, bytes]:
    """The bytes of `paths` (a hard link's are its target's) from a second pass."""
    if key is None or not paths:
        return {}
    sources = {path: listing.hard_links.get(path, path) for path in paths}
    scan = await scan_package(store, key, keep=set(sources.values()), max_keep_bytes=max_bytes)
    return {path: scan.contents[src] for path, src in sources.items() if src in scan.contents}


def _change(before: FileEntry | None, after: FileEntry | None) -> Change:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    same = before.sha256 == after.sha256 and before.link == after.link
    return "unchanged" if same else "changed"


@dataclass
class _Plan:
    """Which files to load for a diff, in path order, within the byte budgets."""

    max_file_bytes: int
    max_total_bytes: int
    used: int = 0
    entries: dict[str, tuple[FileEntry | None, FileEntry | None]] = field(default_factory=dict)
    kinds: dict[str, DiffKind] = field(default_factory=dict)
    load_before: set[str] = field(default_factory=set)
    load_after: set[str] = field(default_factory=set)

    def add(self, path: str, before: FileEntry | None, after: FileEntry | None) -> None:
        if before is None and after is None:
            return
        self.entries[path] = (before, after)
        if _change(before, after) == "unchanged":
            self.kinds[path] = "identical"
            return
        # Symbolic links are shown as their target text: nothing to load.
        sides = [e for e in (before, after) if e is not None and e.link is None]
        if any(e.size > self.max_file_bytes for e in sides):
            self.kinds[path] = "too_large"
            return
        need = sum(e.size for e in sides)
        if self.used + need > self.max_total_bytes:
            self.kinds[path] = "omitted"
            return
        self.used += need
        self.kinds[path] = "text"  # until the bytes say binary
        if before is not None and before.link is None:
            self.load_before.add(path)
        if after is not None and after.link is None:
            self.load_after.add(path)

    def render(self, before: dict[str, bytes], after: dict[str, bytes]) -> dict[str, TextDiff]:
        result: dict[str, TextDiff] = {}
        for path, (old, new) in self.entries.items():
            kind, text = self.kinds[path], ""
            missing = (path in self.load_before and path not in before) or (
                path in self.load_after and path not in after
            )
            if kind == "text" and missing:  # pragma: no cover - the listing said it fits
                kind = "omitted"
            elif kind == "text":
                old_text = _text_of(old, before.get(path))
                new_text = _text_of(new, after.get(path))
                if old_text is False or new_text is False:
                    kind = "binary"
                else:
                    text = _unified(path, old_text, new_text)
            result[path] = TextDiff(path, _change(old, new), kind, text, old, new)
        return result


def _text_of(entry: FileEntry | None, data: bytes | None) -> str | Literal[False] | None:
    """The text of one side: None when the path is absent, False when the bytes are binary
    (a NUL byte, or not UTF-8)."""
    if entry is None:
        return None
    if entry.link is not None:
        return f"symbolic link to {entry.link}\n"
    if data is None or b"\0" in data:
        return False
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return False


_NO_NEWLINE = "\\ No newline at end of file\n"


def _unified(path: str, old: str | None, new: str | None) -> str:
    """git-style: line endings kept (a CRLF change shows), a missing final newline said."""
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        (new or "").splitlines(keepends=True),
        fromfile=posixpath.join("a", path) if old is not None else "/dev/null",
        tofile=posixpath.join("b", path) if new is not None else "/dev/null",
    )
    return "".join(line if line.endswith("\n") else f"{line}\n{_NO_NEWLINE}" for line in lines)
