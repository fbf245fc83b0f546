from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marketplace.packages.archive import (
    GIB,
    MIB,
    ArchiveError,
    ArchiveInfo,
    ArchiveLimits,
    inspect_archive,
    load_manifest,
    safe_extract,
)
from tests.packages.tarballs import (
    CountingReader,
    LazyGzip,
    file,
    folder,
    hardlink,
    header_block,
    manifest_file,
    many_empty_files,
    package,
    special,
    symlink,
    tar_bytes,
    tar_gz,
    zero_file_stream,
)

LIMITS = ArchiveLimits.for_package(100 * MIB)
MANIFEST = {"id": "demo", "version": "1.0.0", "main": "index.js", "category": "ai"}
_FUZZ_BASE = tar_bytes(
    [
        folder("pkg"),
        manifest_file(MANIFEST, "pkg/manifest.json"),
        file("pkg/" + "long" * 40, b"abc" * 100),
        symlink("pkg/link", "manifest.json"),
        hardlink("pkg/hard", "pkg/manifest.json"),
    ]
)


def inspect(data: bytes, limits: ArchiveLimits = LIMITS) -> ArchiveInfo:
    return inspect_archive(io.BytesIO(data), limits)


def refusal(data: bytes, limits: ArchiveLimits = LIMITS) -> str:
    with pytest.raises(ArchiveError) as caught:
        inspect(data, limits)
    return caught.value.message


# Accepted packages


def test_accepts_manifest_at_root() -> None:
    info = inspect(package(MANIFEST, {"index.js": b"export {}"}))

    assert info.manifest == MANIFEST
    assert info.files == {"manifest.json": len(info.manifest_bytes), "index.js": 9}
    assert info.root_prefix is None


def test_accepts_manifest_in_single_top_folder_and_strips_it() -> None:
    data = tar_gz(
        [folder("demo"), manifest_file(MANIFEST, "demo/manifest.json"), file("demo/a/b.js")]
    )

    info = inspect(data)

    assert info.root_prefix == "demo"
    assert set(info.files) == {"manifest.json", "a/b.js"}


def test_treats_dot_slash_names_as_plain_names() -> None:
    data = tar_gz(
        [folder("."), manifest_file(MANIFEST, "./manifest.json"), file("./src//x.js", b"1")]
    )

    info = inspect(data)

    assert info.files == {"manifest.json": len(info.manifest_bytes), "src/x.js": 1}
    assert info.root_prefix is None


def test_accepts_symlink_pointing_inside() -> None:
    data = tar_gz(
        [manifest_file(MANIFEST), file("lib/real.js"), symlink("index.js", "lib/real.js")]
    )

    assert inspect(data).symlinks == {"index.js": "lib/real.js"}


def test_lists_hard_link_with_its_target_size() -> None:
    data = tar_gz([manifest_file(MANIFEST), file("a.js", b"12345"), hardlink("b.js", "a.js")])

    info = inspect(data)

    assert info.files["b.js"] == 5
    assert info.unpacked_bytes == len(info.manifest_bytes) + 10


@pytest.mark.parametrize("fmt", [tarfile.PAX_FORMAT, tarfile.GNU_FORMAT])
def test_accepts_long_member_names(fmt: int) -> None:
    long_name = "deep/" * 40 + "file.js"
    data = tar_gz([manifest_file(MANIFEST), file(long_name, b"x")], fmt)

    assert long_name in inspect(data).files


def test_accepts_concatenated_gzip_members() -> None:
    raw = tar_bytes([manifest_file(MANIFEST), file("index.js", b"x" * 5000)])
    data = gzip.compress(raw[:3000]) + gzip.compress(raw[3000:])

    assert inspect(data).files["index.js"] == 5000


def test_reads_the_stream_to_its_end_exactly_once() -> None:
    data = package(MANIFEST, {"index.js": b"y" * 100_000}) + b"\0" * 10
    reader = CountingReader(data)

    info = inspect_archive(reader, LIMITS)

    assert reader.consumed == len(data)
    assert info.compressed_bytes == len(data)


# Unsafe paths and member types


@pytest.mark.parametrize("name", ["../x", "a/../../x", "a/b/../../../x", "..\\x"])
def test_refuses_path_traversal(name: str) -> None:
    assert "(..)" in refusal(tar_gz([manifest_file(MANIFEST), file(name)]))


@pytest.mark.parametrize("name", ["/etc/x", "C:/x", "\\\\server\\share"])
def test_refuses_absolute_path(name: str) -> None:
    assert "(absolute)" in refusal(tar_gz([manifest_file(MANIFEST), file(name)]))


@pytest.mark.parametrize("target", ["../outside", "/etc/passwd", "a/../../x", ""])
def test_refuses_symlink_pointing_outside(target: str) -> None:
    message = refusal(tar_gz([manifest_file(MANIFEST), symlink("link", target)]))

    assert "link pointing outside" in message


def test_refuses_symlink_chain_that_escapes_once_followed() -> None:
    # Lexically a -> b/.. stays inside, but b -> . makes it climb out of the root.
    members = [manifest_file(MANIFEST), symlink("b", "."), symlink("a", "b/..")]

    assert "link pointing outside" in refusal(tar_gz(members))


def test_refuses_symlink_loop() -> None:
    members = [manifest_file(MANIFEST), symlink("a", "b/x"), symlink("b", "a/y")]

    assert "link pointing outside" in refusal(tar_gz(members))


@pytest.mark.parametrize("target", ["../x", "/etc/passwd"])
def test_refuses_hard_link_pointing_outside(target: str) -> None:
    message = refusal(tar_gz([manifest_file(MANIFEST), hardlink("link", target)]))

    assert "link pointing outside" in message


def test_refuses_hard_link_to_missing_file() -> None:
    message = refusal(tar_gz([manifest_file(MANIFEST), hardlink("link", "nothing.js")]))

    assert "hard link to a file it does not contain" in message


@pytest.mark.parametrize("kind", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_refuses_devices_and_fifos(kind: bytes) -> None:
    message = refusal(tar_gz([manifest_file(MANIFEST), special("dev", kind)]))

    assert message == "Package contains a device or fifo: dev"


def test_refuses_unknown_member_type() -> None:
    message = refusal(tar_gz([manifest_file(MANIFEST), special("odd", b"Z")]))

    assert "unsupported member type" in message


def test_refuses_name_that_is_not_utf8() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.errors = "surrogateescape"  # writes the raw byte 0xff into the header
        tar.addfile(manifest_file(MANIFEST).info, io.BytesIO(manifest_file(MANIFEST).data))
        tar.addfile(file("bad-\udcff.js").info, io.BytesIO())

    assert "not valid UTF-8" in refusal(gzip.compress(buffer.getvalue()))


# Size and count limits


def test_refuses_more_members_than_the_cap_without_reading_them_all() -> None:
    stream = LazyGzip(many_empty_files(100_000))

    with pytest.raises(ArchiveError, match="more than 10000 members"):
        inspect_archive(stream, LIMITS)
    assert stream.produced < 100_000 * 512 // 2  # stopped well before the end


def test_refuses_member_declared_larger_than_limit_before_inflating_it() -> None:
    bomb = LazyGzip(zero_file_stream("zeros.bin", 2 * GIB))

    with pytest.raises(ArchiveError, match="unpacks to more than"):
        inspect_archive(bomb, ArchiveLimits(max_unpacked_bytes=GIB))
    assert bomb.produced < 2 * GIB // 8  # only the first read's worth was ever made


def test_refuses_gzip_bomb_by_compression_ratio_early() -> None:
    # 900 MiB of zeros, under the size limit, as ~900 KiB of concatenated gzip members.
    zeros = gzip.compress(b"\0" * MIB, compresslevel=9)
    bomb = (
        gzip.compress(header_block("zeros.bin", 900 * MIB))
        + zeros * 900
        + gzip.compress(b"\0" * 1024)
    )
    reader = CountingReader(bomb)

    with pytest.raises(ArchiveError, match="decompression bomb"):
        inspect_archive(reader, ArchiveLimits(max_unpacked_bytes=GIB))
    assert reader.consumed < len(bomb) // 4


def test_refuses_gzip_bomb_streamed_from_a_generator_early() -> None:
    bomb = LazyGzip(zero_file_stream("zeros.bin", 900 * MIB))

    with pytest.raises(ArchiveError, match="decompression bomb"):
        inspect_archive(bomb, ArchiveLimits(max_unpacked_bytes=GIB))
    assert bomb.produced < 900 * MIB // 4


def test_refuses_total_unpacked_size_over_limit() -> None:
    data = package(MANIFEST, {"a.bin": b"a" * 600, "b.bin": b"b" * 600})

    message = refusal(data, ArchiveLimits(max_unpacked_bytes=1000))

    assert message == "Package unpacks to more than 1000 bytes"


def test_counts_hard_links_as_copies_towards_the_size_limit() -> None:
    members = [manifest_file(MANIFEST), file("a.bin", b"a" * 600), hardlink("b.bin", "a.bin")]

    assert "unpacks to more than" in refusal(
        tar_gz(members), ArchiveLimits(max_unpacked_bytes=1000)
    )


def test_refuses_oversized_extended_header() -> None:
    pax = tarfile.TarInfo("pax")
    pax.type = tarfile.XHDTYPE
    pax.size = 2 * MIB
    raw = pax.tobuf(tarfile.USTAR_FORMAT) + b"0" * (2 * MIB) + b"\0" * 1024

    assert "extended tar header larger than 1 MiB" in refusal(gzip.compress(raw))


# Broken streams


def test_refuses_truncated_gzip() -> None:
    data = package(MANIFEST, {"index.js": bytes(range(256)) * 400})

    assert refusal(data[: len(data) // 2]) == "Package is truncated: the gzip stream ends early"


def test_refuses_gzip_missing_its_trailer() -> None:
    data = package(MANIFEST)

    assert "truncated" in refusal(data[:-4])


def test_refuses_gzip_with_wrong_checksum() -> None:
    data = bytearray(package(MANIFEST))
    data[-8] ^= 0xFF  # the CRC32 in the gzip trailer

    assert refusal(bytes(data)) == "Package gzip data is corrupt"


@pytest.mark.parametrize("data", [b"PK\x03\x04 a zip file", b"plain text, not gzip", b"\x1f"])
def test_refuses_data_that_is_not_gzip(data: bytes) -> None:
    assert refusal(data) in {
        "Package is not a gzip file",
        "Package is truncated: the gzip stream ends early",
    }


def test_refuses_empty_upload() -> None:
    assert refusal(b"") == "Package is truncated: the gzip stream ends early"


def test_refuses_gzip_of_something_that_is_not_tar() -> None:
    assert "not a valid tar archive" in refusal(gzip.compress(b"hello " * 200))


def test_refuses_gzip_followed_by_garbage() -> None:
    assert refusal(package(MANIFEST) + b"trailing garbage") == "Package gzip data is corrupt"


def test_refuses_corrupt_last_header_instead_of_taking_it_for_the_end() -> None:
    raw = bytearray(
        tar_bytes([manifest_file(MANIFEST), file("index.js", b"x")], tarfile.GNU_FORMAT)
    )
    raw[raw.index(b"index.js\0")] ^= 0x20  # the header checksum no longer matches

    assert refusal(gzip.compress(bytes(raw))) == (
        "Package is not a valid tar archive (bad checksum)"
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=8)), max_size=6))
def test_mutated_archives_fail_only_with_archive_errors(edits: list[tuple[int, bytes]]) -> None:
    raw = bytearray(_FUZZ_BASE)
    for position, replacement in edits:
        at = position % len(raw)
        raw[at : at + len(replacement)] = replacement

    try:
        inspect(gzip.compress(bytes(raw), compresslevel=1))
    except ArchiveError:
        pass


def test_refuses_data_hidden_after_end_of_archive() -> None:
    hidden = tar_bytes([file("evil.sh", b"rm -rf ~")])
    raw = tar_bytes([manifest_file(MANIFEST)]) + hidden

    assert refusal(gzip.compress(raw)) == "Package has data after the end of the tar archive"


# Names


def test_refuses_duplicate_names() -> None:
    members = [manifest_file(MANIFEST), file("a.js", b"1"), file("a.js", b"2")]

    assert refusal(tar_gz(members)) == "Package contains the name a.js twice"


def test_refuses_two_manifest_members() -> None:
    members = [manifest_file(MANIFEST), manifest_file(MANIFEST, "./manifest.json")]

    assert refusal(tar_gz(members)) == "Package contains the name manifest.json twice"


def test_refuses_names_differing_only_in_case() -> None:
    members = [manifest_file(MANIFEST), file("README.md"), file("readme.md")]

    assert "differ only in case: README.md and readme.md" in refusal(tar_gz(members))


def test_refuses_names_differing_only_in_unicode_normalisation() -> None:
    members = [manifest_file(MANIFEST), file("caf\u00e9.txt"), file("cafe\u0301.txt")]

    assert "differ only in case" in refusal(tar_gz(members))


def test_refuses_file_used_as_folder() -> None:
    members = [manifest_file(MANIFEST), file("lib"), file("lib/x.js")]

    assert refusal(tar_gz(members)) == "Package uses lib both as a file and a folder"


def test_escapes_control_characters_in_messages() -> None:
    message = refusal(tar_gz([manifest_file(MANIFEST), file("../\x1b[31mred")]))

    assert "\x1b" not in message
    assert "\\u001b" in message


# The manifest


def test_refuses_package_without_manifest() -> None:
    assert refusal(tar_gz([file("index.js")])) == "manifest.json not found at the package root"


def test_refuses_manifest_two_folders_down() -> None:
    data = tar_gz([manifest_file(MANIFEST, "a/b/manifest.json"), file("a/b/index.js")])

    assert refusal(data) == "manifest.json not found at the package root"


def test_refuses_manifest_in_a_folder_when_there_are_several_top_levels() -> None:
    data = tar_gz([manifest_file(MANIFEST, "a/manifest.json"), file("b/index.js")])

    assert refusal(data) == "manifest.json not found at the package root"


def test_refuses_manifest_that_is_a_symlink() -> None:
    data = tar_gz([file("real.json", b"{}"), symlink("manifest.json", "real.json")])

    assert refusal(data) == "manifest.json must be a regular file"


def test_refuses_manifest_that_is_not_json() -> None:
    assert "manifest.json is not valid JSON" in refusal(package(b"{'id': 'demo'}"))


@pytest.mark.parametrize("body", [b"[1, 2]", b'"text"', b"null", b"42"])
def test_refuses_manifest_that_is_not_an_object(body: bytes) -> None:
    assert refusal(package(body)) == "manifest.json must contain a JSON object"


def test_refuses_manifest_that_is_not_utf8() -> None:
    assert refusal(package(b'{"id": "\xff"}')) == "manifest.json is not valid UTF-8"


def test_refuses_manifest_with_byte_order_mark() -> None:
    assert "not valid JSON" in refusal(package(b'\xef\xbb\xbf{"id": "demo"}'))


def test_refuses_manifest_with_repeated_key() -> None:
    body = b'{"id": "demo", "id": "other"}'

    assert refusal(package(body)) == 'manifest.json repeats the key "id"'


def test_refuses_manifest_with_non_json_constant() -> None:
    assert "not valid JSON" in refusal(package(b'{"n": NaN}'))


def test_refuses_manifest_nested_too_deep() -> None:
    assert "not valid JSON" in refusal(package(b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"))


@pytest.mark.parametrize("body", [b'{"a": "x\\u0000y"}', b'{"a": "\\ud800"}'])
def test_refuses_manifest_with_unstorable_text(body: bytes) -> None:
    assert "NUL or an unpaired surrogate at manifest.a" in refusal(package(body))


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (b'{"limits": {"max": 100000000000000000000000000000}}', "manifest.limits.max"),
        (b'{"a": [0, -9223372036854775808]}', "manifest.a[1]"),
        (b'{"n": 1e400}', "manifest.n"),
        # PostgreSQL JSONB gives 1e20 back as the integer 100000000000000000000.
        (b'{"n": 1e20}', "manifest.n"),
        (b'{"n": -9.3e18}', "manifest.n"),
    ],
)
def test_refuses_manifest_with_numbers_json_clients_cannot_read(body: bytes, where: str) -> None:
    # Stored, such a manifest made every response that showed it fail (orjson: 64 bits).
    assert (
        refusal(package(body)) == f"manifest.json holds a number out of the 64-bit range at {where}"
    )


def test_accepts_manifest_with_the_largest_64_bit_integers() -> None:
    body = b'{"a": 9223372036854775807, "b": -9223372036854775807, "c": 9.2e18, "d": true, "e": 1e-300}'

    assert inspect(package(body)).manifest == {
        "a": 2**63 - 1,
        "b": -(2**63 - 1),
        "c": 9.2e18,
        "d": True,
        "e": 1e-300,
    }


def test_refuses_manifest_larger_than_its_limit() -> None:
    big = {"id": "demo", "padding": "x" * 2000}
    limits = ArchiveLimits(max_unpacked_bytes=GIB, manifest_max_bytes=1000)

    assert refusal(package(big), limits) == "manifest.json is larger than 1000 bytes"


def test_load_manifest_parses_utf8_json_object() -> None:
    assert load_manifest('{"name": "插件"}'.encode()) == {"name": "插件"}


def test_limits_for_package_allow_ten_times_the_upload_up_to_one_gib() -> None:
    assert ArchiveLimits.for_package(50 * MIB).max_unpacked_bytes == 500 * MIB
    assert ArchiveLimits.for_package(200 * MIB).max_unpacked_bytes == GIB


# Extraction for the reference install client


def test_safe_extract_unpacks_files_and_returns_the_package_root(tmp_path: Path) -> None:
    archive = tmp_path / "p.tar.gz"
    archive.write_bytes(package(MANIFEST, {"src/index.js": b"export {}"}, prefix="demo/"))

    root = safe_extract(archive, tmp_path / "out")

    assert root == tmp_path / "out" / "demo"
    assert (root / "src" / "index.js").read_bytes() == b"export {}"


def test_safe_extract_refuses_traversal_and_writes_nothing_outside(tmp_path: Path) -> None:
    archive = tmp_path / "p.tar.gz"
    archive.write_bytes(tar_gz([file("../escaped.txt", b"x")]))

    with pytest.raises(ArchiveError):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "escaped.txt").exists()


def test_safe_extract_refuses_symlink_out(tmp_path: Path) -> None:
    archive = tmp_path / "p.tar.gz"
    archive.write_bytes(tar_gz([symlink("link", "/etc/passwd")]))

    with pytest.raises(ArchiveError):
        safe_extract(archive, tmp_path / "out")


def test_safe_extract_refuses_more_members_than_the_cap(tmp_path: Path) -> None:
    archive = tmp_path / "p.tar.gz"
    archive.write_bytes(tar_gz([file(f"f{index}") for index in range(5)]))

    with pytest.raises(ArchiveError, match="more than 3 members"):
        safe_extract(
            archive, tmp_path / "out", ArchiveLimits(max_unpacked_bytes=MIB, max_members=3)
        )


def test_safe_extract_refuses_a_gzip_bomb_and_leaves_nothing(tmp_path: Path) -> None:
    archive = tmp_path / "p.tar.gz"
    zeros = gzip.compress(b"\0" * MIB, compresslevel=9)
    archive.write_bytes(gzip.compress(header_block("z", 300 * MIB)) + zeros * 300)

    with pytest.raises(ArchiveError, match="decompression bomb"):
        safe_extract(archive, tmp_path / "out", ArchiveLimits(max_unpacked_bytes=GIB))
    assert not (tmp_path / "out").exists()


def test_safe_extract_refuses_a_destination_that_is_not_empty(tmp_path: Path) -> None:
    archive = tmp_path / "p.tar.gz"
    archive.write_bytes(package(MANIFEST))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old").write_text("x")

    with pytest.raises(ValueError, match="not empty"):
        safe_extract(archive, tmp_path / "out")


def test_many_empty_files_builds_a_valid_tar_stream() -> None:
    # Guards the fast template builder that the member-cap test relies on.
    raw = b"".join(many_empty_files(3))

    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        assert tar.getnames() == ["f00000000", "f00000001", "f00000002"]


def test_safe_extract_restores_links_that_stay_inside(tmp_path: Path) -> None:
    archive = tmp_path / "p.tar.gz"
    members = [file("a.js", b"A"), hardlink("b.js", "a.js"), symlink("c.js", "a.js")]
    archive.write_bytes(tar_gz([manifest_file(MANIFEST), *members]))

    root = safe_extract(archive, tmp_path / "out")

    assert (root / "b.js").read_bytes() == b"A"
    assert (root / "c.js").is_symlink()
    assert (root / "c.js").read_bytes() == b"A"


# An optional manifest (scenario packages)


def test_optional_manifest_may_be_absent() -> None:
    data = tar_gz([file("scenario.yaml", b"steps: []"), folder("docs"), file("docs/a.md")])

    info = inspect_archive(io.BytesIO(data), LIMITS, require_manifest=False)

    assert (info.manifest, info.manifest_bytes) == (None, None)
    assert info.files == {"scenario.yaml": 9, "docs/a.md": 0}


def test_optional_manifest_that_is_present_is_read() -> None:
    info = inspect_archive(io.BytesIO(package(MANIFEST)), LIMITS, require_manifest=False)

    assert info.manifest == MANIFEST


def test_optional_manifest_that_is_present_must_be_valid() -> None:
    with pytest.raises(ArchiveError, match="not valid JSON"):
        inspect_archive(io.BytesIO(package(b"{oops")), LIMITS, require_manifest=False)


def test_optional_manifest_keeps_every_safety_rule() -> None:
    for members in (
        [file("../evil")],
        [file("/etc/evil")],
        [symlink("up", "../..")],
        [special("dev", tarfile.CHRTYPE)],
    ):
        with pytest.raises(ArchiveError):
            inspect_archive(io.BytesIO(tar_gz(members)), LIMITS, require_manifest=False)


def test_required_manifest_is_still_the_default() -> None:
    assert refusal(tar_gz([file("scenario.yaml")])) == "manifest.json not found at the package root"
