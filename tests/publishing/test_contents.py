"""Stored packages read for reviewers: file listings and text diffs, streamed, size-capped."""

from __future__ import annotations

import hashlib
import tracemalloc

import pytest

from marketplace.publishing.contents import (
    FileEntry,
    PackageUnreadable,
    file_diffs,
    package_listing,
    scan_package,
)
from tests.packages.tarballs import MIB, file, folder, hardlink, symlink, tar_gz
from tests.publishing.fake_store import (
    LargePackageStore,
    MemoryStore,
    sha256_of_random,
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


BASE = tar_gz(
    [
        folder("pkg/"),
        file("pkg/manifest.json", b'{"id": "demo"}'),
        file("pkg/index.js", b"one\ntwo\nthree\n"),
        file("pkg/logo.bin", b"\x89PNG\0\1"),
        file("pkg/old.txt", b"going away\n"),
        symlink("pkg/current", "index.js"),
        hardlink("pkg/copy.js", "pkg/index.js"),
    ]
)
# No top-level folder this time: the paths must still line up with BASE's.
HEAD = tar_gz(
    [
        file("manifest.json", b'{"id": "demo"}'),
        file("index.js", b"one\n2\nthree\n"),
        file("logo.bin", b"\x89PNG\0\2\3"),
        file("notes.txt", b"new file\n"),
        file("latin1.txt", "caf\u00e9\n".encode("latin-1")),
        symlink("current", "notes.txt"),
    ]
)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore({"base": BASE, "head": HEAD, "junk": b"not a package at all"})


async def test_listing_strips_the_root_folder_and_hashes_every_file(store: MemoryStore) -> None:
    listing = await package_listing(store.as_store(), "base")
    assert listing == [
        FileEntry("copy.js", 14, sha(b"one\ntwo\nthree\n")),
        FileEntry("current", 0, sha(b"index.js"), link="index.js"),
        FileEntry("index.js", 14, sha(b"one\ntwo\nthree\n")),
        FileEntry("logo.bin", 6, sha(b"\x89PNG\0\1")),
        FileEntry("manifest.json", 14, sha(b'{"id": "demo"}')),
        FileEntry("old.txt", 11, sha(b"going away\n")),
    ]
    assert store.closed == 1  # the blob's iterator is closed after the walk


async def test_listing_without_a_root_folder_keeps_the_paths(store: MemoryStore) -> None:
    paths = [entry.path for entry in await package_listing(store.as_store(), "head")]
    assert paths == ["current", "index.js", "latin1.txt", "logo.bin", "manifest.json", "notes.txt"]


async def test_empty_chunks_from_storage_are_not_the_end_of_the_blob() -> None:
    store = MemoryStore({"head": HEAD}, chunk=7, gaps=True)
    listing = await package_listing(store.as_store(), "head")
    assert len(listing) == 6


async def test_a_missing_blob_is_unreadable(store: MemoryStore) -> None:
    with pytest.raises(PackageUnreadable, match="missing from storage"):
        await package_listing(store.as_store(), "nope")


async def test_a_blob_that_is_not_a_package_is_unreadable(store: MemoryStore) -> None:
    with pytest.raises(PackageUnreadable, match="not a gzip file"):
        await package_listing(store.as_store(), "junk")
    assert store.closed == 1


async def test_scan_keeps_only_the_bytes_asked_for_within_the_cap(store: MemoryStore) -> None:
    scan = await scan_package(
        store.as_store(), "base", keep={"index.js", "old.txt", "absent"}, max_keep_bytes=12
    )
    # index.js (14 bytes) is over the cap; old.txt (11) is kept; the root is stripped.
    assert scan.contents == {"old.txt": b"going away\n"}
    assert scan.root == "pkg"
    assert scan.hard_links == {"copy.js": "index.js"}


async def test_a_changed_text_file_gets_a_unified_diff(store: MemoryStore) -> None:
    diffs = await file_diffs(store.as_store(), "base", "head", ["index.js"])
    diff = diffs["index.js"]
    assert (diff.change, diff.kind) == ("changed", "text")
    assert diff.diff == (
        "--- a/index.js\n+++ b/index.js\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
    )
    assert diff.before == FileEntry("index.js", 14, sha(b"one\ntwo\nthree\n"))
    assert diff.after == FileEntry("index.js", 12, sha(b"one\n2\nthree\n"))


async def test_added_and_removed_files_diff_against_dev_null(store: MemoryStore) -> None:
    diffs = await file_diffs(store.as_store(), "base", "head", ["notes.txt", "old.txt"])
    assert diffs["notes.txt"].change == "added"
    assert diffs["notes.txt"].diff == "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+new file\n"
    assert diffs["notes.txt"].before is None
    assert diffs["old.txt"].change == "removed"
    assert diffs["old.txt"].diff == "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-going away\n"
    assert diffs["old.txt"].after is None


async def test_binary_files_show_hashes_and_sizes_only(store: MemoryStore) -> None:
    diffs = await file_diffs(store.as_store(), "base", "head", ["logo.bin", "latin1.txt"])
    logo = diffs["logo.bin"]
    assert (logo.change, logo.kind, logo.diff) == ("changed", "binary", "")
    assert logo.before is not None and logo.after is not None
    assert (logo.before.size, logo.before.sha256) == (6, sha(b"\x89PNG\0\1"))
    assert (logo.after.size, logo.after.sha256) == (7, sha(b"\x89PNG\0\2\3"))
    # Not UTF-8 counts as binary too (no NUL byte in it).
    assert (diffs["latin1.txt"].change, diffs["latin1.txt"].kind) == ("added", "binary")


async def test_a_file_over_the_cap_is_too_large_to_show(store: MemoryStore) -> None:
    diffs = await file_diffs(store.as_store(), "base", "head", ["index.js"], max_file_bytes=13)
    diff = diffs["index.js"]
    assert (diff.change, diff.kind, diff.diff) == ("changed", "too_large", "")
    assert diff.before is not None and diff.before.size == 14


async def test_files_past_the_total_budget_are_omitted_in_path_order(store: MemoryStore) -> None:
    # index.js needs 14 + 12 bytes, notes.txt 9: a budget of 30 fits only the first.
    diffs = await file_diffs(
        store.as_store(), "base", "head", ["notes.txt", "index.js"], max_total_bytes=30
    )
    assert diffs["index.js"].kind == "text"
    assert (diffs["notes.txt"].kind, diffs["notes.txt"].diff) == ("omitted", "")


async def test_links_diff_as_their_target_and_hard_links_as_their_bytes(
    store: MemoryStore,
) -> None:
    diffs = await file_diffs(store.as_store(), "base", "head", ["current", "copy.js"])
    assert diffs["current"].diff == (
        "--- a/current\n+++ b/current\n@@ -1 +1 @@\n"
        "-symbolic link to index.js\n+symbolic link to notes.txt\n"
    )
    assert diffs["copy.js"].change == "removed"
    assert "-two\n" in diffs["copy.js"].diff


async def test_identical_and_unknown_paths(store: MemoryStore) -> None:
    diffs = await file_diffs(store.as_store(), "base", "head", ["manifest.json", "nowhere"])
    assert list(diffs) == ["manifest.json"]
    assert (diffs["manifest.json"].change, diffs["manifest.json"].kind) == (
        "unchanged",
        "identical",
    )


async def test_without_a_base_every_file_is_added(store: MemoryStore) -> None:
    diffs = await file_diffs(store.as_store(), None, "head", ["notes.txt"])
    assert (diffs["notes.txt"].change, diffs["notes.txt"].kind) == ("added", "text")
    assert await file_diffs(store.as_store(), None, None, ["notes.txt"]) == {}


async def test_a_missing_final_newline_and_crlf_changes_show() -> None:
    before = tar_gz([file("a.txt", b"x\r\ny")])
    after = tar_gz([file("a.txt", b"x\ny\n")])
    store = MemoryStore({"b": before, "h": after})
    diff = (await file_diffs(store.as_store(), "b", "h", ["a.txt"]))["a.txt"].diff
    assert diff == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-x\r\n-y\n\\ No newline at end of file\n"
        "+x\n+y\n"
    )


async def test_diffs_of_an_unreadable_package_raise(store: MemoryStore) -> None:
    with pytest.raises(PackageUnreadable):
        await file_diffs(store.as_store(), "base", "junk", ["index.js"])


# A package with a file far larger than anything the reader may hold.
LARGE = 48 * MIB
LARGE_FILES = {"pkg/manifest.json": (100, 1), "pkg/data.bin": (LARGE, 2), "pkg/b.txt": (10, 3)}


async def test_listing_a_large_package_holds_a_small_fraction_of_it_in_memory() -> None:
    store = LargePackageStore(LARGE_FILES)
    tracemalloc.start()
    try:
        listing = await package_listing(store.as_store(), "any")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert store.compressed > LARGE  # random bytes: the whole blob really went through
    entries = {entry.path: entry for entry in listing}
    assert entries["data.bin"] == FileEntry("data.bin", LARGE, sha256_of_random(LARGE, 2))
    assert set(entries) == {"manifest.json", "data.bin", "b.txt"}
    assert peak < 4 * MIB, f"peak {peak} bytes while reading a {LARGE}-byte file"


async def test_diffing_a_large_file_reports_it_too_large_without_holding_it() -> None:
    store = LargePackageStore(LARGE_FILES)
    tracemalloc.start()
    try:
        diffs = await file_diffs(store.as_store(), None, "any", ["data.bin", "b.txt"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (diffs["data.bin"].change, diffs["data.bin"].kind) == ("added", "too_large")
    assert diffs["b.txt"].kind == "binary"  # random bytes are not UTF-8
    assert peak < 4 * MIB
