"""What a reviewer should look at among a package's files: executables, native binaries,
very large files, minified or obfuscated JavaScript, scripts that run what they download.
Warnings and infos: they never reject a version on their own.

The facts come from `rules.traits` (mode bits and the first bytes of each file), so the
service (from the upload stream) and the publishing tool (from a folder) judge alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final, Protocol

from marketplace_rules.content import PackageFiles
from marketplace_rules.findings import FILE_PATH_PREFIX, Code, Finding
from marketplace_rules.limits import KIB, LARGE_FILE_BYTES, MIB
from marketplace_rules.model_text.sources import ModelText
from marketplace_rules.secrets import SecretHit
from marketplace_rules.traits import FileTraits, ScriptStats, ShellPipe

# Names of native code whatever its bytes say (a library named libfoo.so.1 too).
NATIVE_NAME: Final = re.compile(r"\.(?:exe|dll|sys|msi|so(?:\.\d+)*|dylib|node|wasm)$", re.I)

# Minified: a JavaScript sample of at least MINIFIED_MIN_BYTES whose lines average
# MINIFIED_LINE_BYTES or more (hand-written code averages 30 to 40).
MINIFIED_MIN_BYTES: Final = 2 * KIB
MINIFIED_LINE_BYTES: Final = 250
# Obfuscated: any one of these in the sample.
OBFUSCATED_HEX_NAMES: Final = 10  # `_0x4f2a` identifiers
OBFUSCATED_ESCAPE_RUN: Final = 40  # consecutive \xNN / \uNNNN escapes
OBFUSCATED_BASE64_BYTES: Final = 4 * KIB  # one quoted base64-looking literal
# ... and any eval( / new Function( whose argument is built from pieces.


class PackageTraits(PackageFiles, Protocol):
    """A package's files and links, the traits of its notable files (the others have
    none worth a finding), the secrets in their text, and the text files a model reads
    (`rules.model_text`, each at `file:<path>`)."""

    @property
    def traits(self) -> Mapping[str, FileTraits]: ...

    @property
    def secrets(self) -> Sequence[SecretHit]: ...

    @property
    def model_texts(self) -> Sequence[ModelText]: ...


_PLAIN = FileTraits()


def file_findings(package: PackageTraits | None) -> list[Finding]:
    """Findings about the package's files, file by file in path order."""
    if package is None:
        return []
    findings: list[Finding] = []
    for path in sorted(package.files):
        traits = package.traits.get(path, _PLAIN)
        where = FILE_PATH_PREFIX + path
        findings += _binary_findings(where, path, traits)
        size = package.files[path]
        if size > LARGE_FILE_BYTES:
            findings.append(
                Finding.warning(
                    Code.FILE_LARGE,
                    where,
                    f"is {_mib(size)} ({size} bytes); files over {_mib(LARGE_FILE_BYTES)} "
                    "deserve a look at what they hold",
                )
            )
        if traits.script is not None:
            findings += _script_findings(where, traits.script)
        if traits.shell_pipe is not None:
            findings.append(_download_finding(where, traits.shell_pipe))
    return findings


def _download_finding(where: str, pipe: ShellPipe) -> Finding:
    message = (
        f"runs what it downloads: {pipe.fetch} handed to {pipe.run} on line {pipe.line}; "
        "that code is not in the package, so the review does not see it and it can change "
        "after approval"
    )
    return Finding.warning(Code.SCRIPT_RUNS_DOWNLOAD, where, message)


def _binary_findings(where: str, path: str, traits: FileTraits) -> list[Finding]:
    named = NATIVE_NAME.search(path)
    executable = "; it is marked executable" if traits.executable else ""
    if traits.binary is not None:
        what = "a WebAssembly module" if traits.binary == "WebAssembly" else "native code"
        disguise = "" if named else ", although its name does not say so"
        message = f"is {what} ({traits.binary}, by its first bytes){disguise}{executable}"
        return [Finding.warning(Code.FILE_NATIVE_BINARY, where, message)]
    if named:
        message = f"has the name of a native binary ({named.group()}){executable}"
        return [Finding.warning(Code.FILE_NATIVE_BINARY, where, message)]
    if traits.executable:
        message = "is marked executable (a mode with an exec bit)"
        return [Finding.warning(Code.FILE_EXECUTABLE, where, message)]
    return []


def _script_findings(where: str, stats: ScriptStats) -> list[Finding]:
    findings: list[Finding] = []
    average = stats.sampled // (stats.lines + 1)
    if stats.sampled >= MINIFIED_MIN_BYTES and average >= MINIFIED_LINE_BYTES:
        findings.append(
            Finding.info(
                Code.SCRIPT_MINIFIED,
                where,
                f"looks minified: lines average {average} bytes in its first "
                f"{stats.sampled} bytes (longest {stats.longest_line})",
            )
        )
    signs = obfuscation_signs(stats)
    if signs:
        message = "looks obfuscated: " + "; ".join(signs)
        findings.append(Finding.warning(Code.SCRIPT_OBFUSCATED, where, message))
    return findings


def obfuscation_signs(stats: ScriptStats) -> list[str]:
    """The obfuscation markers a JavaScript sample shows, in words; [] when none."""
    signs: list[str] = []
    if stats.hex_names >= OBFUSCATED_HEX_NAMES:
        signs.append(f"{stats.hex_names} _0x-style hex identifiers")
    if stats.escape_run >= OBFUSCATED_ESCAPE_RUN:
        signs.append(f"a run of {stats.escape_run} \\x/\\u escapes")
    if stats.dynamic_code:
        signs.append(f"{stats.dynamic_code} eval / new Function call(s) on a built-up string")
    if stats.base64_literal >= OBFUSCATED_BASE64_BYTES:
        signs.append(f"a base64-looking literal of {stats.base64_literal} characters")
    return signs


def _mib(size: int) -> str:
    return f"{size / MIB:.1f} MiB"
