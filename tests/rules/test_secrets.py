"""rules.secrets: what the scan finds, where, and that it never shows a secret."""

from __future__ import annotations

import io

import pytest

from marketplace.packages.archive import ArchiveLimits, inspect_archive
from marketplace_rules.findings import Code
from marketplace_rules.limits import MIB
from marketplace_rules.secrets import (
    HITS_PER_FILE,
    FileScan,
    mask,
    scan_bytes,
    scan_document,
    secret_findings,
)
from tests.packages.tarballs import package

TOKEN = "mkt_pat_" + "abcDEF0123456789_-" * 2 + "abcdefg"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def test_token_shape_is_the_one_the_service_issues() -> None:
    assert len(TOKEN) == len("mkt_pat_") + 43
    assert scan_bytes("a.txt", TOKEN.encode()).tokens == {TOKEN}


def test_mask_keeps_four_characters_and_the_length() -> None:
    assert mask(AWS_KEY) == "AKIA…(20 chars)"


@pytest.mark.parametrize("piece", [1, 7, 1000, 64 * 1024])
def test_a_secret_cut_by_piece_boundaries_is_found_once_with_its_line(piece: int) -> None:
    data = b"x = 1\n" * 30000 + f"key = '{AWS_KEY}' # {TOKEN}\n".encode() + b"y\n" * 10
    scan = FileScan("src/a.py")
    for start in range(0, len(data), piece):
        scan.feed(data[start : start + piece])
    scan.finish()
    assert sorted((hit.kind, hit.line, hit.path) for hit in scan.hits) == [
        ("AWS Access Key", 30001, "file:src/a.py"),
        ("marketplace publishing token", 30001, "file:src/a.py"),
    ]
    assert scan.tokens == {TOKEN}


def test_a_long_secret_straddling_a_boundary_is_seen_whole() -> None:
    secret = "glagent-" + "a" * 1000
    data = b"x" * (64 * 1024 - 500) + secret.encode() + b" y\n" + b"z" * 70_000
    for piece in (7, 1000, 64 * 1024, 65_000):
        scan = FileScan("a.txt")
        for start in range(0, len(data), piece):
            scan.feed(data[start : start + piece])
        assert [hit.masked for hit in scan.finish().hits] == ["glag…(1008 chars)"], piece


def test_binary_files_are_not_read() -> None:
    scan = scan_bytes("img.png", b"\x89PNG\0\0" + AWS_KEY.encode())
    assert scan.binary and scan.hits == []


def test_hits_per_file_are_bounded() -> None:
    scan = scan_bytes("many.txt", (AWS_KEY + "\n").encode() * 1000)
    assert len(scan.hits) == HITS_PER_FILE


def test_documents_are_scanned_string_by_string_keys_included() -> None:
    document = {"mcp": {"env": {"KEY": AWS_KEY}}, "config": [{"default": TOKEN}], AWS_KEY: 1}
    found = scan_document(document)
    assert sorted(hit.path for hit in found.hits) == [
        "AKIAIOSFODNN7EXAMPLE",
        "config[0].default",
        "mcp.env.KEY",
    ]
    assert found.tokens == {TOKEN}


def test_findings_are_errors_and_never_hold_the_secret() -> None:
    hits = scan_bytes("a.js", f"{AWS_KEY}\n{TOKEN}\n".encode()).hits
    findings = secret_findings(hits)
    assert [(f.code, f.severity) for f in findings] == [
        (Code.MARKETPLACE_TOKEN, "error"),
        (Code.SECRET, "error"),
    ]
    text = " ".join(f.message + f.path for f in findings)
    assert AWS_KEY not in text and TOKEN not in text
    assert "mkt_…(51 chars)" in text and "on line 2" in text


def test_inspect_archive_reads_whole_files_and_names_them_without_the_root_folder() -> None:
    big = b"// filler line\n" * (2 * MIB // 15) + f"const k = '{AWS_KEY}';\n".encode()
    data = package({"id": "demo", "version": "1.0.0"}, {"lib/big.js": big}, prefix="demo/")
    info = inspect_archive(io.BytesIO(data), ArchiveLimits.for_package(100 * MIB))
    assert [(hit.path, hit.kind) for hit in info.secrets] == [("file:lib/big.js", "AWS Access Key")]
    assert info.found_tokens == frozenset()
    assert AWS_KEY not in repr(info)


def test_inspect_archive_keeps_token_values_out_of_its_repr() -> None:
    data = package({"id": "demo", "version": "1.0.0"}, {".env": f"T={TOKEN}\n".encode()})
    info = inspect_archive(io.BytesIO(data), ArchiveLimits.for_package(100 * MIB))
    assert info.found_tokens == frozenset({TOKEN})
    assert TOKEN not in repr(info)
