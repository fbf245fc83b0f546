"""The BlobStore protocol and content-addressed keys (`ab/cd/<sha256>`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol
from urllib.parse import quote

# Only lowercase hex and two slashes: a key can never name a path outside the store.
BLOB_KEY_PATTERN = r"[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{64}"
_BLOB_KEY_RE = re.compile(BLOB_KEY_PATTERN)
_SHA256_RE = re.compile(r"[0-9a-f]{64}")

PACKAGE_CONTENT_TYPE = "application/gzip"
MAX_FILENAME_LENGTH = 255


class InvalidBlobKey(ValueError):
    """A key that is not `ab/cd/<sha256>` in lowercase hex."""


class StoreNotReady(RuntimeError):
    """The store cannot take blobs now; the message says why, for an operator."""


class BlobNotFound(LookupError):
    """No blob is stored under the key."""


@dataclass(frozen=True, slots=True)
class BlobInfo:
    key: str
    size: int
    modified_at: datetime


def blob_key(sha256: str) -> str:
    """The content-addressed key of a blob: same bytes, same key."""
    if not _SHA256_RE.fullmatch(sha256):
        raise ValueError("sha256 must be 64 lowercase hex characters")
    return f"{sha256[:2]}/{sha256[2:4]}/{sha256}"


def is_blob_key(key: str) -> bool:
    # The shard folders must repeat the hash's first bytes, so one blob has one key.
    return _BLOB_KEY_RE.fullmatch(key) is not None and key[:2] + key[3:5] == key[6:10]


def check_blob_key(key: str) -> str:
    if not is_blob_key(key):
        raise InvalidBlobKey(f"Invalid blob key: {key[:100]!r}")
    return key


def sha256_of_key(key: str) -> str:
    return check_blob_key(key)[6:]


def check_filename(filename: str) -> str:
    """A download name is a plain file name: no folders, no control characters."""
    if not filename or len(filename) > MAX_FILENAME_LENGTH:
        raise ValueError("filename must be 1-255 characters")
    if filename in {".", ".."} or any(c in filename for c in "/\\"):
        raise ValueError("filename must not contain a path")
    if any(unicodedata.category(c).startswith("C") for c in filename):
        raise ValueError("filename must not contain control characters")
    return filename


def content_disposition(filename: str) -> str:
    """`attachment` with an ASCII fallback and the exact UTF-8 name (RFC 6266)."""
    fallback = "".join(c if c.isascii() and c not in '"\\' else "_" for c in filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


class BlobStore(Protocol):
    """Where package files live. Keys come from `blob_key`; blobs never change once written."""

    async def put_file(self, key: str, path: Path, *, content_type: str, sha256: str) -> None:
        """Store the already hashed file at `path` under `key` (= `blob_key(sha256)`).

        Atomic: readers see the whole blob or none. Putting an existing key succeeds without
        rewriting it but refreshes its age, so `collect_garbage` spares it until the caller's
        row commits. The caller keeps ownership of `path` and removes it afterwards, but
        must not write to it again: the local store gives the blob the same file (a hard
        link) when both are on one file system, instead of copying the bytes.
        """
        ...

    async def exists(self, key: str) -> bool: ...

    async def stat(self, key: str) -> BlobInfo | None:
        """Size and last write time, or None when the blob is missing."""
        ...

    async def delete(self, key: str) -> None:
        """Remove the blob; removing a missing blob succeeds."""
        ...

    def iter_blobs(self) -> AsyncIterator[BlobInfo]:
        """Every stored blob (unordered); in-flight temporary files are never listed."""
        ...

    def iter_keys(self) -> AsyncIterator[str]: ...

    def iter_bytes(
        self, key: str, *, start: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        """The blob's bytes from `start`, `length` of them (all when None), in chunks.

        Raises BlobNotFound when the first chunk is requested and the blob is missing.
        """
        ...

    async def presigned_url(
        self, key: str, *, filename: str, expires_in: int
    ) -> tuple[str, datetime]:
        """A download URL that works without other credentials until the returned UTC time."""
        ...

    async def remove_partial_uploads(self, *, older_than_seconds: int) -> int:
        """Remove leftovers of interrupted writes older than the given age; returns the count."""
        ...

    async def check_ready(self) -> None:
        """For /readyz: StoreNotReady when blobs cannot be written (a missing bucket or
        folder, no write permission); store errors propagate as they are."""
        ...

    async def aclose(self) -> None:
        """Release connections; call once at shutdown."""
        ...
