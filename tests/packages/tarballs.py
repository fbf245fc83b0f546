"""Builders for test archives, hostile ones included, made in memory and fast."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

MIB = 1024 * 1024


@dataclass(frozen=True)
class Member:
    info: tarfile.TarInfo
    data: bytes = b""


def file(name: str, data: bytes = b"") -> Member:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return Member(info, data)


def folder(name: str) -> Member:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    return Member(info)


def symlink(name: str, target: str) -> Member:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return Member(info)


def hardlink(name: str, target: str) -> Member:
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE
    info.linkname = target
    return Member(info)


def special(name: str, kind: bytes) -> Member:
    """A device or fifo member: kind is tarfile.CHRTYPE, BLKTYPE or FIFOTYPE."""
    info = tarfile.TarInfo(name)
    info.type = kind
    return Member(info)


def manifest_file(manifest: dict[str, Any] | bytes, name: str = "manifest.json") -> Member:
    data = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
    return file(name, data)


def tar_bytes(members: Iterable[Member], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        for member in members:
            tar.addfile(member.info, io.BytesIO(member.data) if member.info.isreg() else None)
    return buffer.getvalue()


def tar_gz(members: Iterable[Member], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    return gzip.compress(tar_bytes(members, fmt), compresslevel=1, mtime=0)


def package(
    manifest: dict[str, Any] | None = None,
    files: dict[str, bytes] | None = None,
    prefix: str = "",
) -> bytes:
    """A valid package: manifest.json plus files, optionally inside one top-level folder."""
    manifest = manifest if manifest is not None else {"id": "demo", "version": "1.0.0"}
    members = [manifest_file(manifest, prefix + "manifest.json")]
    members += [file(prefix + name, data) for name, data in (files or {}).items()]
    return tar_gz(members)


def header_block(name: str, size: int = 0) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(tarfile.GNU_FORMAT)


def many_empty_files(count: int) -> Iterator[bytes]:
    """Header blocks of count empty files f00000000, f00000001, ... built from one template."""
    template = bytearray(header_block("f00000000"))
    template[148:156] = b" " * 8
    base = sum(template) - 8 * ord("0")  # checksum without the eight name digits
    for index in range(count):
        digits = b"%08d" % index
        block = bytearray(template)
        block[1:9] = digits
        block[148:156] = b"%06o\0 " % (base + sum(digits))
        yield bytes(block)
    yield b"\0" * 1024


def zero_file_stream(name: str, size: int) -> Iterator[bytes]:
    """A tar stream of one file holding size zero bytes, produced lazily."""
    yield header_block(name, size)
    chunk = b"\0" * MIB
    remaining = size
    while remaining > 0:
        yield chunk[: min(MIB, remaining)]
        remaining -= MIB
    yield b"\0" * (-size % 512 + 1024)


class LazyGzip:
    """A readable .tar.gz whose tar bytes are produced and compressed only when read.

    produced counts the uncompressed bytes made so far: the test's measure of how much
    of a bomb the inspector had inflated when it stopped.
    """

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._compressor = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        self._buffer = bytearray()
        self._done = False
        self.produced = 0

    def read(self, size: int = -1, /) -> bytes:
        size = 64 * 1024 if size < 0 else size
        while len(self._buffer) < size and not self._done:
            chunk = next(self._chunks, None)
            if chunk is None:
                self._buffer += self._compressor.flush()
                self._done = True
            else:
                self.produced += len(chunk)
                self._buffer += self._compressor.compress(chunk)
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        return out


class CountingReader:
    """A byte source that records how much was read from it."""

    def __init__(self, data: bytes) -> None:
        self._stream = io.BytesIO(data)
        self.consumed = 0

    def read(self, size: int = -1, /) -> bytes:
        chunk = self._stream.read(size)
        self.consumed += len(chunk)
        return chunk
