from __future__ import annotations

import functools
import os
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx
import pytest

from marketplace.storage.base import BlobNotFound
from marketplace.storage.s3 import S3BlobStore, S3Config, parse_s3_url
from tests.storage.helpers import BlobMaker, BlobPutter

PACKAGE = b"\x1f\x8b" + os.urandom(150_000)
FILENAME = "demo-plugin-1.0.0.tar.gz"


def raw_client(store: S3BlobStore) -> Any:
    return store._client


def test_parse_s3_url_reads_bucket_prefix_endpoint_and_region() -> None:
    config = parse_s3_url("s3://plugins/prod/blobs?endpoint_url=http://minio:9000&region=eu-west-1")

    assert config == S3Config(
        bucket="plugins",
        prefix="prod/blobs/",
        endpoint_url="http://minio:9000",
        region="eu-west-1",
        addressing_style="path",
    )


def test_parse_s3_url_uses_automatic_addressing_for_aws_itself() -> None:
    config = parse_s3_url("s3://plugins?region=us-east-1")

    assert (config.endpoint_url, config.addressing_style, config.prefix) == (None, "auto", "")


def test_parse_s3_url_accepts_an_explicit_addressing_style_and_public_endpoint() -> None:
    config = parse_s3_url(
        "s3://plugins?endpoint_url=http://minio:9000&addressing_style=virtual"
        "&public_endpoint_url=https://s3.example.com"
    )

    assert config.addressing_style == "virtual"
    assert config.public_endpoint_url == "https://s3.example.com"


@pytest.mark.parametrize(
    "url",
    [
        "s3://plugins?endpoint=http://x",
        "s3://plugins?region=a&region=b",
        "s3://plugins?addressing_style=sideways",
        "s3://?region=us-east-1",
        "gs://plugins",
    ],
)
def test_parse_s3_url_refuses_malformed_urls(url: str) -> None:
    with pytest.raises(ValueError, match=r"storage URL|addressing_style"):
        parse_s3_url(url)


async def test_put_file_makes_the_object_exist_with_its_size(
    s3_store: S3BlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(s3_store, PACKAGE)

    assert await s3_store.exists(blob.key)
    info = await s3_store.stat(blob.key)
    assert info is not None
    assert (info.key, info.size) == (blob.key, len(PACKAGE))


async def test_put_file_stores_the_object_under_the_prefix_with_type_and_hash(
    s3_store: S3BlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(s3_store, PACKAGE)

    head = await anyio.to_thread.run_sync(
        lambda: raw_client(s3_store).head_object(
            Bucket=s3_store.config.bucket, Key=f"packages/{blob.key}"
        )
    )
    assert head["ContentType"] == "application/gzip"
    assert head["Metadata"] == {"sha256": blob.sha256}


async def test_putting_the_same_content_twice_succeeds_and_keeps_one_object(
    s3_store: S3BlobStore, put_blob: BlobPutter
) -> None:
    first = await put_blob(s3_store, PACKAGE)
    second = await put_blob(s3_store, PACKAGE)

    assert first.key == second.key
    assert [k async for k in s3_store.iter_keys()] == [first.key]


async def test_putting_an_existing_key_renews_its_last_modified(
    s3_store: S3BlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(s3_store, PACKAGE)
    before = await s3_store.stat(blob.key)
    await anyio.sleep(1.1)  # LastModified has one-second resolution

    await put_blob(s3_store, PACKAGE)

    after = await s3_store.stat(blob.key)
    assert before is not None
    assert after is not None
    assert after.modified_at > before.modified_at
    assert after.size == len(PACKAGE)


async def test_put_file_refuses_a_key_that_is_not_the_hash_of_the_file(
    s3_store: S3BlobStore, make_blob: BlobMaker
) -> None:
    blob, other = make_blob(PACKAGE), make_blob(b"other")

    with pytest.raises(ValueError, match="blob_key"):
        await s3_store.put_file(
            other.key, blob.path, content_type="application/gzip", sha256=blob.sha256
        )
    assert [k async for k in s3_store.iter_keys()] == []


async def test_delete_removes_the_object(s3_store: S3BlobStore, put_blob: BlobPutter) -> None:
    blob = await put_blob(s3_store, PACKAGE)

    await s3_store.delete(blob.key)

    assert not await s3_store.exists(blob.key)
    assert await s3_store.stat(blob.key) is None


async def test_delete_of_a_missing_object_succeeds(
    s3_store: S3BlobStore, make_blob: BlobMaker
) -> None:
    key = make_blob(PACKAGE).key

    await s3_store.delete(key)

    assert not await s3_store.exists(key)


async def test_iter_keys_lists_only_blob_keys_under_the_prefix(
    s3_store: S3BlobStore, put_blob: BlobPutter
) -> None:
    blobs = [await put_blob(s3_store, bytes([i]) * 10) for i in range(3)]
    client, bucket = raw_client(s3_store), s3_store.config.bucket
    for stray in ("packages/readme.txt", f"elsewhere/{blobs[0].key}"):
        await anyio.to_thread.run_sync(
            functools.partial(client.put_object, Bucket=bucket, Key=stray, Body=b"x")
        )

    assert sorted([k async for k in s3_store.iter_keys()]) == sorted(b.key for b in blobs)


async def test_iter_keys_follows_continuation_pages(
    s3_store: S3BlobStore, put_blob: BlobPutter, monkeypatch: pytest.MonkeyPatch
) -> None:
    blobs = [await put_blob(s3_store, bytes([i]) * 10) for i in range(5)]
    client = raw_client(s3_store)
    list_page = client.list_objects_v2
    monkeypatch.setattr(client, "list_objects_v2", lambda **kw: list_page(MaxKeys=2, **kw))

    assert sorted([k async for k in s3_store.iter_keys()]) == sorted(b.key for b in blobs)


async def test_iter_bytes_reads_the_requested_range(
    s3_store: S3BlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(s3_store, PACKAGE)

    data = b"".join([c async for c in s3_store.iter_bytes(blob.key, start=1000, length=90_000)])

    assert data == PACKAGE[1000:91_000]


async def test_iter_bytes_of_a_missing_object_raises_blob_not_found(
    s3_store: S3BlobStore, make_blob: BlobMaker
) -> None:
    with pytest.raises(BlobNotFound):
        async for _ in s3_store.iter_bytes(make_blob(PACKAGE).key):
            pass


async def test_presigned_url_downloads_the_exact_bytes_as_a_named_attachment(
    s3_store: S3BlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(s3_store, PACKAGE)
    url, _ = await s3_store.presigned_url(blob.key, filename=FILENAME, expires_in=900)

    async with httpx.AsyncClient() as client:
        response = await client.get(url)

    assert response.status_code == 200
    assert response.content == PACKAGE
    assert response.headers["content-disposition"] == (
        f"attachment; filename=\"{FILENAME}\"; filename*=UTF-8''{FILENAME}"
    )


async def test_presigned_url_without_its_signature_is_refused(
    s3_store: S3BlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(s3_store, PACKAGE)
    url, _ = await s3_store.presigned_url(blob.key, filename=FILENAME, expires_in=900)
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items() if not k.startswith("X-Amz-")}

    async with httpx.AsyncClient() as client:
        response = await client.get(parts._replace(query=urlencode(query)).geturl())

    assert response.status_code == 403
    assert response.content != PACKAGE


async def test_presigned_url_signs_the_key_filename_and_lifetime(
    s3_store: S3BlobStore, make_blob: BlobMaker
) -> None:
    key = make_blob(PACKAGE).key

    url, expires_at = await s3_store.presigned_url(key, filename=FILENAME, expires_in=900)

    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert parts.path == f"/{s3_store.config.bucket}/packages/{key}"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert query["X-Amz-Expires"] == "900"
    assert query["response-content-disposition"].startswith(f'attachment; filename="{FILENAME}"')
    assert len(query["X-Amz-Signature"]) == 64
    signed_at = datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    assert expires_at == signed_at + timedelta(seconds=900)


@pytest.mark.parametrize("seconds", [0, 7 * 24 * 3600 + 1])
async def test_presigned_url_refuses_a_lifetime_s3_cannot_sign(
    s3_store: S3BlobStore, make_blob: BlobMaker, seconds: int
) -> None:
    with pytest.raises(ValueError, match="expires_in"):
        await s3_store.presigned_url(make_blob(PACKAGE).key, filename=FILENAME, expires_in=seconds)


async def test_presigned_url_uses_the_public_endpoint_when_configured(
    s3_store: S3BlobStore, make_blob: BlobMaker, moto_endpoint: str
) -> None:
    config = parse_s3_url(
        f"s3://{s3_store.config.bucket}?endpoint_url={moto_endpoint}&region=us-east-1"
        "&public_endpoint_url=https://downloads.example.com"
    )
    store = S3BlobStore(config)
    try:
        url, _ = await store.presigned_url(make_blob(PACKAGE).key, filename=FILENAME, expires_in=60)
    finally:
        await store.aclose()

    assert url.startswith(f"https://downloads.example.com/{config.bucket}/")


async def test_remove_partial_uploads_aborts_unfinished_multipart_uploads(
    s3_store: S3BlobStore, make_blob: BlobMaker
) -> None:
    client, bucket = raw_client(s3_store), s3_store.config.bucket
    key = f"packages/{make_blob(PACKAGE).key}"
    await anyio.to_thread.run_sync(lambda: client.create_multipart_upload(Bucket=bucket, Key=key))
    await anyio.sleep(1.1)  # Initiated has one-second resolution

    removed = await s3_store.remove_partial_uploads(older_than_seconds=1)

    uploads = await anyio.to_thread.run_sync(lambda: client.list_multipart_uploads(Bucket=bucket))
    assert removed == 1
    assert uploads.get("Uploads", []) == []


async def test_remove_partial_uploads_keeps_a_fresh_multipart_upload(
    s3_store: S3BlobStore, make_blob: BlobMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, bucket = raw_client(s3_store), s3_store.config.bucket
    key = f"packages/{make_blob(PACKAGE).key}"
    await anyio.to_thread.run_sync(lambda: client.create_multipart_upload(Bucket=bucket, Key=key))
    list_uploads = client.list_multipart_uploads

    def started_now(**kwargs: Any) -> Any:
        # moto reports every upload as initiated in 2010; real S3 reports the true time.
        page = list_uploads(**kwargs)
        for upload in page.get("Uploads", []):
            upload["Initiated"] = datetime.now(UTC)
        return page

    monkeypatch.setattr(client, "list_multipart_uploads", started_now)

    removed = await s3_store.remove_partial_uploads(older_than_seconds=3600)

    uploads = await anyio.to_thread.run_sync(lambda: list_uploads(Bucket=bucket))
    assert removed == 0
    assert [u["Key"] for u in uploads["Uploads"]] == [key]


async def test_ensure_bucket_is_idempotent(s3_store: S3BlobStore) -> None:
    await s3_store.ensure_bucket()

    buckets = await anyio.to_thread.run_sync(lambda: raw_client(s3_store).list_buckets())
    assert s3_store.config.bucket in [b["Name"] for b in buckets["Buckets"]]
