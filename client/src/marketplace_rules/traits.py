"""Facts about one file of a package, taken from its mode and its first bytes only.

The service gathers them while it streams an upload (`packages.archive`), the publishing
tool from a folder on disk (`cli.pack`); the rules in `rules.files` judge them. A file
is never read whole: `sample_size` says how many leading bytes `traits_of` looks at.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Final, Literal

from marketplace_rules.limits import KIB

BinaryFormat = Literal["ELF", "PE", "Mach-O", "WebAssembly"]

HEAD_BYTES: Final = 1 * KIB
"""Bytes read from every file: enough for the magic numbers and a PE header's offset."""
SCRIPT_SAMPLE_BYTES: Final = 64 * KIB
"""Bytes of a JavaScript file the minification and obfuscation heuristics look at."""
SCRIPT_SUFFIXES: Final = (".js", ".mjs", ".cjs")
SHELL_SUFFIXES: Final = (
    ".sh",
    ".bash",
    ".zsh",
    ".ksh",
    ".fish",
    ".command",
    ".ps1",
    ".psm1",
    ".bat",
    ".cmd",
)
"""Shell, PowerShell and batch scripts: read as far as JavaScript (SCRIPT_SAMPLE_BYTES)."""

_EXECUTABLE_BITS = 0o111
_ELF = b"\x7fELF"
_WASM = b"\0asm"
_MACH_O = frozenset(
    {
        b"\xfe\xed\xfa\xce",
        b"\xfe\xed\xfa\xcf",
        b"\xce\xfa\xed\xfe",
        b"\xcf\xfa\xed\xfe",
    }
)
# Universal (fat) Mach-O starts like a Java class file; the next word tells them apart:
# an architecture count (small) against a class file's version (45 or more).
_FAT_MACH_O = (b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf")
_FAT_ARCH_MAX = 30
_PE_OFFSET_AT = 0x3C
_DOS_HEADER_BYTES = 64

# Markers of generated or disguised JavaScript, counted in the sample (bytes, so a
# sample cut inside a UTF-8 sequence costs nothing).
_HEX_NAME = re.compile(rb"\b_0x[0-9a-fA-F]{3,}\b")
_ESCAPE_RUN = re.compile(rb"(?:\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\u\{[0-9a-fA-F]{1,6}\})+")
_ESCAPE = re.compile(rb"\\[xu]")
_DYNAMIC_CODE = re.compile(rb"\b(?:eval|new\s+Function)\s*\(")
_DYNAMIC_ARGUMENT_WINDOW = 200
# What builds the string handed to eval / new Function: decoding, concatenation, joins.
_STRING_BUILDING = re.compile(
    rb"atob\s*\(|fromCharCode|unescape\s*\(|decodeURI(?:Component)?\s*\(|Buffer\.from\s*\("
    rb"|\.join\s*\(|\.reverse\s*\(|\.split\s*\(|\.replace\s*\(|\+"
)
_BASE64_LITERAL = re.compile(rb"[\"'`]([A-Za-z0-9+/]{256,}={0,2})[\"'`]")

# A download run by a shell or an interpreter, in a script: the code it runs is fetched
# when it runs, so it is not in the package and can change after the review.
_FETCH = rb"(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)"
_RUNNER = (
    rb"(?:(?:/usr)?(?:/local)?/bin/)?"
    rb"(?:sh|bash|zsh|ksh|dash|ash|fish|python[0-9.]*|perl|ruby|node|php|pwsh|powershell"
    rb"|iex|invoke-expression|source)"
)
_SHELL_PIPE = re.compile(
    # curl -fsSL https://x | sh, wget -qO- URL | sudo -E bash -, irm URL | iex
    rb"\b(?P<fetch>" + _FETCH + rb")\b[^\n;&]*?(?<!\|)\|(?!\|)\s*"
    rb"(?:sudo(?:\s+-\S+)*\s+)?(?:env(?:\s+\w+=\S*)*\s+)?(?P<run>" + _RUNNER + rb")\b(?![.-])"
    # bash <(curl URL), sh -c "$(wget -qO- URL)", iex (iwr URL), source <(curl URL)
    rb"|\b(?P<run2>" + _RUNNER + rb")(?:\s+-\w+)*\s+(?:-c\s+)?[\"']?(?:<|\$)?\(\s*"
    rb"(?P<fetch2>" + _FETCH + rb")\b"
    # iex ((New-Object Net.WebClient).DownloadString('URL'))
    rb"|\b(?P<run3>iex|invoke-expression)\b[^\n]{0,40}?(?P<fetch3>downloadstring)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ScriptStats:
    """Counts over the sampled head of a JavaScript file."""

    sampled: int  # bytes looked at (at most SCRIPT_SAMPLE_BYTES)
    lines: int  # line breaks in the sample
    longest_line: int  # bytes
    hex_names: int  # `_0x1f2e`-style identifiers, the mark of javascript-obfuscator
    escape_run: int  # longest run of consecutive \xNN / \uNNNN escapes, in escapes
    dynamic_code: int  # eval( / new Function( whose argument is built from pieces
    base64_literal: int  # length of the longest quoted base64-looking literal (>= 256)


@dataclass(frozen=True, slots=True)
class ShellPipe:
    """A download handed to a shell or an interpreter: on which line of the sample, which
    command fetches (`curl`) and which runs it (`sh`)."""

    line: int
    fetch: str
    run: str


@dataclass(frozen=True, slots=True)
class FileTraits:
    """What a package file's mode and first bytes say; the default says nothing notable."""

    executable: bool = False  # any exec bit in its mode
    binary: BinaryFormat | None = None  # a native or WebAssembly binary by its magic bytes
    script: ScriptStats | None = None  # for .js / .mjs / .cjs files
    shell_pipe: ShellPipe | None = None  # for scripts a shell runs (`shell_pipe`)

    @property
    def notable(self) -> bool:
        return self != _PLAIN


_PLAIN = FileTraits()


def is_script(path: str) -> bool:
    return path.lower().endswith(SCRIPT_SUFFIXES)


def is_executable(mode: int) -> bool:
    """Whether a file mode has an exec bit (for its owner, group or others)."""
    return bool(mode & _EXECUTABLE_BITS)


def is_shell_script(path: str) -> bool:
    return path.lower().endswith(SHELL_SUFFIXES)


def sample_size(path: str) -> int:
    """How many leading bytes of the file at path `traits_of` wants."""
    return SCRIPT_SAMPLE_BYTES if is_script(path) or is_shell_script(path) else HEAD_BYTES


def traits_of(path: str, mode: int, head: bytes) -> FileTraits:
    """The traits of the file at path from its mode bits and its first bytes (head: at
    most `sample_size(path)` of them; more are ignored)."""
    head = head[: sample_size(path)]
    binary = binary_format(head)
    runs = is_shell_script(path) or head.startswith(b"#!") or is_executable(mode)
    return FileTraits(
        executable=is_executable(mode),
        binary=binary,
        script=script_stats(head) if is_script(path) else None,
        shell_pipe=shell_pipe(head) if runs and binary is None else None,
    )


def shell_pipe(sample: bytes) -> ShellPipe | None:
    """The first download the script hands to a shell or an interpreter, if any (in the
    sample: a shell script's first SCRIPT_SAMPLE_BYTES, another file's first HEAD_BYTES)."""
    if b"|" not in sample and b"(" not in sample:
        return None
    match = _SHELL_PIPE.search(sample)
    if match is None:
        return None
    fetch = match["fetch"] or match["fetch2"] or match["fetch3"]
    run = match["run"] or match["run2"] or match["run3"]
    return ShellPipe(
        line=sample.count(b"\n", 0, match.start()) + 1,
        fetch=fetch.decode("ascii"),
        run=run.decode("ascii"),
    )


def binary_format(head: bytes) -> BinaryFormat | None:
    """The executable format the first bytes of a file announce, if any."""
    if head.startswith(_ELF):
        return "ELF"
    if head.startswith(_WASM):
        return "WebAssembly"
    if head[:4] in _MACH_O:
        return "Mach-O"
    if head.startswith(_FAT_MACH_O) and len(head) >= 8:
        (count,) = struct.unpack(">I", head[4:8])
        return "Mach-O" if 0 < count <= _FAT_ARCH_MAX else None
    if head.startswith(b"MZ") and _is_pe(head):
        return "PE"
    return None


def _is_pe(head: bytes) -> bool:
    """A DOS/Windows executable, not a text that happens to start with "MZ": the PE
    signature where the DOS header points, or a DOS header's binary zero bytes."""
    if len(head) >= _PE_OFFSET_AT + 4:
        (offset,) = struct.unpack("<I", head[_PE_OFFSET_AT : _PE_OFFSET_AT + 4])
        if head[offset : offset + 4] == b"PE\0\0":
            return True
    return b"\0" in head[:_DOS_HEADER_BYTES]


def script_stats(sample: bytes) -> ScriptStats:
    """Counts over the head of a JavaScript file (at most SCRIPT_SAMPLE_BYTES of it)."""
    sample = sample[:SCRIPT_SAMPLE_BYTES]
    lines = sample.split(b"\n")
    # Each marker is looked for only when its cheap substring is there: most files of a
    # package are plain scripts, and every one of them is measured.
    return ScriptStats(
        sampled=len(sample),
        lines=len(lines) - 1,
        longest_line=max(map(len, lines)),
        hex_names=len(_HEX_NAME.findall(sample)) if b"_0x" in sample else 0,
        escape_run=_longest_escape_run(sample) if b"\\" in sample else 0,
        dynamic_code=_dynamic_code(sample) if b"eval" in sample or b"Function" in sample else 0,
        base64_literal=_longest_base64(sample),
    )


def _longest_escape_run(sample: bytes) -> int:
    runs = [match.group() for match in _ESCAPE_RUN.finditer(sample)]
    return max((len(_ESCAPE.findall(run)) for run in runs), default=0)


def _dynamic_code(sample: bytes) -> int:
    return sum(
        1
        for match in _DYNAMIC_CODE.finditer(sample)
        if _STRING_BUILDING.search(sample, match.end(), match.end() + _DYNAMIC_ARGUMENT_WINDOW)
    )


def _longest_base64(sample: bytes) -> int:
    return max((len(literal) for literal in _BASE64_LITERAL.findall(sample)), default=0)
