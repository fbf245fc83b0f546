"""Reproducible .tar.gz packing of a plugin folder.

The same folder always gives the same bytes (and so the same SHA256): members are sorted,
every mtime is 0, owners are uid/gid 0 with empty names, modes are normalised to 0644 or
0755, and the gzip header carries mtime 0 and no file name.

What is packed: every file but the seed's excludes (always), the files a
`.marketplaceignore` at the top of the folder names (gitignore syntax), and secrets
(`.env*`, private keys) unless that file re-includes them with `!pattern`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import stat
import tarfile
import tempfile
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from pathspec import GitIgnoreSpec

from marketplace_client.errors import CliError
from marketplace_rules.content import Listing
from marketplace_rules.limits import ARCHIVE_MAX_MEMBERS, ARCHIVE_MAX_UNPACKED_BYTES
from marketplace_rules.model_text import FileTexts, ModelText
from marketplace_rules.model_text.sources import MODEL_TEXT_FILE_MAX_BYTES
from marketplace_rules.secrets import HITS_PER_PACKAGE, FileScan, ScanBudget, SecretHit
from marketplace_rules.traits import FileTraits, sample_size, traits_of
from marketplace_rules.vocabulary import MANIFEST_NAME

EXCLUDED_DIRS = frozenset({"node_modules", ".git"})
EXCLUDED_FILES = frozenset({".DS_Store", ".git"})  # .git is a file in git worktrees
EXCLUDED_SUFFIX = ".tar.gz"
IGNORE_FILE = ".marketplaceignore"
# Files that hold secrets far more often than not: left out unless the ignore file says
# `!pattern`, with a warning naming them (a plugin rarely needs one, a leak is forever).
SENSITIVE_PATTERNS = (
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".npmrc",
    ".pypirc",
    ".netrc",
)
HASH_CHUNK = 1024 * 1024
SCAN_CHUNK = 64 * 1024


class PackError(CliError):
    def __init__(self, message: str) -> None:
        super().__init__("PACK_FAILED", message)


@dataclass(frozen=True)
class PackEntry:
    arcname: str
    path: Path
    size: int
    executable: bool


@dataclass(frozen=True)
class PackResult:
    path: Path
    sha256: str
    size: int
    members: tuple[str, ...]


@dataclass(frozen=True)
class Selection:
    """The files to pack, and the secrets the default rules left out (to warn about)."""

    entries: list[PackEntry]
    secrets_left_out: list[str]


class IgnoreRules:
    """The sensitive defaults, then the folder's `.marketplaceignore` lines (so a `!` line
    there can re-include a default-excluded file)."""

    def __init__(self, user_lines: list[str]) -> None:
        self._spec = GitIgnoreSpec.from_lines([*SENSITIVE_PATTERNS, *user_lines])
        self._sensitive = GitIgnoreSpec.from_lines(SENSITIVE_PATTERNS)

    @classmethod
    def of(cls, root: Path) -> IgnoreRules:
        path = root / IGNORE_FILE
        if not path.is_file():
            return cls([])
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise PackError(f"{IGNORE_FILE}: cannot be read as UTF-8 text ({exc})") from exc
        for number, line in enumerate(lines, start=1):
            try:
                GitIgnoreSpec.from_lines([line])
            except (ValueError, re.error):
                raise PackError(
                    f"{IGNORE_FILE}, line {number}: {line!r} is not a pattern"
                ) from None
        return cls(lines)

    def ignores(self, relative: str, *, is_dir: bool) -> bool:
        return self._spec.match_file(f"{relative}/" if is_dir else relative)

    def sensitive(self, relative: str) -> bool:
        return self._sensitive.match_file(relative)


def is_excluded(relative: PurePosixPath, *, is_dir: bool) -> bool:
    """The seed's excludes (and the ignore file itself), which nothing re-includes."""
    name = relative.name
    if is_dir:
        return name in EXCLUDED_DIRS
    if relative.as_posix() == IGNORE_FILE:
        return True
    return name in EXCLUDED_FILES or name.endswith(EXCLUDED_SUFFIX)


def _entry(root: Path, path: Path) -> PackEntry:
    arcname = path.relative_to(root).as_posix()
    source = path
    if path.is_symlink():
        # A link is packed as the file it points at, and only when that stays inside.
        source = path.resolve()
        if not source.is_relative_to(root.resolve()) or not source.is_file():
            raise PackError(f"{arcname}: symbolic link to something outside the folder")
    info = source.stat()
    if not stat.S_ISREG(info.st_mode):
        raise PackError(f"{arcname}: not a regular file")
    executable = bool(info.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    return PackEntry(arcname, source, info.st_size, executable)


def _walk(root: Path, left_out: list[str] | None = None) -> Iterator[tuple[str, Path, bool]]:
    """(archive name, path, whether it is a link to a folder) of everything not excluded;
    the secrets the sensitive defaults left out are added to `left_out`."""
    rules = IgnoreRules.of(root)
    for dirpath, dirnames, filenames in os.walk(root):
        current = Path(dirpath)
        kept: list[str] = []
        for name in dirnames:
            relative = PurePosixPath((current / name).relative_to(root).as_posix())
            if is_excluded(relative, is_dir=True):
                continue
            if rules.ignores(relative.as_posix(), is_dir=True):
                # A folder the secret defaults leave out (`.env*`, `*.key`, ...) is named in
                # the warning too: nothing is left out silently.
                if left_out is not None and rules.sensitive(relative.as_posix()):
                    left_out.append(f"{relative.as_posix()}/")
                continue
            if (current / name).is_symlink():
                yield relative.as_posix(), current / name, True
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            relative = PurePosixPath((current / name).relative_to(root).as_posix())
            if is_excluded(relative, is_dir=False):
                continue
            arcname = relative.as_posix()
            if rules.ignores(arcname, is_dir=False):
                if left_out is not None and rules.sensitive(arcname):
                    left_out.append(arcname)
                continue
            yield arcname, current / name, False


def select(root: Path) -> Selection:
    """The files to pack, sorted by archive name, exclusions applied; and the secrets the
    default rules left out."""
    entries: list[PackEntry] = []
    left_out: list[str] = []
    for arcname, path, folder_link in _walk(root, left_out):
        if folder_link:
            raise PackError(f"{arcname}: symbolic links to folders are not packed")
        entries.append(_entry(root, path))
    entries.sort(key=lambda entry: entry.arcname)
    if MANIFEST_NAME not in {entry.arcname for entry in entries}:
        raise PackError(f"{root}: no {MANIFEST_NAME} at the top of the folder")
    refuse_what_the_service_refuses(entries)
    return Selection(entries, sorted(left_out))


def refuse_what_the_service_refuses(entries: list[PackEntry]) -> None:
    """The service's archive rules a folder can break (packages/archive.py), checked
    before the first write of a publish rather than after the upload."""
    if len(entries) > ARCHIVE_MAX_MEMBERS:
        raise PackError(
            f"the folder holds {len(entries)} files to pack, over the service's limit of "
            f"{ARCHIVE_MAX_MEMBERS}"
        )
    unpacked = sum(entry.size for entry in entries)
    if unpacked > ARCHIVE_MAX_UNPACKED_BYTES:
        raise PackError(
            f"the files to pack hold {unpacked} bytes, over the service's unpacked limit of "
            f"{ARCHIVE_MAX_UNPACKED_BYTES} bytes"
        )
    seen: dict[str, str] = {}
    for entry in entries:
        # Case-insensitive file systems would install one over the other.
        folded = unicodedata.normalize("NFC", entry.arcname).casefold()
        if folded in seen:
            raise PackError(
                f"names that differ only in case: {seen[folded]} and {entry.arcname} "
                "(the service refuses such a package)"
            )
        seen[folded] = entry.arcname


def collect(root: Path) -> list[PackEntry]:
    """The files to pack, sorted by archive name, exclusions applied."""
    return select(root).entries


def listing(root: Path, *, with_traits: bool = False) -> Listing:
    """The files a package of `root` would hold, with their sizes, to check a manifest
    against before packing. What cannot be packed is left out; packing refuses it.

    with_traits: also the traits of the notable files (`rules.traits`), from the mode
    they will be packed with and their first bytes, the secrets in their text
    (`rules.secrets`), and the text files a model reads (`rules.model_text`), as the
    service takes them."""
    files: dict[str, int] = {}
    traits: dict[str, FileTraits] = {}
    secrets: list[SecretHit] = []
    entries: list[PackEntry] = []
    budget = ScanBudget()  # what all files' scans may examine together
    for arcname, path, folder_link in _walk(root):
        if folder_link:
            continue
        try:
            entry = _entry(root, path)
        except (PackError, OSError):
            continue
        files[arcname] = entry.size
        entries.append(entry)
        found = _traits(entry) if with_traits else None
        if found is not None and found.notable:
            traits[arcname] = found
        if with_traits and len(secrets) < HITS_PER_PACKAGE:
            secrets += _secrets(entry, budget)
    return Listing(
        files=files,
        traits=traits,
        secrets=secrets[:HITS_PER_PACKAGE],
        model_texts=_model_texts(entries) if with_traits else (),
    )


def _model_texts(entries: list[PackEntry]) -> list[ModelText]:
    """The files a model reads, in the order `pack` writes them (the service takes the
    first ones in archive order when a package has more than its caps), each read up to
    its cap; a file that cannot be read is left out (packing it will fail)."""
    texts = FileTexts()
    for entry in sorted(entries, key=lambda entry: entry.arcname):
        if not texts.wants(entry.arcname):
            continue
        try:
            with entry.path.open("rb") as source:
                data = source.read(MODEL_TEXT_FILE_MAX_BYTES)
        except OSError:
            continue
        texts.add(entry.arcname, data)
    return texts.texts


def _secrets(entry: PackEntry, budget: ScanBudget) -> list[SecretHit]:
    """The secrets in the file's text, read a piece at a time (none if unreadable)."""
    scan = FileScan(entry.arcname, budget=budget)
    try:
        with entry.path.open("rb") as source:
            while not scan.done and (piece := source.read(SCAN_CHUNK)):
                scan.feed(piece)
    except OSError:
        return []
    return scan.finish().hits


def _traits(entry: PackEntry) -> FileTraits | None:
    """None when the file cannot be read; packing it will fail and say why."""
    try:
        with entry.path.open("rb") as source:
            head = source.read(sample_size(entry.arcname))
    except OSError:
        return None
    return traits_of(entry.arcname, _mode(entry.executable), head)


def _mode(executable: bool) -> int:
    """The mode a file is packed with: normalised, so the same folder gives the same bytes."""
    return 0o755 if executable else 0o644


def _tarinfo(arcname: str, size: int, executable: bool) -> tarfile.TarInfo:
    info = tarfile.TarInfo(arcname)
    info.size = size
    info.mtime = 0
    info.mode = _mode(executable)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class _CountingReader:
    """Reports the running byte count while tarfile reads a member's content."""

    def __init__(
        self, source: BinaryIO, counter: list[int], on_progress: Callable[[int], None]
    ) -> None:
        self._source = source
        self._counter = counter
        self._on_progress = on_progress

    def read(self, size: int = -1) -> bytes:
        chunk = self._source.read(size)
        self._counter[0] += len(chunk)
        self._on_progress(self._counter[0])
        return chunk


def _write_archive(
    handle: tarfile.TarFile,
    entries: list[PackEntry],
    manifest_override: bytes | None,
    on_progress: Callable[[int], None],
) -> None:
    counter = [0]
    for entry in entries:
        if entry.arcname == MANIFEST_NAME and manifest_override is not None:
            info = _tarinfo(entry.arcname, len(manifest_override), False)
            handle.addfile(info, io.BytesIO(manifest_override))
            continue
        with entry.path.open("rb") as source:
            reader = _CountingReader(source, counter, on_progress)
            handle.addfile(_tarinfo(entry.arcname, entry.size, entry.executable), reader)


def _write_package(
    raw: BinaryIO | _CountingSink,
    entries: list[PackEntry],
    manifest_override: bytes | None,
    on_progress: Callable[[int], None],
) -> None:
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as compressed,
        tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        _write_archive(archive, entries, manifest_override, on_progress)


class _CountingSink:
    """Where `packed_size` writes a package: it keeps the count, not the bytes."""

    def __init__(self) -> None:
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        return None


def packed_size(entries: list[PackEntry], *, manifest_override: bytes | None = None) -> int:
    """The size of the package `pack` makes of these entries (the bytes `publish` sends),
    made the same way but written nowhere."""
    sink = _CountingSink()
    _write_package(sink, entries, manifest_override, lambda _done: None)
    return sink.size


def total_size(entries: list[PackEntry]) -> int:
    return sum(entry.size for entry in entries)


def pack(
    root: Path,
    dest: Path,
    *,
    manifest_override: bytes | None = None,
    entries: list[PackEntry] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> PackResult:
    """Pack `root` into `dest` (written atomically); `manifest_override` replaces manifest.json."""
    entries = entries if entries is not None else collect(root)
    progress = on_progress or (lambda _done: None)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=dest.parent, prefix=".pack-", suffix=".tmp")
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as raw:
            _write_package(raw, entries, manifest_override, progress)
        temp.replace(dest)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return PackResult(
        path=dest,
        sha256=sha256_file(dest),
        size=dest.stat().st_size,
        members=tuple(entry.arcname for entry in entries),
    )
