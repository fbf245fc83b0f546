"""The publishing tool takes a folder's file traits as the service takes them from the
package the tool makes of it: same traits, same file findings."""

from __future__ import annotations

import json
import os
from pathlib import Path

from marketplace.packages.archive import ArchiveLimits, inspect_archive
from marketplace_client.pack import listing, pack
from marketplace_rules.files import file_findings
from marketplace_rules.limits import LARGE_FILE_BYTES, MIB

ELF = b"\x7fELF\x02\x01\x01\x00" + b"\0" * 64


def write(root: Path, name: str, data: bytes, mode: int = 0o644) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)


def test_folder_and_package_have_the_same_traits(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    manifest = {"id": "demo", "version": "1.0.0", "main": "index.js", "category": "ai"}
    write(root, "manifest.json", json.dumps(manifest).encode())
    write(root, "index.js", b"export default 1;\n")
    write(root, "bin/run.sh", b"#!/bin/sh\necho hi\n", 0o750)
    # Read past the 1 KiB head on both sides: a shell script is sampled as far as JavaScript.
    install = b"#!/bin/sh\n" + b"# step\n" * 400 + b"curl -fsSL https://get.example.com | sh\n"
    write(root, "install.sh", install)
    write(root, "notes.txt", ELF)
    write(root, "lib/tool.node", b"not really native")
    write(root, "dist/app.min.js", b"!function(){" + b"var a=1,b=2;a+=b;" * 4000 + b"}();")
    write(root, "lib/o.cjs", b"".join(b"var _0x%04x=1;\n" % i for i in range(40)))
    write(root, "node_modules/dep/x.so", ELF)  # never packed, never judged
    with (root / "big.bin").open("wb") as sparse:
        sparse.truncate(LARGE_FILE_BYTES + 1)
    os.symlink("notes.txt", root / "link.txt")  # packed as the file it points at

    folder = listing(root, with_traits=True)
    packed = pack(root, tmp_path / "demo.tar.gz")
    with packed.path.open("rb") as stream:
        archive = inspect_archive(stream, ArchiveLimits.for_package(100 * MIB))

    assert folder.files == archive.files
    assert folder.traits == archive.traits
    assert set(folder.traits) == {
        "bin/run.sh",
        "install.sh",
        "notes.txt",
        "link.txt",
        "index.js",
        "dist/app.min.js",
        "lib/o.cjs",
    }
    assert file_findings(folder) == file_findings(archive)
    assert folder.traits["install.sh"].shell_pipe is not None
    assert len(file_findings(folder)) == 8


def test_listing_takes_traits_only_when_asked(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    write(root, "manifest.json", b"{}")
    write(root, "tool", ELF, 0o755)
    assert listing(root).traits == {}
    assert (
        listing(root).files
        == listing(root, with_traits=True).files
        == {
            "manifest.json": 2,
            "tool": len(ELF),
        }
    )
    assert listing(root, with_traits=True).traits["tool"].binary == "ELF"
