"""Blobs as files under one folder, downloaded through HMAC-signed links served by the app."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

import anyio

from marketplace.storage.base import (
    BlobInfo,
    BlobNotFound,
    StoreNotReady,
    blob_key,
    check_blob_key,
    check_filename,
    is_blob_key,
)
from marketplace.storage.signing import UrlSigner

BLOB_ROUTE = "/api/v1/blobs"
TEMP_PREFIX = ".tmp-"
CHUNK_SIZE = 64 * 1024
_COPY_BUFFER = 1024 * 1024


class LocalBlobStore:
    def __init__(
        self,
        root: Path,
        *,
        secret: str,
        public_url: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = root.resolve()
        self.public_url = public_url.rstrip("/")
        self.signer = UrlSigner(secret, clock=clock)

    def path(self, key: str) -> Path:
        return self.root / check_blob_key(key)

    async def check_ready(self) -> None:
        await anyio.to_thread.run_sync(self._check_ready)

    def _check_ready(self) -> None:
        # The folder is made by the first put; what can stop that is the nearest existing
        # ancestor not being a writable folder.
        folder = self.root
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise StoreNotReady(f"blob folder {self.root} cannot be written")

    async def put_file(self, key: str, path: Path, *, content_type: str, sha256: str) -> None:
        # Local blobs are always packages; the route serves them as application/gzip.
        del content_type
        if key != blob_key(sha256):
            raise ValueError("key must be blob_key(sha256)")
        await anyio.to_thread.run_sync(self._put_file, self.path(key), path)

    def _put_file(self, dest: Path, source: Path) -> None:
        try:
            # Same key, same bytes: keep the blob, but make it young again for gc.
            os.utime(dest)
            return
        except FileNotFoundError:
            pass
        _make_dirs(dest.parent)
        if not _link_into_place(source, dest):
            _copy_into_place(source, dest)
        # The new name must survive a crash before the version row commits (invariant 3).
        _fsync_dir(dest.parent)

    async def exists(self, key: str) -> bool:
        return await anyio.to_thread.run_sync(self.path(key).is_file)

    async def stat(self, key: str) -> BlobInfo | None:
        path = self.path(key)
        try:
            result = await anyio.to_thread.run_sync(path.stat)
        except FileNotFoundError:
            return None
        return BlobInfo(key, result.st_size, datetime.fromtimestamp(result.st_mtime, UTC))

    async def delete(self, key: str) -> None:
        path = self.path(key)
        await anyio.to_thread.run_sync(lambda: path.unlink(missing_ok=True))

    async def iter_blobs(self) -> AsyncIterator[BlobInfo]:
        for top in await anyio.to_thread.run_sync(self._list_shards, self.root):
            for sub in await anyio.to_thread.run_sync(self._list_shards, top):
                for info in await anyio.to_thread.run_sync(self._list_blobs, sub):
                    yield info

    async def iter_keys(self) -> AsyncIterator[str]:
        async for info in self.iter_blobs():
            yield info.key

    @staticmethod
    def _list_shards(folder: Path) -> list[Path]:
        try:
            with os.scandir(folder) as entries:
                return sorted(
                    Path(e.path)
                    for e in entries
                    if len(e.name) == 2 and e.is_dir(follow_symlinks=False)
                )
        except FileNotFoundError:
            return []

    def _list_blobs(self, folder: Path) -> list[BlobInfo]:
        prefix = f"{folder.parent.name}/{folder.name}/"
        found: list[BlobInfo] = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    key = prefix + entry.name
                    if not is_blob_key(key) or not entry.is_file(follow_symlinks=False):
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:  # deleted while listing
                        continue
                    modified = datetime.fromtimestamp(st.st_mtime, UTC)
                    found.append(BlobInfo(key, st.st_size, modified))
        except FileNotFoundError:
            return []
        return found

    async def iter_bytes(
        self, key: str, *, start: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        if start < 0 or (length is not None and length < 0):
            raise ValueError("start and length must not be negative")
        path = self.path(key)
        try:
            file = await anyio.open_file(path, "rb")
        except FileNotFoundError:
            raise BlobNotFound(key) from None
        try:
            await file.seek(start)
            remaining = length
            while remaining is None or remaining > 0:
                size = CHUNK_SIZE if remaining is None else min(CHUNK_SIZE, remaining)
                chunk = await file.read(size)
                if not chunk:
                    if remaining:
                        raise RuntimeError(f"blob {key} is shorter than expected")
                    break
                if remaining is not None:
                    remaining -= len(chunk)
                yield chunk
        finally:
            # Close even when the download is cancelled half way.
            with anyio.CancelScope(shield=True):
                await file.aclose()

    async def presigned_url(
        self, key: str, *, filename: str, expires_in: int
    ) -> tuple[str, datetime]:
        check_blob_key(key)
        check_filename(filename)
        if expires_in <= 0:
            raise ValueError("expires_in must be positive")
        expires = int(self.signer.clock()) + expires_in
        sig = self.signer.sign(key, expires, filename)
        query = urlencode({"expires": expires, "filename": filename, "sig": sig})
        return f"{self.public_url}{BLOB_ROUTE}/{key}?{query}", datetime.fromtimestamp(expires, UTC)

    async def remove_partial_uploads(self, *, older_than_seconds: int) -> int:
        return await anyio.to_thread.run_sync(self._remove_temp_files, older_than_seconds)

    def _remove_temp_files(self, older_than_seconds: int) -> int:
        cutoff = time.time() - older_than_seconds
        removed = 0
        for top in self._list_shards(self.root):
            for sub in self._list_shards(top):
                for tmp in sub.glob(f"{TEMP_PREFIX}*"):
                    with contextlib.suppress(FileNotFoundError):
                        if tmp.stat().st_mtime < cutoff:
                            tmp.unlink()
                            removed += 1
        return removed

    async def aclose(self) -> None:
        return None


def _link_into_place(source: Path, dest: Path) -> bool:
    """Give the already written source file the blob's name too, without copying its bytes.

    The usual case: uploads are received into data_dir/uploads, on the file system of the
    blob folder. The bytes are made durable before the name appears, and a hard link
    appears atomically, whole, so no temporary name is needed. The caller's file stays
    where it is and shares the blob's bytes: it is only removed afterwards, never
    written to again. False (nothing done) where linking is impossible: another file
    system, or one without hard links.
    """
    fd = os.open(source, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(source, dest)
    except FileExistsError:
        # A concurrent upload of the same bytes got there first: the blob is whole.
        os.utime(dest)
    except OSError:
        return False  # EXDEV, EPERM, ENOTSUP ...: fall back to a copy
    return True


def _copy_into_place(source: Path, dest: Path) -> None:
    # The temporary file sits in the blob's folder so os.replace is an atomic rename;
    # its dotted name never matches a key, so listings skip it.
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=TEMP_PREFIX)
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src:
            shutil.copyfileobj(src, out, _COPY_BUFFER)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp_name, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def _make_dirs(folder: Path) -> None:
    """mkdir -p, and make every folder it creates survive a crash."""
    if folder.is_dir():
        return
    _make_dirs(folder.parent)
    with contextlib.suppress(FileExistsError):  # a concurrent upload made it
        folder.mkdir()
    _fsync_dir(folder.parent)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
