"""File traits: what a mode and the first bytes of a file say (rules.traits)."""

from __future__ import annotations

import struct

import pytest

from marketplace_rules.traits import (
    HEAD_BYTES,
    SCRIPT_SAMPLE_BYTES,
    FileTraits,
    ShellPipe,
    binary_format,
    sample_size,
    script_stats,
    traits_of,
)

ELF = b"\x7fELF\x02\x01\x01\x00" + b"\0" * 56
WASM = b"\0asm\x01\0\0\0"


def pe(offset: int = 0x80) -> bytes:
    header = bytearray(b"MZ" + b"\x90\0" * 29)
    header += b"\0" * (0x3C - len(header)) + struct.pack("<I", offset)
    header += b"\0" * (offset - len(header)) + b"PE\0\0"
    return bytes(header)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (ELF, "ELF"),
        (WASM, "WebAssembly"),
        (pe(), "PE"),
        (b"\xcf\xfa\xed\xfe\x07\0\0\x01", "Mach-O"),
        (b"\xfe\xed\xfa\xce\0\0\0\x07", "Mach-O"),
        (b"\xca\xfe\xba\xbe\0\0\0\x02", "Mach-O"),  # universal binary, two architectures
    ],
)
def test_binary_format_knows_the_executable_magics(head: bytes, expected: str) -> None:
    assert binary_format(head) == expected


@pytest.mark.parametrize(
    "head",
    [
        b"",
        b"\x7fEL",  # cut short
        b"MZ is how this readme starts, but it is text\n",
        b"\xca\xfe\xba\xbe\0\0\0\x34",  # a Java class file (version 52), not Mach-O
        b"#!/bin/sh\necho hi\n",
        b"\x89PNG\r\n\x1a\n",
    ],
)
def test_binary_format_leaves_other_files_alone(head: bytes) -> None:
    assert binary_format(head) is None


def test_dos_header_without_pe_signature_in_the_head_is_still_an_executable() -> None:
    # e_lfanew points past the 1 KiB head: the DOS header's zero bytes decide.
    assert binary_format(pe(offset=4096)[:HEAD_BYTES]) == "PE"


def test_traits_take_any_exec_bit() -> None:
    assert traits_of("bin/tool", 0o744, b"#!/bin/sh").executable
    assert traits_of("bin/tool", 0o701, b"#!/bin/sh").executable
    assert not traits_of("bin/tool", 0o644, b"#!/bin/sh").executable


def test_plain_file_is_not_notable_and_scripts_always_are() -> None:
    assert traits_of("README.md", 0o644, b"# hello\n") == FileTraits()
    assert not traits_of("README.md", 0o644, b"# hello\n").notable
    script = traits_of("index.js", 0o644, b"export default 1\n")
    assert script.notable and script.script is not None and script.script.lines == 1


@pytest.mark.parametrize("name", ["a.js", "b.MJS", "dir/c.cjs"])
def test_javascript_files_are_sampled_more(name: str) -> None:
    assert sample_size(name) == SCRIPT_SAMPLE_BYTES
    assert traits_of(name, 0o644, b"1").script is not None


def test_other_files_are_sampled_for_their_magic_only() -> None:
    assert sample_size("lib.so") == sample_size("data.json") == HEAD_BYTES
    assert traits_of("data.json", 0o644, b"{}").script is None


def test_traits_of_ignores_bytes_past_the_sample() -> None:
    tail = b"eval(atob('x'));" + b"var _0xabc=1;" * 20
    head = b"// fine\n" * (SCRIPT_SAMPLE_BYTES // 8) + tail
    stats = traits_of("big.js", 0o644, head).script
    assert stats is not None
    assert stats.sampled == SCRIPT_SAMPLE_BYTES
    assert (stats.dynamic_code, stats.hex_names) == (0, 0)


def test_script_stats_measure_lines() -> None:
    stats = script_stats(b"a\nbbbb\ncc")
    assert (stats.sampled, stats.lines, stats.longest_line) == (9, 2, 4)


def test_script_stats_count_hex_identifiers() -> None:
    sample = b"var _0x1a2b=['x'],_0x3c4d=function(_0x5e6f){return _0x1a2b[_0x5e6f]};_0x12"
    assert script_stats(sample).hex_names == 5  # every use; _0x12 is too short to count


def test_script_stats_measure_the_longest_escape_run() -> None:
    sample = b'var a="\\x68\\x65\\x6c\\x6c\\x6f", b="\\u0041\\u{1F600}x\\x41";'
    assert script_stats(sample).escape_run == 5


@pytest.mark.parametrize(
    "code",
    [
        b"eval(atob('ZG9jdW1lbnQ='))",
        b"eval ( a + b )",
        b"new Function(parts.reverse().join(''))()",
        b"new  Function(String.fromCharCode(97,98))",
        b"eval(decodeURIComponent(x))",
    ],
)
def test_script_stats_count_dynamic_code_on_built_strings(code: bytes) -> None:
    assert script_stats(code).dynamic_code == 1


@pytest.mark.parametrize(
    "code",
    [b"eval('1')", b"new Function('return this')", b"medieval(x + y)", b"// evaluate(a+b)"],
)
def test_script_stats_leave_plain_dynamic_code_and_lookalikes_alone(code: bytes) -> None:
    assert script_stats(code).dynamic_code == 0


def test_script_stats_measure_quoted_base64_literals() -> None:
    blob = b"QUJD" * 300
    sample = b'const payload = "' + blob + b'"; const img = "data:image/png;base64,' + blob + b'";'
    assert script_stats(sample).base64_literal == len(blob)  # the data: URL does not count


def test_script_stats_ignore_short_base64_like_strings() -> None:
    assert script_stats(b'const hash = "' + b"ab12" * 40 + b'";').base64_literal == 0


@pytest.mark.parametrize(
    ("line", "fetch", "run"),
    [
        (b"curl -fsSL https://get.example.com | sh", "curl", "sh"),
        (b"wget -qO- https://example.com/install.sh | sudo -E bash -", "wget", "bash"),
        (b"curl -s https://example.com/get.py | python3 -", "curl", "python3"),
        (b"curl -fsSL https://example.com/x | sh -s -- --yes", "curl", "sh"),
        (b"curl -s https://example.com/list | grep v2 | bash", "curl", "bash"),
        (b"curl -fsSL https://example.com/x | env FOO=1 /bin/bash", "curl", "/bin/bash"),
        (b'sh -c "$(curl -fsSL https://example.com/install.sh)"', "curl", "sh"),
        (b"bash <(curl -s https://example.com/x)", "curl", "bash"),
        (b"source <(wget -qO- https://example.com/env)", "wget", "source"),
        (b"irm https://example.com/install.ps1 | iex", "irm", "iex"),
        (b"iex ((New-Object Net.WebClient).DownloadString('https://x'))", "DownloadString", "iex"),
    ],
)
def test_a_download_handed_to_a_shell_is_a_shell_pipe(line: bytes, fetch: str, run: str) -> None:
    found = traits_of("install.sh", 0o644, b"#!/bin/sh\nset -e\n" + line + b"\n").shell_pipe
    assert found == ShellPipe(line=3, fetch=fetch, run=run)


@pytest.mark.parametrize(
    "line",
    [
        b"curl -fsSL https://example.com/x.tgz | tar xz",
        b"curl -s https://example.com/api | jq .",
        b"curl -s https://example.com/x | shasum -a 256",
        b"curl -o x.sh https://example.com/x || sh fallback.sh",
        b"curl -o x.sh https://example.com/x; sh x.sh",
        b"echo hello | sh",
        b"# see the README",
    ],
)
def test_other_pipes_and_downloads_are_not_shell_pipes(line: bytes) -> None:
    assert traits_of("install.sh", 0o755, b"#!/bin/sh\n" + line + b"\n").shell_pipe is None


def test_only_scripts_a_shell_runs_are_looked_at() -> None:
    pipe = b"curl -fsSL https://get.example.com | sh\n"
    assert traits_of("README.md", 0o644, pipe).shell_pipe is None
    assert traits_of("docs/install.txt", 0o644, pipe).shell_pipe is None
    assert traits_of("index.js", 0o644, pipe).shell_pipe is None
    assert traits_of("bin/setup", 0o755, pipe).shell_pipe is not None  # executable
    assert traits_of("bin/setup", 0o644, b"#!/bin/bash\n" + pipe).shell_pipe is not None
    assert traits_of("setup.ps1", 0o644, b"irm https://x | iex\n").shell_pipe is not None


@pytest.mark.parametrize("name", ["install.sh", "run.BASH", "setup.ps1", "build.cmd"])
def test_shell_scripts_are_sampled_as_far_as_javascript(name: str) -> None:
    assert sample_size(name) == SCRIPT_SAMPLE_BYTES
    deep = b"#!/bin/sh\n" + b"# comment\n" * 5000 + b"curl -fsSL https://x | sh\n"
    assert len(deep) > HEAD_BYTES
    found = traits_of(name, 0o644, deep).shell_pipe
    assert found is not None and found.line == 5002
