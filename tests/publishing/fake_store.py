"""Blob stores for package-reading tests: bytes in memory, or a large package made on the fly."""

from __future__ import annotations

import hashlib
import random
import tarfile
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

from marketplace.storage.base import BlobNotFound, BlobStore

CHUNK = 64 * 1024


class MemoryStore:
    """iter_bytes over blobs held in a dict, in small chunks (with empty ones between them
    when `gaps`, as a network stream may give); counts closed iterators."""

    def __init__(
        self, blobs: dict[str, bytes] | None = None, chunk: int = 1000, *, gaps: bool = False
    ) -> None:
        self.blobs = dict(blobs or {})
        self.chunk = chunk
        self.gaps = gaps
        self.closed = 0

    def as_store(self) -> BlobStore:
        return cast(BlobStore, self)

    async def iter_bytes(
        self, key: str, *, start: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        if key not in self.blobs:
            raise BlobNotFound(key)
        data = self.blobs[key]
        try:
            for offset in range(0, len(data), self.chunk):
                if self.gaps:
                    yield b""
                yield data[offset : offset + self.chunk]
        finally:
            self.closed += 1


def random_bytes(size: int, seed: int) -> Iterator[bytes]:
    """`size` pseudo-random (incompressible) bytes, made CHUNK at a time."""
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not a secret
    remaining = size
    while remaining > 0:
        piece = rng.randbytes(min(CHUNK, remaining))
        remaining -= len(piece)
        yield piece


def sha256_of_random(size: int, seed: int) -> str:
    digest = hashlib.sha256()
    for piece in random_bytes(size, seed):
        digest.update(piece)
    return digest.hexdigest()


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(tarfile.PAX_FORMAT)


def _tar_stream(files: dict[str, tuple[int, int]]) -> Iterator[bytes]:
    """A tar stream of files given as name -> (size, seed), produced lazily."""
    for name, (size, seed) in files.items():
        yield _header(name, size)
        yield from random_bytes(size, seed)
        yield b"\0" * (-size % 512)
    yield b"\0" * 1024


class LargePackageStore:
    """One package of large random files under every key, gzipped while it is served: the
    test itself never holds the package, so a memory peak is the reader's alone."""

    def __init__(self, files: dict[str, tuple[int, int]]) -> None:
        self.files = files
        self.compressed = 0

    def as_store(self) -> BlobStore:
        return cast(BlobStore, self)

    async def iter_bytes(self, key: str, **_: Any) -> AsyncIterator[bytes]:
        compressor = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        for piece in _tar_stream(self.files):
            out = compressor.compress(piece)
            if out:
                self.compressed += len(out)
                yield out
        tail = compressor.flush()
        self.compressed += len(tail)
        yield tail
