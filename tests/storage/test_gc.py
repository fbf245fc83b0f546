from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from marketplace.storage.base import BlobInfo, BlobStore
from marketplace.storage.gc import collect_garbage
from tests.storage.helpers import BlobPutter


async def keys(store: BlobStore) -> set[str]:
    return {key async for key in store.iter_keys()}


async def test_gc_removes_an_old_blob_no_row_references(
    any_store: BlobStore, put_blob: BlobPutter
) -> None:
    orphan = await put_blob(any_store, b"orphan package")

    removed = await collect_garbage(any_store, set(), now=datetime.now(UTC) + timedelta(hours=2))

    assert removed == [orphan.key]
    assert not await any_store.exists(orphan.key)


async def test_gc_keeps_a_referenced_blob(any_store: BlobStore, put_blob: BlobPutter) -> None:
    kept = await put_blob(any_store, b"published package")
    orphan = await put_blob(any_store, b"orphan package")

    removed = await collect_garbage(
        any_store, {kept.key}, now=datetime.now(UTC) + timedelta(hours=2)
    )

    assert removed == [orphan.key]
    assert await keys(any_store) == {kept.key}


async def test_gc_keeps_a_young_unreferenced_blob_whose_row_may_not_be_committed_yet(
    any_store: BlobStore, put_blob: BlobPutter
) -> None:
    in_flight = await put_blob(any_store, b"upload in flight")

    removed = await collect_garbage(any_store, set(), min_age_seconds=3600)

    assert removed == []
    assert await keys(any_store) == {in_flight.key}


async def test_gc_dry_run_reports_without_deleting(
    any_store: BlobStore, put_blob: BlobPutter
) -> None:
    orphan = await put_blob(any_store, b"orphan package")

    removed = await collect_garbage(
        any_store, set(), dry_run=True, now=datetime.now(UTC) + timedelta(hours=2)
    )

    assert removed == [orphan.key]
    assert await any_store.exists(orphan.key)


async def test_gc_spares_a_blob_renewed_after_it_was_listed(
    any_store: BlobStore, put_blob: BlobPutter, monkeypatch: pytest.MonkeyPatch
) -> None:
    blob = await put_blob(any_store, b"re-uploaded package")
    now = datetime.now(UTC) + timedelta(hours=2)
    real_stat = any_store.stat

    async def stat_after_renewal(key: str) -> BlobInfo | None:
        # As if the same bytes were uploaded again between listing and deleting.
        info = await real_stat(key)
        return None if info is None else BlobInfo(info.key, info.size, now)

    monkeypatch.setattr(any_store, "stat", stat_after_renewal)

    removed = await collect_garbage(any_store, set(), now=now)

    assert removed == []
    assert await any_store.exists(blob.key)


async def test_gc_refuses_a_negative_age(any_store: BlobStore) -> None:
    with pytest.raises(ValueError, match="min_age_seconds"):
        await collect_garbage(any_store, set(), min_age_seconds=-1)
