from __future__ import annotations

import errno
import os
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from marketplace.storage.base import BlobNotFound, InvalidBlobKey
from marketplace.storage.local import TEMP_PREFIX, LocalBlobStore
from tests.storage.helpers import START_TIME, BlobMaker, BlobPutter

PACKAGE = b"\x1f\x8b" + os.urandom(300_000)


async def test_put_file_makes_the_blob_exist_with_its_size(
    local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)

    assert await local_store.exists(blob.key)
    info = await local_store.stat(blob.key)
    assert info is not None
    assert (info.key, info.size) == (blob.key, len(PACKAGE))


async def test_put_file_stores_the_exact_bytes_under_the_content_key(
    local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)

    assert (local_store.root / blob.key).read_bytes() == PACKAGE


async def test_put_file_leaves_the_callers_file_in_place(
    local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)

    assert blob.path.read_bytes() == PACKAGE


async def test_put_file_refuses_a_key_that_is_not_the_hash_of_the_file(
    local_store: LocalBlobStore, make_blob: BlobMaker
) -> None:
    blob = make_blob(PACKAGE)
    other = make_blob(b"other")

    with pytest.raises(ValueError, match="blob_key"):
        await local_store.put_file(
            other.key, blob.path, content_type="application/gzip", sha256=blob.sha256
        )
    assert [k async for k in local_store.iter_keys()] == []


async def test_putting_the_same_content_twice_succeeds_and_keeps_one_blob(
    local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    first = await put_blob(local_store, PACKAGE)
    second = await put_blob(local_store, PACKAGE)

    assert first.key == second.key
    assert [k async for k in local_store.iter_keys()] == [first.key]
    assert (local_store.root / first.key).read_bytes() == PACKAGE


async def test_putting_an_existing_key_renews_its_age(
    local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)
    old = time.time() - 86_400
    os.utime(local_store.root / blob.key, (old, old))

    await put_blob(local_store, PACKAGE)

    info = await local_store.stat(blob.key)
    assert info is not None
    assert info.modified_at.timestamp() > old + 3600


def no_hard_links(monkeypatch: pytest.MonkeyPatch) -> None:
    """As when the caller's file is on another file system than the store."""

    def cross_device(src: Any, dst: Any, **kwargs: Any) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)


async def test_put_file_on_the_same_file_system_links_instead_of_copying(
    local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)

    stored = local_store.root / blob.key
    assert stored.samefile(blob.path)
    assert stored.read_bytes() == PACKAGE
    assert [p.name for p in stored.parent.iterdir()] == [stored.name]


async def test_the_callers_file_may_be_removed_after_a_linked_put(
    local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)

    blob.path.unlink()

    assert (local_store.root / blob.key).read_bytes() == PACKAGE
    assert [k async for k in local_store.iter_keys()] == [blob.key]


async def test_put_file_makes_the_bytes_durable_before_the_name_and_the_name_after(
    local_store: LocalBlobStore, make_blob: BlobMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    blob = make_blob(PACKAGE)
    dest = local_store.root / blob.key
    events: list[str] = []
    real_fsync, real_link = os.fsync, os.link

    def fsync(fd: int) -> None:
        target = Path(os.readlink(f"/proc/self/fd/{fd}"))
        events.append(f"fsync {'source' if target == blob.path else target.name}")
        real_fsync(fd)

    def link(src: Any, dst: Any, **kwargs: Any) -> None:
        events.append("link")
        real_link(src, dst, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "link", link)

    await local_store.put_file(
        blob.key, blob.path, content_type="application/gzip", sha256=blob.sha256
    )

    # New shard folders are recorded in their parents; the blob's folder comes last.
    assert events[-3:] == ["fsync source", "link", f"fsync {dest.parent.name}"]
    assert f"fsync {local_store.root.name}" in events[:-3]


async def test_put_file_copies_when_it_cannot_link(
    local_store: LocalBlobStore, put_blob: BlobPutter, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_hard_links(monkeypatch)

    blob = await put_blob(local_store, PACKAGE)

    stored = local_store.root / blob.key
    assert stored.read_bytes() == PACKAGE
    assert not stored.samefile(blob.path)
    assert blob.path.read_bytes() == PACKAGE
    assert [p.name for p in stored.parent.iterdir()] == [stored.name]


async def test_put_file_of_bytes_a_concurrent_put_linked_first_succeeds(
    local_store: LocalBlobStore, make_blob: BlobMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    blob = make_blob(PACKAGE)
    other = make_blob(PACKAGE)  # the same bytes, received by another request
    real_link = os.link

    def lose_the_race(src: Any, dst: Any, **kwargs: Any) -> None:
        real_link(other.path, dst)  # the other request links between our check and link
        real_link(src, dst, **kwargs)

    monkeypatch.setattr(os, "link", lose_the_race)

    await local_store.put_file(
        blob.key, blob.path, content_type="application/gzip", sha256=blob.sha256
    )

    stored = local_store.root / blob.key
    assert stored.samefile(other.path)
    assert stored.read_bytes() == PACKAGE


async def test_failed_write_leaves_neither_blob_nor_temporary_file(
    local_store: LocalBlobStore, put_blob: BlobPutter, monkeypatch: pytest.MonkeyPatch
) -> None:
    def copy_half_then_fail(src: Any, dst: Any, length: int = 0) -> None:
        dst.write(src.read(1000))
        raise OSError("disk full")

    no_hard_links(monkeypatch)
    monkeypatch.setattr(shutil, "copyfileobj", copy_half_then_fail)

    with pytest.raises(OSError, match="disk full"):
        await put_blob(local_store, PACKAGE)

    assert [k async for k in local_store.iter_keys()] == []
    assert [p for p in local_store.root.rglob("*") if p.is_file()] == []


async def test_iter_keys_never_lists_a_temporary_file_being_written(
    local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)
    (local_store.root / blob.key).parent.joinpath(f"{TEMP_PREFIX}in-flight").write_bytes(b"x")

    assert [k async for k in local_store.iter_keys()] == [blob.key]


async def test_iter_keys_lists_every_blob(
    local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blobs = [await put_blob(local_store, bytes([i]) * 10) for i in range(5)]

    assert sorted([k async for k in local_store.iter_keys()]) == sorted(b.key for b in blobs)


async def test_iter_keys_of_an_empty_store_is_empty(local_store: LocalBlobStore) -> None:
    assert [k async for k in local_store.iter_keys()] == []


async def test_delete_removes_the_blob(local_store: LocalBlobStore, put_blob: BlobPutter) -> None:
    blob = await put_blob(local_store, PACKAGE)

    await local_store.delete(blob.key)

    assert not await local_store.exists(blob.key)
    assert await local_store.stat(blob.key) is None


async def test_delete_of_a_missing_blob_succeeds(
    local_store: LocalBlobStore, make_blob: BlobMaker
) -> None:
    key = make_blob(PACKAGE).key

    await local_store.delete(key)

    assert not await local_store.exists(key)


@pytest.mark.parametrize("key", ["../../etc/passwd", "ab/cd/../../../secret.key"])
async def test_store_refuses_keys_that_could_leave_its_folder(
    local_store: LocalBlobStore, key: str
) -> None:
    with pytest.raises(InvalidBlobKey):
        await local_store.exists(key)
    with pytest.raises(InvalidBlobKey):
        await local_store.delete(key)


async def test_iter_bytes_reads_the_requested_range(
    local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)

    data = b"".join(
        [c async for c in local_store.iter_bytes(blob.key, start=70_000, length=100_000)]
    )

    assert data == PACKAGE[70_000:170_000]


async def test_iter_bytes_of_a_missing_blob_raises_blob_not_found(
    local_store: LocalBlobStore, make_blob: BlobMaker
) -> None:
    with pytest.raises(BlobNotFound):
        async for _ in local_store.iter_bytes(make_blob(PACKAGE).key):
            pass


async def test_remove_partial_uploads_removes_only_old_temporary_files(
    local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)
    folder = (local_store.root / blob.key).parent
    stale, fresh = folder / f"{TEMP_PREFIX}stale", folder / f"{TEMP_PREFIX}fresh"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    old = time.time() - 7200
    os.utime(stale, (old, old))

    removed = await local_store.remove_partial_uploads(older_than_seconds=3600)

    assert removed == 1
    assert (stale.exists(), fresh.exists()) == (False, True)
    assert await local_store.exists(blob.key)


async def test_presigned_url_names_the_blob_route_expiry_and_filename(
    local_store: LocalBlobStore, make_blob: BlobMaker
) -> None:
    key = make_blob(PACKAGE).key

    url, expires_at = await local_store.presigned_url(
        key, filename="demo-1.0.0.tgz", expires_in=900
    )

    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"http://testserver/api/v1/blobs/{key}"
    assert query["expires"] == [str(int(START_TIME) + 900)]
    assert query["filename"] == ["demo-1.0.0.tgz"]
    assert len(query["sig"][0]) == 64
    assert expires_at == datetime.fromtimestamp(START_TIME + 900, UTC)


async def test_presigned_url_refuses_a_filename_with_a_path(
    local_store: LocalBlobStore, make_blob: BlobMaker
) -> None:
    with pytest.raises(ValueError, match="filename"):
        await local_store.presigned_url(make_blob(PACKAGE).key, filename="../x.tgz", expires_in=900)


def test_root_is_resolved_to_an_absolute_folder(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "a" / ".." / "b", secret="s", public_url="http://x/")

    assert store.root == (tmp_path / "b").resolve()
    assert store.public_url == "http://x"
