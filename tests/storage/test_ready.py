"""`check_ready`: what /readyz asks a store (a missing bucket or folder is not ready)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from marketplace.storage.base import StoreNotReady, blob_key
from marketplace.storage.local import LocalBlobStore
from marketplace.storage.s3 import S3BlobStore, parse_s3_url


async def test_a_local_store_whose_folder_can_be_made_is_ready(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "not-yet" / "blobs", secret="s", public_url="http://x")
    await store.check_ready()  # the first put makes the folders
    assert not (tmp_path / "not-yet").exists()  # and the check made nothing


async def test_a_local_store_under_a_file_is_not_ready(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    store = LocalBlobStore(tmp_path / "a-file" / "blobs", secret="s", public_url="http://x")
    with pytest.raises(StoreNotReady, match="cannot be written"):
        await store.check_ready()


async def test_an_s3_store_with_its_bucket_is_ready_and_leaves_no_blob(
    s3_store: S3BlobStore,
) -> None:
    await s3_store.check_ready()
    await s3_store.check_ready()  # the write probe is not repeated within minutes
    assert [key async for key in s3_store.iter_keys()] == []


async def test_an_s3_store_without_its_bucket_is_not_ready(
    moto_endpoint: str, aws_env: None
) -> None:
    bucket = f"missing-{uuid.uuid4().hex[:12]}"
    store = S3BlobStore(
        parse_s3_url(f"s3://{bucket}?endpoint_url={moto_endpoint}&region=us-east-1")
    )
    try:
        with pytest.raises(StoreNotReady, match=f"bucket {bucket} does not exist"):
            await store.check_ready()
        # What /readyz asked before: a missing blob looked the same as a missing bucket.
        assert await store.exists(blob_key("0" * 64)) is False
    finally:
        await store.aclose()
