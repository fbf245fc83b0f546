from __future__ import annotations

import hashlib

import pytest

from marketplace.storage.base import (
    InvalidBlobKey,
    blob_key,
    check_blob_key,
    check_filename,
    content_disposition,
    is_blob_key,
    sha256_of_key,
)

SHA = hashlib.sha256(b"package").hexdigest()


def test_blob_key_shards_by_the_first_two_bytes_of_the_hash() -> None:
    assert blob_key(SHA) == f"{SHA[:2]}/{SHA[2:4]}/{SHA}"


def test_blob_key_is_the_same_for_the_same_bytes() -> None:
    assert blob_key(hashlib.sha256(b"package").hexdigest()) == blob_key(SHA)


@pytest.mark.parametrize("digest", ["", SHA.upper(), SHA[:-1], SHA + "0", "g" * 64])
def test_blob_key_refuses_what_is_not_a_lowercase_sha256(digest: str) -> None:
    with pytest.raises(ValueError, match="sha256"):
        blob_key(digest)


def test_sha256_of_key_returns_the_digest() -> None:
    assert sha256_of_key(blob_key(SHA)) == SHA


@pytest.mark.parametrize(
    "key",
    [
        "../../etc/passwd",
        f"{SHA[:2]}/{SHA[2:4]}/../../{SHA}",
        f"/{SHA[:2]}/{SHA[2:4]}/{SHA}",
        f"{SHA[:2]}/{SHA[2:4]}/{SHA}/",
        f"{SHA[:2]}\\{SHA[2:4]}\\{SHA}",
        blob_key(SHA).upper(),
        f"00/00/{SHA}",
        SHA,
        "",
    ],
)
def test_check_blob_key_refuses_anything_but_a_content_key(key: str) -> None:
    assert not is_blob_key(key)
    with pytest.raises(InvalidBlobKey):
        check_blob_key(key)


@pytest.mark.parametrize("name", ["", "a/b.tgz", "..", "a\\b", "x\r\nSet-Cookie: a=b", "a" * 256])
def test_check_filename_refuses_paths_controls_and_overlong_names(name: str) -> None:
    with pytest.raises(ValueError, match="filename"):
        check_filename(name)


def test_content_disposition_gives_ascii_fallback_and_exact_utf8_name() -> None:
    assert content_disposition('插件 "x".tar.gz') == (
        'attachment; filename="__ _x_.tar.gz"; '
        "filename*=UTF-8''%E6%8F%92%E4%BB%B6%20%22x%22.tar.gz"
    )
