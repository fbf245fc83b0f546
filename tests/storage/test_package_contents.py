"""Reviewers' package reads (publishing.contents) over each real blob store: local files and
S3, whose chunks come from threads of their own."""

from __future__ import annotations

import hashlib
import random

import pytest

from marketplace.publishing.contents import PackageUnreadable, file_diffs, package_listing
from marketplace.storage.base import BlobStore, blob_key
from tests.packages.tarballs import file, folder, tar_gz
from tests.storage.helpers import BlobPutter

# Incompressible and over one 64 KiB chunk: the stores hand the package over in pieces.
BIG = random.Random(0).randbytes(200_000)  # noqa: S311 - reproducible test data
BEFORE = tar_gz([folder("p/"), file("p/a.txt", b"one\n"), file("p/big.bin", BIG)])
AFTER = tar_gz([file("a.txt", b"two\n"), file("big.bin", BIG)])


async def test_listing_and_diffs_read_the_stored_package(
    any_store: BlobStore, put_blob: BlobPutter
) -> None:
    before, after = await put_blob(any_store, BEFORE), await put_blob(any_store, AFTER)
    listing = await package_listing(any_store, before.key)
    assert [(e.path, e.size, e.sha256) for e in listing] == [
        ("a.txt", 4, hashlib.sha256(b"one\n").hexdigest()),
        ("big.bin", len(BIG), hashlib.sha256(BIG).hexdigest()),
    ]
    diffs = await file_diffs(any_store, before.key, after.key, ["a.txt", "big.bin"])
    assert diffs["a.txt"].diff == "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"
    assert (diffs["big.bin"].change, diffs["big.bin"].kind) == ("unchanged", "identical")


async def test_a_missing_package_is_unreadable(any_store: BlobStore) -> None:
    with pytest.raises(PackageUnreadable, match="missing from storage"):
        await package_listing(any_store, blob_key("0" * 64))
