from __future__ import annotations

import os
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from marketplace.storage.local import LocalBlobStore
from tests.storage.helpers import BlobPutter, FakeClock

PACKAGE = b"\x1f\x8b" + os.urandom(200_000)
FILENAME = "demo-plugin-1.0.0.tar.gz"


async def signed_url(store: LocalBlobStore, key: str, *, filename: str = FILENAME) -> str:
    url, _ = await store.presigned_url(key, filename=filename, expires_in=900)
    return url


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    query.update(changes)
    return parts._replace(query=urlencode(query)).geturl()


def assert_refused(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status
    body = response.json()
    assert body["success"] is False
    assert body["error"]["code"] == code


@pytest.fixture
async def url(local_store: LocalBlobStore, put_blob: BlobPutter) -> str:
    blob = await put_blob(local_store, PACKAGE)
    return await signed_url(local_store, blob.key)


async def test_signed_link_serves_the_exact_bytes_with_etag_and_length(
    client: httpx.AsyncClient, local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)

    response = await client.get(await signed_url(local_store, blob.key))

    assert response.status_code == 200
    assert response.content == PACKAGE
    assert response.headers["etag"] == f'"{blob.sha256}"'
    assert response.headers["content-length"] == str(len(PACKAGE))
    assert response.headers["accept-ranges"] == "bytes"


async def test_signed_link_downloads_as_gzip_attachment_with_its_filename(
    client: httpx.AsyncClient, url: str
) -> None:
    response = await client.get(url)

    assert response.headers["content-type"] == "application/gzip"
    assert response.headers["content-disposition"] == (
        f"attachment; filename=\"{FILENAME}\"; filename*=UTF-8''{FILENAME}"
    )
    assert response.headers["cache-control"] == "private, no-transform"


async def test_signed_link_keeps_a_non_ascii_filename_exact(
    client: httpx.AsyncClient, local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)

    response = await client.get(await signed_url(local_store, blob.key, filename="插件 1.0.tgz"))

    assert response.status_code == 200
    assert response.headers["content-disposition"].endswith(
        "filename*=UTF-8''%E6%8F%92%E4%BB%B6%201.0.tgz"
    )


async def test_head_answers_the_headers_without_a_body(client: httpx.AsyncClient, url: str) -> None:
    response = await client.head(url)

    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["content-length"] == str(len(PACKAGE))
    assert response.headers["etag"].startswith('"')


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [
        ("bytes=100-199", 100, 199),
        ("bytes=199990-", 199990, len(PACKAGE) - 1),
        ("bytes=-50", len(PACKAGE) - 50, len(PACKAGE) - 1),
        ("bytes=5-99999999", 5, len(PACKAGE) - 1),
    ],
)
async def test_range_answers_206_with_exactly_those_bytes(
    client: httpx.AsyncClient, url: str, header: str, start: int, end: int
) -> None:
    response = await client.get(url, headers={"Range": header})

    assert response.status_code == 206
    assert response.content == PACKAGE[start : end + 1]
    assert response.headers["content-range"] == f"bytes {start}-{end}/{len(PACKAGE)}"
    assert response.headers["content-length"] == str(end - start + 1)


async def test_head_with_range_answers_206_without_a_body(
    client: httpx.AsyncClient, url: str
) -> None:
    response = await client.head(url, headers={"Range": "bytes=0-9"})

    assert response.status_code == 206
    assert response.content == b""
    assert response.headers["content-range"] == f"bytes 0-9/{len(PACKAGE)}"


@pytest.mark.parametrize("header", [f"bytes={len(PACKAGE)}-", "bytes=-0"])
async def test_unsatisfiable_range_answers_416_with_the_size(
    client: httpx.AsyncClient, url: str, header: str
) -> None:
    response = await client.get(url, headers={"Range": header})

    assert_refused(response, 416, "RANGE_NOT_SATISFIABLE")
    assert response.headers["content-range"] == f"bytes */{len(PACKAGE)}"


@pytest.mark.parametrize("header", ["bytes=0-1,5-6", "items=0-5", "bytes=9-3", "bytes=x-"])
async def test_malformed_or_multiple_ranges_are_ignored_for_the_whole_file(
    client: httpx.AsyncClient, url: str, header: str
) -> None:
    response = await client.get(url, headers={"Range": header})

    assert response.status_code == 200
    assert response.content == PACKAGE


async def test_if_range_with_another_etag_sends_the_whole_file(
    client: httpx.AsyncClient, url: str
) -> None:
    response = await client.get(url, headers={"Range": "bytes=0-9", "If-Range": '"stale"'})

    assert response.status_code == 200
    assert response.content == PACKAGE


async def test_if_range_with_the_current_etag_honours_the_range(
    client: httpx.AsyncClient, url: str
) -> None:
    etag = (await client.head(url)).headers["etag"]

    response = await client.get(url, headers={"Range": "bytes=0-9", "If-Range": etag})

    assert response.status_code == 206
    assert response.content == PACKAGE[:10]


@pytest.mark.parametrize("form", ["{etag}", "W/{etag}", '"other", {etag}', "*"])
async def test_if_none_match_with_the_etag_answers_304(
    client: httpx.AsyncClient, url: str, form: str
) -> None:
    etag = (await client.head(url)).headers["etag"]

    response = await client.get(url, headers={"If-None-Match": form.format(etag=etag)})

    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["etag"] == etag


async def test_if_none_match_with_another_etag_sends_the_file(
    client: httpx.AsyncClient, url: str
) -> None:
    response = await client.get(url, headers={"If-None-Match": '"other"'})

    assert response.status_code == 200
    assert response.content == PACKAGE


async def test_tampered_signature_is_forbidden(client: httpx.AsyncClient, url: str) -> None:
    sig = parse_qs(urlsplit(url).query)["sig"][0]
    forged = ("0" if sig[0] != "0" else "1") + sig[1:]

    response = await client.get(with_query(url, sig=forged))

    assert_refused(response, 403, "FORBIDDEN")
    assert response.json()["error"]["details"] == {"reason": "invalid_signature"}


async def test_link_signed_for_another_blob_is_forbidden(
    client: httpx.AsyncClient, local_store: LocalBlobStore, put_blob: BlobPutter, url: str
) -> None:
    other = await put_blob(local_store, b"another package")
    parts = urlsplit(url)

    response = await client.get(parts._replace(path=f"/api/v1/blobs/{other.key}").geturl())

    assert_refused(response, 403, "FORBIDDEN")


async def test_tampered_filename_is_forbidden(client: httpx.AsyncClient, url: str) -> None:
    response = await client.get(with_query(url, filename="evil.exe"))

    assert_refused(response, 403, "FORBIDDEN")


@pytest.mark.parametrize("expires", ["9999999999", "0", "-1", "abc", " 1800000900"])
async def test_tampered_expiry_is_forbidden(
    client: httpx.AsyncClient, url: str, expires: str
) -> None:
    response = await client.get(with_query(url, expires=expires))

    assert_refused(response, 403, "FORBIDDEN")


@pytest.mark.parametrize("missing", ["sig", "expires", "filename"])
async def test_link_missing_a_signed_part_is_forbidden(
    client: httpx.AsyncClient, url: str, missing: str
) -> None:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items() if k != missing}

    response = await client.get(parts._replace(query=urlencode(query)).geturl())

    assert_refused(response, 403, "FORBIDDEN")


async def test_link_signed_with_another_secret_is_forbidden(
    client: httpx.AsyncClient, local_store: LocalBlobStore, put_blob: BlobPutter, clock: FakeClock
) -> None:
    blob = await put_blob(local_store, PACKAGE)
    stranger = LocalBlobStore(
        local_store.root, secret="another-secret", public_url="http://testserver", clock=clock
    )

    response = await client.get(await signed_url(stranger, blob.key))

    assert_refused(response, 403, "FORBIDDEN")


async def test_expired_link_is_forbidden(
    client: httpx.AsyncClient, url: str, clock: FakeClock
) -> None:
    clock.now += 901

    response = await client.get(url)

    assert_refused(response, 403, "FORBIDDEN")
    assert response.json()["error"]["details"] == {"reason": "expired"}


async def test_link_works_until_its_last_second(
    client: httpx.AsyncClient, url: str, clock: FakeClock
) -> None:
    clock.now += 900

    response = await client.get(url)

    assert response.status_code == 200


async def test_valid_link_to_a_deleted_blob_is_not_found(
    client: httpx.AsyncClient, local_store: LocalBlobStore, put_blob: BlobPutter
) -> None:
    blob = await put_blob(local_store, PACKAGE)
    url = await signed_url(local_store, blob.key)
    await local_store.delete(blob.key)

    response = await client.get(url)

    assert_refused(response, 404, "NOT_FOUND")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/blobs/..%2F..%2Fsecret.key",
        "/api/v1/blobs/ab/cd/..%2F..%2F..%2Fsecret.key",
        "/api/v1/blobs/%2Fetc%2Fpasswd",
        "/api/v1/blobs/ab/cd/%2e%2e/%2e%2e/x",
    ],
)
async def test_key_that_could_leave_the_blob_folder_is_not_found(
    client: httpx.AsyncClient, local_store: LocalBlobStore, path: str
) -> None:
    (local_store.root.parent / "secret.key").write_text("do not serve")

    response = await client.get(f"{path}?expires=1900000000&filename=x&sig={'0' * 64}")

    # No route takes them (a key is three plain segments), or the route finds no such key.
    assert response.status_code == 404
    assert "do not serve" not in response.text
