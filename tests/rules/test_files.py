"""Findings about a package's files for the reviewer (rules.files)."""

from __future__ import annotations

from marketplace_rules.content import Listing
from marketplace_rules.files import (
    MINIFIED_LINE_BYTES,
    MINIFIED_MIN_BYTES,
    OBFUSCATED_BASE64_BYTES,
    OBFUSCATED_ESCAPE_RUN,
    OBFUSCATED_HEX_NAMES,
    file_findings,
)
from marketplace_rules.findings import Code, Finding
from marketplace_rules.limits import LARGE_FILE_BYTES
from marketplace_rules.traits import FileTraits, ScriptStats, traits_of

ELF = b"\x7fELF\x02\x01\x01\x00"


def stats(**overrides: int) -> ScriptStats:
    values = {
        "sampled": 1000,
        "lines": 40,
        "longest_line": 60,
        "hex_names": 0,
        "escape_run": 0,
        "dynamic_code": 0,
        "base64_literal": 0,
    }
    values.update(overrides)
    return ScriptStats(**values)


def script(path: str = "index.js", **overrides: int) -> Listing:
    return Listing(files={path: 1000}, traits={path: FileTraits(script=stats(**overrides))})


def codes(findings: list[Finding]) -> list[tuple[Code, str, str]]:
    return [(f.code, f.severity, f.path) for f in findings]


def test_no_package_no_file_findings() -> None:
    assert file_findings(None) == []


def test_plain_files_have_no_findings() -> None:
    listing = Listing(
        files={"index.js": 20, "README.md": 10},
        traits={"index.js": traits_of("index.js", 0o644, b"export default 1\n")},
    )
    assert file_findings(listing) == []


def test_executable_file_is_a_warning() -> None:
    listing = Listing(files={"bin/run.sh": 10}, traits={"bin/run.sh": FileTraits(executable=True)})
    assert codes(file_findings(listing)) == [(Code.FILE_EXECUTABLE, "warning", "file:bin/run.sh")]


def test_native_binary_disguised_by_its_name_says_so() -> None:
    listing = Listing(
        files={"notes.txt": 10}, traits={"notes.txt": traits_of("notes.txt", 0o644, ELF)}
    )
    (finding,) = file_findings(listing)
    assert codes([finding]) == [(Code.FILE_NATIVE_BINARY, "warning", "file:notes.txt")]
    assert "ELF" in finding.message and "its name does not say so" in finding.message


def test_executable_native_binary_is_one_finding() -> None:
    listing = Listing(
        files={"bin/tool": 10}, traits={"bin/tool": traits_of("bin/tool", 0o755, ELF)}
    )
    (finding,) = file_findings(listing)
    assert finding.code is Code.FILE_NATIVE_BINARY
    assert finding.message.endswith("it is marked executable")


def test_native_names_are_warned_about_whatever_their_bytes() -> None:
    names = ["a.exe", "b.DLL", "c.so", "libd.so.1.2", "e.dylib", "f.node", "g.wasm"]
    listing = Listing(files=dict.fromkeys(names, 10))
    found = file_findings(listing)
    assert [f.path for f in found] == sorted(f"file:{name}" for name in names)
    assert {f.code for f in found} == {Code.FILE_NATIVE_BINARY}


def test_names_that_only_look_native_are_not() -> None:
    listing = Listing(files=dict.fromkeys(["so.txt", "node.js.map", "exe", "docs/dll.md"], 10))
    assert file_findings(listing) == []


def test_webassembly_module_is_named_so() -> None:
    listing = Listing(
        files={"lib/m.bin": 8}, traits={"lib/m.bin": traits_of("m.bin", 0o644, b"\0asm\1\0\0\0")}
    )
    (finding,) = file_findings(listing)
    assert "WebAssembly" in finding.message


def test_large_file_limit_is_inclusive() -> None:
    listing = Listing(files={"at-limit.bin": LARGE_FILE_BYTES, "over.bin": LARGE_FILE_BYTES + 1})
    (finding,) = file_findings(listing)
    assert codes([finding]) == [(Code.FILE_LARGE, "warning", "file:over.bin")]
    assert "10.0 MiB" in finding.message


def test_minified_script_is_an_info() -> None:
    minified = script(
        sampled=MINIFIED_MIN_BYTES, lines=MINIFIED_MIN_BYTES // MINIFIED_LINE_BYTES - 1
    )
    assert codes(file_findings(minified)) == [(Code.SCRIPT_MINIFIED, "info", "file:index.js")]


def test_short_or_well_broken_scripts_are_not_minified() -> None:
    assert file_findings(script(sampled=MINIFIED_MIN_BYTES - 1, lines=0)) == []
    assert file_findings(script(sampled=10_000, lines=10_000 // MINIFIED_LINE_BYTES)) == []


def test_each_obfuscation_sign_alone_is_a_warning() -> None:
    for sign in (
        {"hex_names": OBFUSCATED_HEX_NAMES},
        {"escape_run": OBFUSCATED_ESCAPE_RUN},
        {"dynamic_code": 1},
        {"base64_literal": OBFUSCATED_BASE64_BYTES},
    ):
        (finding,) = file_findings(script(**sign))
        assert (finding.code, finding.severity) == (Code.SCRIPT_OBFUSCATED, "warning"), sign


def test_signs_below_their_thresholds_are_not_obfuscation() -> None:
    below = script(
        hex_names=OBFUSCATED_HEX_NAMES - 1,
        escape_run=OBFUSCATED_ESCAPE_RUN - 1,
        base64_literal=OBFUSCATED_BASE64_BYTES - 1,
    )
    assert file_findings(below) == []


def test_obfuscation_message_lists_every_sign() -> None:
    (finding,) = file_findings(script(hex_names=50, dynamic_code=2))
    assert finding.message == (
        "looks obfuscated: 50 _0x-style hex identifiers; "
        "2 eval / new Function call(s) on a built-up string"
    )


def test_findings_follow_path_order_whatever_the_listing_order() -> None:
    listing = Listing(
        files={"z.exe": 1, "a.dll": 1, "m/big.bin": LARGE_FILE_BYTES + 1},
        traits={"m/big.bin": FileTraits(executable=True)},
    )
    assert [f.path for f in file_findings(listing)] == [
        "file:a.dll",
        "file:m/big.bin",
        "file:m/big.bin",
        "file:z.exe",
    ]


def test_real_samples_are_judged_as_expected() -> None:
    minified = b"!function(e){var t={};" + b"e.a=function(n){return t[n]||n};" * 200 + b"}();"
    obfuscated = b"".join(b"var _0x%04x=_0x%04x+1;\n" % (i, i + 1) for i in range(40))
    files = {
        "dist/app.min.js": minified,
        "lib/o.js": obfuscated,
        "src/ok.js": b"let a = 1;\n" * 300,
    }
    listing = Listing(
        files={name: len(data) for name, data in files.items()},
        traits={name: traits_of(name, 0o644, data) for name, data in files.items()},
    )
    assert codes(file_findings(listing)) == [
        (Code.SCRIPT_MINIFIED, "info", "file:dist/app.min.js"),
        (Code.SCRIPT_OBFUSCATED, "warning", "file:lib/o.js"),
    ]


def test_an_install_script_piping_a_download_into_a_shell_is_a_warning() -> None:
    script = b"#!/bin/sh\nset -e\ncurl -fsSL https://get.example.com/tool | sh\n"
    listing = Listing(
        files={"install.sh": len(script)},
        traits={"install.sh": traits_of("install.sh", 0o755, script)},
    )
    findings = file_findings(listing)
    assert codes(findings) == [
        (Code.FILE_EXECUTABLE, "warning", "file:install.sh"),
        (Code.SCRIPT_RUNS_DOWNLOAD, "warning", "file:install.sh"),
    ]
    assert findings[1].message == (
        "runs what it downloads: curl handed to sh on line 3; that code is not in the "
        "package, so the review does not see it and it can change after approval"
    )


def test_a_readme_showing_a_download_piped_into_a_shell_is_not_a_finding() -> None:
    text = b"Install: curl -fsSL https://get.example.com/tool | sh\n"
    listing = Listing(
        files={"README.md": 10}, traits={"README.md": traits_of("README.md", 0o644, text)}
    )
    assert file_findings(listing) == []
