"""Archive safety for uploaded .tar.gz packages, checked in one pass over a byte stream.

inspect_archive reads a blocking stream (a file, or the upload while it still arrives),
gunzips it itself so that both the compressed and the inflated byte counts are known at
every step, and walks the tar members in tarfile's stream mode. Nothing is extracted;
limits are enforced before the bytes they guard are inflated.

iter_members walks a package the same guarded way for readers of stored packages (the
reviewer's diff), handing out each file's bytes as a stream.
"""

from __future__ import annotations

import posixpath
import re
import shutil
import tarfile
import unicodedata
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Literal, Protocol, Self

from marketplace.errors import Refused
from marketplace_rules import manifest as manifest_rules
from marketplace_rules.findings import FILE_PATH_PREFIX
from marketplace_rules.limits import (
    ARCHIVE_MAX_MEMBERS,
    ARCHIVE_MAX_UNPACKED_BYTES,
    GIB,
    KIB,
    MANIFEST_MAX_BYTES,
    MIB,
    SYMLINK_HOPS_MAX,
    UNPACKED_PER_PACKAGE_BYTES,
)
from marketplace_rules.model_text import FileTexts, ModelText, is_model_text_file
from marketplace_rules.model_text.sources import MODEL_TEXT_FILE_MAX_BYTES
from marketplace_rules.secrets import (
    HITS_PER_PACKAGE,
    TOKENS_MAX,
    FileScan,
    ScanBudget,
    SecretHit,
)
from marketplace_rules.text import display
from marketplace_rules.traits import FileTraits, is_executable, sample_size, traits_of
from marketplace_rules.vocabulary import MANIFEST_NAME

__all__ = [
    "GIB",
    "KIB",
    "MANIFEST_NAME",
    "MIB",
    "ArchiveError",
    "ArchiveInfo",
    "ArchiveLimits",
    "MemberKind",
    "PackageMember",
    "Readable",
    "inspect_archive",
    "iter_members",
    "load_manifest",
    "root_folder",
    "safe_extract",
]

_GZIP_WBITS = 16 + zlib.MAX_WBITS  # gzip container only, CRC and length verified
# Inflated bytes are produced, and tarfile reads, at most this many at a time. zlib and
# tarfile allocate a new buffer per piece; pieces over glibc's initial mmap threshold
# (128 KiB) may each get fresh pages from the kernel, depending on the allocator's state:
# inspecting 100 MiB then took 0.14 s of CPU with 256 KiB pieces, 0.03-0.04 s with 64 KiB.
_CHUNK = 64 * KIB
_SOURCE_CHUNK = 64 * KIB
_GZIP_MAGIC = b"\x1f\x8b"
_EXTENDED_HEADERS = frozenset(
    {
        tarfile.XHDTYPE,
        tarfile.XGLTYPE,
        tarfile.SOLARIS_XHDTYPE,
        tarfile.GNUTYPE_LONGNAME,
        tarfile.GNUTYPE_LONGLINK,
    }
)
# Data of one pax or GNU long-name header, which tarfile reads into memory at once.
_MAX_EXTENDED_HEADER = MIB
# How tarfile signals a clean end of the stream; any other header error is corruption.
# (typeshed leaves these classes out.)
_END_OF_ARCHIVE: tuple[type[Exception], ...] = (
    tarfile.EOFHeaderError,  # type: ignore[attr-defined]
    tarfile.EmptyHeaderError,  # type: ignore[attr-defined]
)
_DRIVE = re.compile(r"^[A-Za-z]:")


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class ArchiveError(Refused):
    """The archive is refused; message says why in words a developer can act on."""


@dataclass(frozen=True)
class ArchiveLimits:
    max_unpacked_bytes: int
    max_members: int = ARCHIVE_MAX_MEMBERS
    # Inflated bytes may not exceed max_ratio x compressed bytes + ratio_slack_bytes;
    # the slack lets small, very compressible packages through.
    max_ratio: int = 200
    ratio_slack_bytes: int = 16 * MIB
    manifest_max_bytes: int = MANIFEST_MAX_BYTES

    @classmethod
    def for_package(cls, max_package_bytes: int) -> Self:
        """The contract's rule: unpacked at most 10x the upload limit and at most 1 GiB."""
        unpacked = UNPACKED_PER_PACKAGE_BYTES * max_package_bytes
        return cls(max_unpacked_bytes=min(unpacked, ARCHIVE_MAX_UNPACKED_BYTES))

    @property
    def max_stream_bytes(self) -> int:
        """Cap on the whole inflated tar stream: contents plus header and padding blocks."""
        return self.max_unpacked_bytes + self.max_members * 8 * KIB + _MAX_EXTENDED_HEADER


@dataclass(frozen=True)
class ArchiveInfo:
    files: dict[str, int]  # path relative to the package root -> size (hard links included)
    symlinks: dict[str, str]  # path relative to the package root -> link target as written
    # None only when inspect_archive was told the manifest is optional and there is none.
    manifest: dict[str, Any] | None
    manifest_bytes: bytes | None
    unpacked_bytes: int
    member_count: int
    compressed_bytes: int
    root_prefix: str | None  # the single top-level folder that was stripped, if any
    # Notable files only (path as in files -> their mode and first bytes, judged by
    # rules.files); a file not listed has nothing worth a finding.
    traits: dict[str, FileTraits] = field(default_factory=dict)
    # Secrets in the files' text (rules.secrets), masked; and the values of the marketplace
    # tokens among them, which the service revokes (kept out of repr: never logged).
    secrets: tuple[SecretHit, ...] = ()
    found_tokens: frozenset[str] = field(default=frozenset(), repr=False)
    # The Markdown and text files a model reads (rules.model_text), within its caps, in
    # archive order, each at `file:<path>`.
    model_texts: tuple[ModelText, ...] = ()


def inspect_archive(
    fileobj: Readable, limits: ArchiveLimits, *, require_manifest: bool = True
) -> ArchiveInfo:
    """Check a .tar.gz read from fileobj against the archive rules; ArchiveError if refused.

    Reads fileobj to its end exactly once. Safe to run in a worker thread on a stream
    that is still being received. With require_manifest=False (scenario packages) a
    package without manifest.json passes with manifest None; one that has a manifest.json
    is held to the same rules as always (regular file, size, strict JSON object).
    """
    inflater = _Inflater(fileobj, limits)
    survey = _Survey(limits, require_manifest=require_manifest)
    with _tar_stream(inflater) as tar:
        while (member := tar.next()) is not None:
            survey.add(member, tar)
        _expect_only_padding(tar)
    return survey.finish(compressed_bytes=inflater.compressed)


MemberKind = Literal["file", "dir", "symlink", "hardlink"]


@dataclass(frozen=True)
class PackageMember:
    """One member as iter_members yields it. `name` is normalised but keeps the top-level
    folder (root_folder says whether to strip it, once every name is known)."""

    name: str
    kind: MemberKind
    size: int  # a regular file's size; 0 for the other kinds
    link: str  # a symlink's target as written, a hard link's normalised target, else ""
    content: IO[bytes] | None  # a regular file's bytes, readable until the next member


def iter_members(fileobj: Readable, limits: ArchiveLimits) -> Iterator[PackageMember]:
    """Every member of a .tar.gz read from fileobj, in archive order, through the same
    guards as inspect_archive (bomb ratio, stream size, member count, header sizes, unsafe
    names, devices); ArchiveError if one trips.

    For packages that passed inspect_archive (stored ones): the other rules are not checked
    again. Memory stays bounded by tarfile's buffer whatever the members' sizes.
    """
    members = 0
    with _tar_stream(_Inflater(fileobj, limits)) as tar:
        while (member := tar.next()) is not None:
            members += 1
            if members > limits.max_members:
                raise ArchiveError(f"Package has more than {limits.max_members} members")
            yield _package_member(member, tar)


def _package_member(member: tarfile.TarInfo, tar: tarfile.TarFile) -> PackageMember:
    name = _normalise(member.name)
    if member.isreg():
        return PackageMember(name, "file", member.size, "", tar.extractfile(member))
    if member.isdir():
        return PackageMember(name, "dir", 0, "", None)
    if member.issym():
        return PackageMember(name, "symlink", 0, member.linkname, None)
    if member.islnk():
        return PackageMember(name, "hardlink", 0, _normalise(member.linkname), None)
    raise ArchiveError(f"Package contains an unsupported member type: {display(member.name)}")


def root_folder(kinds: Mapping[str, str]) -> str | None:
    """The package root rule: when every member (normalised name -> kind) sits in one
    top-level folder, that folder, whose name is stripped from package paths; else None."""
    top_levels = {name.split("/", 1)[0] for name in kinds if name}
    if len(top_levels) != 1:
        return None
    (top,) = top_levels
    return top if kinds.get(top, "dir") == "dir" else None


def load_manifest(raw: bytes) -> dict[str, Any]:
    """Parse manifest.json bytes: strict UTF-8 JSON object, no repeated keys, storable."""
    try:
        return manifest_rules.load_manifest(raw)
    except manifest_rules.UnreadableManifest as exc:
        raise ArchiveError(f"{MANIFEST_NAME} {exc.finding.message}") from None


def safe_extract(archive_path: Path, dest: Path, limits: ArchiveLimits | None = None) -> Path:
    """Extract a .tar.gz into dest (new or empty) with PEP 706's "data" filter and our caps.

    Returns the package root: dest, or its single top-level folder when the archive has one.
    On failure dest is removed, so no partial package is left behind.
    """
    limits = limits or ArchiveLimits(max_unpacked_bytes=GIB)
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ValueError(f"{dest} is not empty")
    try:
        _extract(archive_path, dest, limits)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    entries = list(dest.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return dest


def _extract(archive_path: Path, dest: Path, limits: ArchiveLimits) -> None:
    with (
        archive_path.open("rb") as raw,
        _tar_stream(_Inflater(raw, limits), failure="Package cannot be extracted safely") as tar,
    ):
        tar.extractall(dest, filter=_ExtractBudget(limits))  # noqa: S202 - "data" filter + caps


@contextmanager
def _tar_stream(
    inflater: _Inflater, *, failure: str = "Package is not a valid tar archive"
) -> Iterator[tarfile.TarFile]:
    """tarfile's stream mode over the inflater, with guarded headers; a tar error inside
    the block becomes ArchiveError(`failure (reason)`)."""
    try:
        with tarfile.open(
            fileobj=inflater, mode="r|", bufsize=_CHUNK, tarinfo=_GuardedTarInfo
        ) as tar:
            yield tar
    except tarfile.TarError as exc:
        raise ArchiveError(f"{failure} ({exc})") from None


class _Inflater:
    """Gunzips a source on demand, refusing a bomb before it is inflated.

    Implements just enough of a file object for tarfile's stream mode.
    """

    def __init__(self, source: Readable, limits: ArchiveLimits) -> None:
        self._source = source
        self._limits = limits
        self._zlib = zlib.decompressobj(_GZIP_WBITS)
        self._input = b""
        self._head = b""  # the first bytes of the source, to tell "not gzip" from "corrupt"
        self.compressed = 0
        self.inflated = 0

    def read(self, size: int = -1, /) -> bytes:
        # A short read is allowed; tarfile asks again for the rest.
        size = _CHUNK if size < 0 else min(size, _CHUNK)
        while size:
            if self._zlib.eof and not self._start_next_member():
                return b""
            if not self._input:
                self._input = self._pull()
                if not self._input:
                    raise ArchiveError("Package is truncated: the gzip stream ends early")
            out = self._inflate(size)
            if out:
                self._count(len(out))
                return out
        return b""

    def _pull(self) -> bytes:
        chunk = self._source.read(_SOURCE_CHUNK)
        if not self.compressed:
            self._head = chunk[:2]
        self.compressed += len(chunk)
        return chunk

    def _inflate(self, size: int) -> bytes:
        try:
            out = self._zlib.decompress(self._input, size)
        except zlib.error:
            if self._head != _GZIP_MAGIC:
                raise ArchiveError("Package is not a gzip file") from None
            raise ArchiveError("Package gzip data is corrupt") from None
        self._input = self._zlib.unused_data if self._zlib.eof else self._zlib.unconsumed_tail
        return out

    def _start_next_member(self) -> bool:
        # gzip allows concatenated members and zero padding after the last one.
        rest = self._input.lstrip(b"\0")
        while not rest:
            chunk = self._pull()
            if not chunk:
                self._input = b""
                return False
            rest = chunk.lstrip(b"\0")
        self._zlib = zlib.decompressobj(_GZIP_WBITS)
        self._input = rest
        return True

    def _count(self, produced: int) -> None:
        self.inflated += produced
        limits = self._limits
        if self.inflated > limits.max_stream_bytes:
            raise ArchiveError(f"Package unpacks to more than {limits.max_unpacked_bytes} bytes")
        # Compressed bytes actually consumed, not merely read ahead from the source.
        consumed = self.compressed - len(self._input)
        if self.inflated > limits.max_ratio * consumed + limits.ratio_slack_bytes:
            raise ArchiveError(
                f"Package compresses more than {limits.max_ratio}:1; refused as a "
                "decompression bomb"
            )

    # The rest of tarfile's file-object protocol; the stream is read-only.
    def write(self, b: bytes, /) -> int:
        raise OSError("read-only stream")

    def tell(self) -> int:
        return self.inflated

    def seek(self, pos: int, /) -> int:
        raise OSError("stream is not seekable")

    def close(self) -> None:
        return None


class _GuardedTarInfo(tarfile.TarInfo):
    """Refuses corrupt headers, which tarfile would take for the end of the archive, and an
    oversized pax or GNU long-name header before tarfile reads it into memory."""

    @classmethod
    def fromtarfile(cls, tarfile_: tarfile.TarFile) -> Self:
        try:
            return super().fromtarfile(tarfile_)
        except _END_OF_ARCHIVE:
            raise
        except tarfile.HeaderError as exc:
            raise ArchiveError(f"Package is not a valid tar archive ({exc})") from None

    @classmethod
    def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Self:
        info = super().frombuf(buf, encoding, errors)
        if info.type in _EXTENDED_HEADERS and info.size > _MAX_EXTENDED_HEADER:
            raise ArchiveError("Package has an extended tar header larger than 1 MiB")
        return info


def _expect_only_padding(tar: tarfile.TarFile) -> None:
    # Whatever follows the end-of-archive block must be zeros: a second archive hidden
    # there would be unpacked by extractors that skip zero blocks, unchecked.
    while chunk := tar.fileobj.read(_CHUNK):
        if chunk.strip(b"\0"):
            raise ArchiveError("Package has data after the end of the tar archive")


@dataclass
class _Survey:
    """What the member walk has seen so far, and the checks that need all of it."""

    limits: ArchiveLimits
    require_manifest: bool = True
    members: int = 0
    unpacked: int = 0
    kinds: dict[str, MemberKind] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    symlinks: dict[str, str] = field(default_factory=dict)
    folded: dict[str, str] = field(default_factory=dict)
    parents: set[str] = field(default_factory=set)
    top_levels: set[str] = field(default_factory=set)
    manifests: dict[str, bytes | None] = field(default_factory=dict)
    traits: dict[str, FileTraits] = field(default_factory=dict)
    secrets: list[tuple[str, SecretHit]] = field(default_factory=list)  # (name, hit)
    # What all files' secret scans may examine together (a hostile package's cost is bounded).
    scan_budget: ScanBudget = field(default_factory=ScanBudget)
    tokens: set[str] = field(default_factory=set, repr=False)
    # The files a model reads, collected from the pieces the secret scan reads.
    texts: FileTexts = field(default_factory=FileTexts)

    def add(self, member: tarfile.TarInfo, tar: tarfile.TarFile) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise ArchiveError(f"Package has more than {self.limits.max_members} members")
        name = _normalise(member.name)
        kind = self._kind_of(member, name)
        if not name:
            if kind != "dir":
                raise ArchiveError("Package has a root entry that is not a folder")
            return
        self._claim(name, kind)
        self._count_size(member, name, kind)
        if kind == "symlink":
            self.symlinks[name] = member.linkname
        if _could_be_manifest(name) and kind == "file":
            self._keep_manifest(member, name, tar)
        self._note_traits(member, name, kind, tar)

    def _kind_of(self, member: tarfile.TarInfo, name: str) -> MemberKind:
        shown = display(member.name)
        if member.isreg():
            return "file"
        if member.isdir():
            return "dir"
        if member.issym():
            _check_symlink(name, member.linkname, shown)
            return "symlink"
        if member.islnk():
            self._check_hardlink(member.linkname, shown)
            return "hardlink"
        if member.ischr() or member.isblk() or member.isfifo():
            raise ArchiveError(f"Package contains a device or fifo: {shown}")
        raise ArchiveError(f"Package contains an unsupported member type: {shown}")

    def _check_hardlink(self, linkname: str, shown: str) -> None:
        target = _normalise(linkname, link_of=shown)
        if self.kinds.get(target) not in ("file", "hardlink"):
            raise ArchiveError(f"Package has a hard link to a file it does not contain: {shown}")

    def _claim(self, name: str, kind: MemberKind) -> None:
        if name in self.kinds:
            raise ArchiveError(f"Package contains the name {display(name)} twice")
        key = unicodedata.normalize("NFC", name).casefold()
        if key in self.folded:
            raise ArchiveError(
                "Package has names that differ only in case: "
                f"{display(self.folded[key])} and {display(name)}"
            )
        self.kinds[name] = kind
        self.folded[key] = name
        self.top_levels.add(name.split("/", 1)[0])
        parent = posixpath.dirname(name)
        while parent and parent not in self.parents:
            self.parents.add(parent)
            parent = posixpath.dirname(parent)

    def _count_size(self, member: tarfile.TarInfo, name: str, kind: MemberKind) -> None:
        if kind == "file":
            size = member.size
        elif kind == "hardlink":
            # A hard link costs a full copy where the client cannot link.
            size = self.sizes[_normalise(member.linkname)]
        else:
            return
        self.sizes[name] = size
        self.unpacked += size
        if self.unpacked > self.limits.max_unpacked_bytes:
            raise ArchiveError(
                f"Package unpacks to more than {self.limits.max_unpacked_bytes} bytes"
            )

    def _keep_manifest(self, member: tarfile.TarInfo, name: str, tar: tarfile.TarFile) -> None:
        if "/" in name and len(self.top_levels) > 1:
            return  # there is no single top-level folder, so this is not the manifest
        if member.size > self.limits.manifest_max_bytes:
            self.manifests[name] = None
            return
        extracted = tar.extractfile(member)
        if extracted is None:  # pragma: no cover - regular members always have data
            return
        with extracted:
            self.manifests[name] = extracted.read()

    def _note_traits(
        self, member: tarfile.TarInfo, name: str, kind: str, tar: tarfile.TarFile
    ) -> None:
        """A file's mode and first bytes (the manifest's from what was kept); a hard link
        shares its target's. A text file is read to its end for the secret scan, a piece
        at a time; the traits look at its first `sample_size` bytes only."""
        if kind == "hardlink":
            linked = self.traits.get(_normalise(member.linkname), FileTraits())
            found = replace(linked, executable=linked.executable or is_executable(member.mode))
        elif kind == "file":
            head = self.manifests.get(name, b"" if member.size == 0 else None)
            if head is None:
                head = self._read_scanning(member, name, tar)
            else:
                self._scan(name, [head])
                self.texts.add(name, head)
            found = traits_of(name, member.mode, head)
        else:
            return
        if found.notable:
            self.traits[name] = found

    def _read_scanning(self, member: tarfile.TarInfo, name: str, tar: tarfile.TarFile) -> bytes:
        """The file's first bytes (at least `sample_size`), the whole of it scanned for
        secrets unless it turns out binary (tarfile skips what is left unread). A file a
        model reads is kept from the same pieces, up to its cap, for `rules.model_text`."""
        extracted = tar.extractfile(member)
        if extracted is None:  # pragma: no cover - regular members always have data
            return b""
        with extracted:
            head = extracted.read(max(sample_size(name), _CHUNK))
            pieces = _pieces(head, extracted)
            if not self.texts.wants(name):
                self._scan(name, pieces)
                return head
            self.texts.open(name)
            fed = _Fed(pieces, self.texts)
            self._scan(name, fed)
            fed.rest(MODEL_TEXT_FILE_MAX_BYTES)  # what the scan left unread (it stops early)
            self.texts.close()
        return head

    def _scan(self, name: str, pieces: Iterable[bytes]) -> None:
        if len(self.secrets) >= HITS_PER_PACKAGE:
            return
        scan = FileScan(name, budget=self.scan_budget)
        for piece in pieces:
            scan.feed(piece)
            if scan.done:
                break
        scan.finish()
        self.secrets += [(name, hit) for hit in scan.hits]
        self.tokens.update(list(scan.tokens)[: max(0, TOKENS_MAX - len(self.tokens))])

    def finish(self, *, compressed_bytes: int) -> ArchiveInfo:
        self._check_link_resolution()
        self._check_files_used_as_folders()
        prefix = self._root_prefix()
        raw = self._manifest_bytes(prefix)
        manifest = load_manifest(raw) if raw is not None else None
        strip = len(prefix) + 1 if prefix else 0
        return ArchiveInfo(
            files={name[strip:]: size for name, size in self.sizes.items()},
            symlinks={name[strip:]: target for name, target in self.symlinks.items()},
            manifest=manifest,
            manifest_bytes=raw,
            unpacked_bytes=self.unpacked,
            member_count=self.members,
            compressed_bytes=compressed_bytes,
            root_prefix=prefix,
            traits={name[strip:]: traits for name, traits in self.traits.items()},
            secrets=tuple(
                replace(hit, path=FILE_PATH_PREFIX + name[strip:])
                for name, hit in self.secrets[:HITS_PER_PACKAGE]
            ),
            found_tokens=frozenset(self.tokens),
            model_texts=self._model_texts(strip),
        )

    def _model_texts(self, strip: int) -> tuple[ModelText, ...]:
        """The collected texts at their paths relative to the package root. A file was
        chosen by its name before the root folder was known: one that only looked like a
        prompt for a root named `prompts` is left out."""
        texts: list[ModelText] = []
        for text in self.texts.texts:
            relative = text.path.removeprefix(FILE_PATH_PREFIX)[strip:]
            if is_model_text_file(relative):
                texts.append(replace(text, path=FILE_PATH_PREFIX + relative))
        return tuple(texts)

    def _check_link_resolution(self) -> None:
        # Each target is inside lexically; resolving through the other links catches
        # chains such as a -> b/.. with b -> . that climb out only once followed.
        for name, target in self.symlinks.items():
            path = posixpath.join(posixpath.dirname(name), target)
            if _escapes(path, self.symlinks):
                raise ArchiveError(f"Package has a link pointing outside it: {display(name)}")

    def _check_files_used_as_folders(self) -> None:
        for parent in self.parents:
            if self.kinds.get(parent) in ("file", "hardlink"):
                raise ArchiveError(f"Package uses {display(parent)} both as a file and a folder")

    def _root_prefix(self) -> str | None:
        return root_folder(self.kinds)

    def _manifest_bytes(self, prefix: str | None) -> bytes | None:
        name = f"{prefix}/{MANIFEST_NAME}" if prefix else MANIFEST_NAME
        kind = self.kinds.get(name)
        if kind is None:
            if not self.require_manifest:
                return None
            raise ArchiveError("manifest.json not found at the package root")
        if kind != "file":
            raise ArchiveError("manifest.json must be a regular file")
        raw = self.manifests.get(name)
        if raw is None:
            raise ArchiveError(
                f"manifest.json is larger than {self.limits.manifest_max_bytes} bytes"
            )
        return raw


@dataclass
class _ExtractBudget:
    """The "data" extraction filter plus member-count and size caps."""

    limits: ArchiveLimits
    members: int = 0
    unpacked: int = 0
    sizes: dict[str, int] = field(default_factory=dict)

    def __call__(self, member: tarfile.TarInfo, dest_path: str) -> tarfile.TarInfo | None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise ArchiveError(f"Package has more than {self.limits.max_members} members")
        if member.isreg() or member.islnk():
            # A hard link costs a full copy where the file system cannot link.
            size = member.size if member.isreg() else self.sizes.get(member.linkname, 0)
            self.sizes[member.name] = size
            self.unpacked += size
            if self.unpacked > self.limits.max_unpacked_bytes:
                raise ArchiveError(
                    f"Package unpacks to more than {self.limits.max_unpacked_bytes} bytes"
                )
        return tarfile.data_filter(member, dest_path)


def _normalise(name: str, *, link_of: str | None = None) -> str:
    """A member path with "." parts and repeated slashes removed; unsafe paths refused."""
    shown = link_of or display(name)
    what = "a link pointing outside it" if link_of else "an unsafe path"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ArchiveError(f"Package has a name that is not valid UTF-8: {shown}") from None
    path = name.replace("\\", "/")  # a separator to Windows clients
    if path.startswith("/") or _DRIVE.match(path):
        raise ArchiveError(f"Package contains {what} (absolute): {shown}")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(f"Package contains {what} (..): {shown}")
    return "/".join(parts)


def _check_symlink(name: str, target: str, shown: str) -> None:
    path = target.replace("\\", "/")
    if not path or path.startswith("/") or _DRIVE.match(path):
        raise ArchiveError(f"Package has a link pointing outside it: {shown}")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), path))
    if resolved == ".." or resolved.startswith("../"):
        raise ArchiveError(f"Package has a link pointing outside it: {shown}")


def _escapes(path: str, symlinks: dict[str, str]) -> bool:
    """Resolve path like realpath over the archive's own links; True if it leaves the root."""
    pending = path.replace("\\", "/").split("/")
    resolved: list[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                return True
            resolved.pop()
            continue
        target = symlinks.get("/".join([*resolved, part]))
        if target is None:
            resolved.append(part)
            continue
        hops += 1
        if hops > SYMLINK_HOPS_MAX or target.startswith("/"):
            return True
        pending = target.replace("\\", "/").split("/") + pending
    return False


class _Fed:
    """The pieces of a file, each handed to the model-text collector as it is read."""

    def __init__(self, pieces: Iterator[bytes], texts: FileTexts) -> None:
        self._pieces = pieces
        self._texts = texts
        self.read = 0

    def __iter__(self) -> Iterator[bytes]:
        for piece in self._pieces:
            self._texts.feed(piece)
            self.read += len(piece)
            yield piece

    def rest(self, limit: int) -> None:
        """Read on until `limit` bytes were fed or the file ends."""
        if self.read >= limit:
            return
        for _piece in self:
            if self.read >= limit:
                return


def _pieces(head: bytes, rest: IO[bytes]) -> Iterator[bytes]:
    yield head
    while piece := rest.read(_CHUNK):
        yield piece


def _could_be_manifest(name: str) -> bool:
    return name == MANIFEST_NAME or (name.count("/") == 1 and name.endswith("/" + MANIFEST_NAME))
