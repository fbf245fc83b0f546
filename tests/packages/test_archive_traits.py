"""File traits gathered in inspect_archive's single streaming pass, in bounded memory."""

from __future__ import annotations

import io
import tracemalloc
from collections.abc import Iterator

from marketplace.packages.archive import MIB, ArchiveInfo, ArchiveLimits, inspect_archive
from marketplace_rules.files import file_findings
from marketplace_rules.findings import Code
from marketplace_rules.traits import SCRIPT_SAMPLE_BYTES, FileTraits
from tests.packages.tarballs import (
    LazyGzip,
    Member,
    file,
    folder,
    hardlink,
    header_block,
    manifest_file,
    symlink,
    tar_gz,
)

LIMITS = ArchiveLimits.for_package(100 * MIB)
MANIFEST = {"id": "demo", "version": "1.0.0", "main": "index.js", "category": "ai"}
ELF = b"\x7fELF\x02\x01\x01\x00" + b"\0" * 120
_PIECE = 16 * 1024
# The inspector holds a 64 KiB sample and tarfile's and zlib's buffers, never a whole file.
PEAK_MAX = 2 * MIB  # the files are 11 and 24 MiB


def executable(member: Member) -> Member:
    member.info.mode = 0o755
    return member


def inspect(*members: Member) -> ArchiveInfo:
    return inspect_archive(io.BytesIO(tar_gz([manifest_file(MANIFEST), *members])), LIMITS)


def peak_bytes(run: object) -> int:
    """Peak memory Python allocated while run() ran."""
    tracemalloc.start()
    try:
        run()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_plain_files_have_no_traits() -> None:
    info = inspect(file("README.md", b"# hi\n"), file("data.json", b"{}"))
    assert info.traits == {}


def test_exec_bit_is_a_trait() -> None:
    info = inspect(executable(file("bin/run.sh", b"#!/bin/sh\n")), file("README.md", b"x"))
    assert info.traits == {"bin/run.sh": FileTraits(executable=True)}


def test_elf_magic_in_a_text_file_is_found() -> None:
    info = inspect(file("notes.txt", ELF))
    assert info.traits["notes.txt"].binary == "ELF"
    (finding,) = file_findings(info)
    assert (finding.code, finding.path) == (Code.FILE_NATIVE_BINARY, "file:notes.txt")


def test_manifest_traits_come_from_the_bytes_already_kept() -> None:
    manifest = executable(manifest_file(MANIFEST))
    info = inspect_archive(io.BytesIO(tar_gz([manifest, file("index.js", b"1")])), LIMITS)
    assert info.manifest == MANIFEST
    assert info.traits["manifest.json"].executable


def test_hard_link_shares_its_targets_traits_and_adds_its_exec_bit() -> None:
    link = executable(hardlink("copy.bin", "lib/tool.txt"))
    info = inspect(file("lib/tool.txt", ELF), link, hardlink("plain", "manifest.json"))
    assert info.traits["copy.bin"] == FileTraits(executable=True, binary="ELF")
    assert "plain" not in info.traits


def test_symlinks_and_folders_have_no_traits() -> None:
    info = inspect(folder("lib"), file("lib/a.txt", ELF), symlink("lib/b.so", "a.txt"))
    assert set(info.traits) == {"lib/a.txt"}


def test_traits_follow_the_stripped_root_folder() -> None:
    members = [
        folder("pkg"),
        manifest_file(MANIFEST, "pkg/manifest.json"),
        executable(file("pkg/bin/tool", ELF)),
    ]
    info = inspect_archive(io.BytesIO(tar_gz(members)), LIMITS)
    assert set(info.traits) == {"bin/tool"} and set(info.files) >= {"bin/tool", "manifest.json"}


def test_minified_and_obfuscated_javascript_are_measured() -> None:
    minified = b"!function(){" + b"var a=1,b=2;a+=b;" * 4000 + b"}();"
    obfuscated = b"".join(b"var _0x%04x=_0x%04x+1;\n" % (i, i + 1) for i in range(40))
    info = inspect(file("dist/app.min.js", minified), file("lib/o.mjs", obfuscated))
    app, lib = info.traits["dist/app.min.js"].script, info.traits["lib/o.mjs"].script
    assert app is not None and lib is not None
    assert (app.sampled, app.lines) == (SCRIPT_SAMPLE_BYTES, 0)
    assert lib.hex_names == 80
    assert [(f.code, f.path) for f in file_findings(info)] == [
        (Code.SCRIPT_MINIFIED, "file:dist/app.min.js"),
        (Code.SCRIPT_OBFUSCATED, "file:lib/o.mjs"),
    ]


def test_members_after_a_sampled_file_are_still_read() -> None:
    big_script = b"let x = 1;\n" * 20_000  # sampled, the rest skipped by the stream
    info = inspect(file("a.js", big_script), executable(file("b/run", b"#!/bin/sh\n")))
    assert info.files["a.js"] == len(big_script) and info.files["b/run"] == 10
    assert info.traits["b/run"].executable


def test_large_zero_file_is_found_in_bounded_memory() -> None:
    size = 11 * MIB
    found: list[ArchiveInfo] = []

    def run() -> None:
        stream = LazyGzip(lazy_file("blob.bin", size, b"\0"))
        found.append(inspect_archive(stream, LIMITS, require_manifest=False))

    peak = peak_bytes(run)
    (info,) = found
    assert info.files == {"blob.bin": size}
    assert [(f.code, f.path) for f in file_findings(info)] == [(Code.FILE_LARGE, "file:blob.bin")]
    assert peak < PEAK_MAX, peak


def lazy_file(name: str, size: int, line: bytes) -> Iterator[bytes]:
    """A tar stream of one file of size bytes repeating line, made in small pieces so that
    the test's own allocations stay far below what the inspector is allowed."""
    yield header_block(name, size)
    chunk = line * (_PIECE // len(line))
    remaining = size
    while remaining > 0:
        piece = chunk[: min(len(chunk), remaining)]
        remaining -= len(piece)
        yield piece
    yield b"\0" * (-size % 512 + 1024)


def test_large_script_is_sampled_not_read_whole() -> None:
    size = 24 * MIB
    found: list[ArchiveInfo] = []

    def run() -> None:
        line = b"var _0xabcd = eval(atob('eA==') + x);\n"
        stream = LazyGzip(lazy_file("huge.js", size, line))
        found.append(inspect_archive(stream, LIMITS, require_manifest=False))

    peak = peak_bytes(run)
    stats = found[0].traits["huge.js"].script
    assert stats is not None and stats.sampled == SCRIPT_SAMPLE_BYTES
    assert stats.dynamic_code == stats.hex_names > 1000
    assert peak < PEAK_MAX, peak
