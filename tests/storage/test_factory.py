from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from marketplace.config import Settings
from marketplace.storage.factory import make_blob_store
from marketplace.storage.local import LocalBlobStore
from marketplace.storage.s3 import S3BlobStore


def settings(tmp_path: Path, storage_url: str = "") -> Settings:
    return Settings(
        data_dir=tmp_path,
        storage_url=storage_url,
        secret_key=SecretStr("configured-secret"),
        public_url="https://market.example.com/",
    )


def test_default_storage_is_local_blobs_in_the_data_folder(tmp_path: Path) -> None:
    store = make_blob_store(settings(tmp_path))

    assert isinstance(store, LocalBlobStore)
    assert store.root == (tmp_path / "blobs").resolve()
    assert store.public_url == "https://market.example.com"


def test_local_store_signs_with_the_configured_secret(tmp_path: Path) -> None:
    store = make_blob_store(settings(tmp_path, f"file://{tmp_path / 'elsewhere'}"))
    twin = LocalBlobStore(tmp_path, secret="configured-secret", public_url="http://x")

    assert isinstance(store, LocalBlobStore)
    assert store.root == (tmp_path / "elsewhere").resolve()
    assert store.signer.sign("k", 1, "f") == twin.signer.sign("k", 1, "f")


async def test_s3_url_makes_an_s3_store(tmp_path: Path, aws_env: None) -> None:
    store = make_blob_store(
        settings(tmp_path, "s3://plugins?endpoint_url=http://127.0.0.1:9&region=eu-west-1")
    )
    try:
        assert isinstance(store, S3BlobStore)
        assert (store.config.bucket, store.config.region) == ("plugins", "eu-west-1")
    finally:
        await store.aclose()


@pytest.mark.parametrize("url", ["gs://plugins", "/srv/blobs", "file://"])
def test_unsupported_storage_url_is_refused(tmp_path: Path, url: str) -> None:
    with pytest.raises(ValueError, match=r"storage URL|scheme"):
        make_blob_store(settings(tmp_path, url))
