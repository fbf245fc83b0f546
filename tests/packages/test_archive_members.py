"""iter_members and root_folder: the guarded walk that readers of stored packages share."""

from __future__ import annotations

import io

import pytest

from marketplace.packages.archive import (
    ArchiveError,
    ArchiveLimits,
    inspect_archive,
    iter_members,
    root_folder,
)
from tests.packages.tarballs import (
    MIB,
    LazyGzip,
    file,
    folder,
    hardlink,
    special,
    symlink,
    tar_gz,
    zero_file_stream,
)

LIMITS = ArchiveLimits.for_package(100 * MIB)


def walk(data: bytes, limits: ArchiveLimits = LIMITS) -> list[tuple[str, str, int, str, bytes]]:
    """(name, kind, size, link, bytes) of every member; bytes read while the walk is there."""
    seen = []
    for member in iter_members(io.BytesIO(data), limits):
        content = member.content.read() if member.content is not None else b""
        seen.append((member.name, member.kind, member.size, member.link, content))
    return seen


def test_members_come_in_archive_order_with_normalised_names_and_their_bytes() -> None:
    data = tar_gz(
        [
            folder("pkg/"),
            file("pkg/./a.txt", b"alpha"),
            symlink("pkg/link", "a.txt"),
            hardlink("pkg/hard", "pkg/a.txt"),
            file("pkg//sub/b.bin", b"\0\1"),
        ]
    )
    assert walk(data) == [
        ("pkg", "dir", 0, "", b""),
        ("pkg/a.txt", "file", 5, "", b"alpha"),
        ("pkg/link", "symlink", 0, "a.txt", b""),
        ("pkg/hard", "hardlink", 0, "pkg/a.txt", b""),
        ("pkg/sub/b.bin", "file", 2, "", b"\0\1"),
    ]


def test_a_member_count_over_the_limit_is_refused() -> None:
    data = tar_gz([file(f"f{i}", b"x") for i in range(4)])
    with pytest.raises(ArchiveError, match="more than 3 members"):
        walk(data, ArchiveLimits(max_unpacked_bytes=MIB, max_members=3))


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (file("../escape", b"x"), "unsafe path"),
        (file("/etc/passwd", b"x"), "unsafe path"),
        (special("dev", b"3"), "unsupported member type"),
    ],
)
def test_unsafe_members_are_refused_as_inspect_archive_refuses_them(
    member: object, message: str
) -> None:
    data = tar_gz([member])  # type: ignore[list-item]
    with pytest.raises(ArchiveError, match=message):
        walk(data)


def test_not_gzip_is_refused() -> None:
    with pytest.raises(ArchiveError, match="not a gzip file"):
        walk(b"plain text, not a package")


def _drain(source: LazyGzip, limits: ArchiveLimits) -> None:
    for member in iter_members(source, limits):
        if member.content is not None:
            while member.content.read(MIB):
                pass


def test_a_bomb_is_refused_before_it_is_inflated() -> None:
    source = LazyGzip(zero_file_stream("big", 2048 * MIB))
    with pytest.raises(ArchiveError, match="decompression bomb"):
        _drain(source, ArchiveLimits(max_unpacked_bytes=64 * MIB))
    assert source.produced < 400 * MIB


@pytest.mark.parametrize(
    ("kinds", "root"),
    [
        ({"pkg": "dir", "pkg/a": "file"}, "pkg"),
        ({"pkg/a": "file", "pkg/b/c": "file"}, "pkg"),  # the folder itself is implied
        ({"pkg": "dir", "pkg/a": "file", "other": "dir"}, None),  # two top-level names
        ({"a": "file"}, None),  # a single file is not a folder
        ({"pkg": "symlink"}, None),
        ({"manifest.json": "file", "index.js": "file"}, None),
        ({}, None),
    ],
)
def test_root_folder_is_the_single_top_level_folder(
    kinds: dict[str, str], root: str | None
) -> None:
    assert root_folder(kinds) == root


def test_root_folder_agrees_with_what_inspect_archive_strips() -> None:
    data = tar_gz([folder("pkg"), file("pkg/manifest.json", b"{}"), file("pkg/x/y", b"1")])
    info = inspect_archive(io.BytesIO(data), LIMITS, require_manifest=False)
    kinds = {name: kind for name, kind, *_ in walk(data)}
    assert root_folder(kinds) == info.root_prefix == "pkg"
