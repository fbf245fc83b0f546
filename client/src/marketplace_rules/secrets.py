"""Secrets in a package: marketplace publishing tokens and other credentials.

Shared by the service (while an upload streams, `packages.archive`) and the publishing tool
(before it uploads): the same patterns, the same findings. A secret never leaves this
module in clear except the marketplace tokens' values (`FileScan.tokens`), which the
service needs to revoke them; everything shown is `mask`ed.

The detectors are `detect-secrets`' regex plugins with distinctive shapes (cloud access
keys, private key blocks, service tokens). Its entropy and keyword plugins are left out:
they flag ordinary hashes, lock files and sample code, and an error finding rejects.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from marketplace_rules.findings import FILE_PATH_PREFIX, Code, Finding, item_path, join_path
from marketplace_rules.limits import KIB
from marketplace_rules.vocabulary import PAT_PREFIX

MARKETPLACE_TOKEN: Final = "marketplace publishing token"  # noqa: S105 - a label
_PAT = re.compile(re.escape(PAT_PREFIX).encode() + rb"[A-Za-z0-9_-]{43}")
_PAT_TEXT = re.compile(_PAT.pattern.decode())

# Each piece is scanned with the previous one's last OVERLAP bytes in front, and a match
# ending in those last bytes waits for the next piece (or `finish`): a secret cut by a piece
# boundary is seen whole, once (no pattern matches more than about 1 KiB). Memory stays
# bounded whatever the length of a line.
OVERLAP: Final = 2 * KIB
# A file whose first bytes hold a NUL is binary (images, archives, compiled code): not read.
BINARY_PROBE: Final = 8 * KIB
# Bytes gathered before a scan: a small file is scanned once, a large one a piece at a time.
SCAN_AT: Final = 64 * KIB
# Hits kept per file and per package: enough to act on, bounded against a hostile package.
HITS_PER_FILE: Final = 10
HITS_PER_PACKAGE: Final = 100
TOKENS_MAX: Final = 100


# Each detector with its gates: cheap searches, one of which finds something in any text
# the detector matches; the detector's own patterns run only over a piece a gate opens.
# Most of its patterns start with an alternation, which the regex engine cannot search for
# quickly: run over every byte they cost 4 s per 50 MiB; a search for a literal prefix
# costs about 25 ms. Gates written in lower case run over the lower-cased piece (for the
# detectors that ignore case).
_Gate = tuple[bytes, bool]
_GATES: Final[dict[str, tuple[_Gate, ...]]] = {
    "AWSKeyDetector": (
        (b"A(?:KIA|SIA|BIA|CCA|3T)", False),
        (b"aws.{0,20}?(?:key|pw|pass|token)", True),
    ),
    "AzureStorageKeyDetector": ((b"AccountKey=", False),),
    "GitHubTokenDetector": ((b"gh[pousr]_", False),),
    "GitLabTokenDetector": (
        (b"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-", False),
        (b"GR1348941", False),
    ),
    "OpenAIDetector": ((b"T3BlbkFJ", False),),
    "PrivateKeyDetector": ((b"PRIVATE KEY", False), (b"PuTTY-User-Key", False)),
    "PypiTokenDetector": ((b"pypi-", False),),
    "SendGridDetector": ((rb"SG\.", False),),
    "SlackDetector": ((b"xox", True), (b"hooks.slack.com", True)),
    "SquareOAuthDetector": ((b"sq0csp-", False),),
    "StripeDetector": ((b"k_live_", False),),
}


def _as_bytes(pattern: re.Pattern[str]) -> re.Pattern[bytes]:
    # Every detector pattern is ASCII; as bytes it runs over raw file bytes, undecoded.
    return re.compile(pattern.pattern.encode("ascii"), pattern.flags & ~re.UNICODE)


def _one_pattern(detector: Any) -> re.Pattern[bytes]:
    # One alternation per detector: one pass over the bytes instead of one per pattern.
    denylist: list[re.Pattern[str]] = list(detector.denylist)
    parts = [f"(?:{p.pattern})" for p in denylist]
    return _as_bytes(re.compile("|".join(parts), denylist[0].flags))


_CompiledGate = tuple[re.Pattern[bytes], bool]
_Pattern = tuple[str, re.Pattern[bytes], tuple[_CompiledGate, ...]]


def _gates(gates: tuple[_Gate, ...]) -> tuple[_CompiledGate, ...]:
    return tuple((re.compile(pattern), lowered) for pattern, lowered in gates)


@functools.cache
def _patterns() -> tuple[_Pattern, ...]:
    """Every pattern with its gates, built at the first scan: importing detect-secrets
    loads `requests` and takes about 0.2 s, which the tool's other commands need not pay
    (and `rules` stays importable with the standard library alone)."""
    from detect_secrets.plugins import (
        aws,
        azure_storage_key,
        github_token,
        gitlab_token,
        openai,
        private_key,
        pypi_token,
        sendgrid,
        slack,
        square_oauth,
        stripe,
    )

    detectors = (
        aws.AWSKeyDetector,
        azure_storage_key.AzureStorageKeyDetector,
        github_token.GitHubTokenDetector,
        gitlab_token.GitLabTokenDetector,
        openai.OpenAIDetector,
        private_key.PrivateKeyDetector,
        pypi_token.PypiTokenDetector,
        sendgrid.SendGridDetector,
        slack.SlackDetector,
        square_oauth.SquareOAuthDetector,
        stripe.StripeDetector,
    )
    return (
        (MARKETPLACE_TOKEN, _PAT, ()),  # its own pattern starts with a literal: no gate
        *((str(d.secret_type), _one_pattern(d()), _gates(_GATES[d.__name__])) for d in detectors),
    )


def mask(secret: str) -> str:
    """What may be shown of a secret: its first 4 characters and its length."""
    return f"{secret[:4]}…({len(secret)} chars)"


@dataclass(frozen=True, slots=True)
class SecretHit:
    """One secret found: what it looks like, where (a finding path), on which line (files
    only) and its masked form. Never its value."""

    kind: str
    path: str
    line: int | None
    masked: str

    @property
    def is_marketplace_token(self) -> bool:
        return self.kind == MARKETPLACE_TOKEN


def _opens(gates: tuple[_CompiledGate, ...], data: bytes, lowered: list[bytes]) -> bool:
    if not gates:
        return True
    for gate, on_lowered in gates:
        if on_lowered and not lowered:
            lowered.append(data.lower())
        if gate.search(lowered[0] if on_lowered else data):
            return True
    return False


def _matches(data: bytes) -> Iterator[tuple[str, re.Match[bytes]]]:
    lowered: list[bytes] = []  # the piece lower-cased, made once if a gate needs it
    for kind, pattern, gates in _patterns():
        if not _opens(gates, data, lowered):
            continue
        for match in pattern.finditer(data):
            yield kind, match


@dataclass
class FileScan:
    """Scans one file's bytes as they come (`feed` pieces of any size, then `hits`).

    Stops reading at the first sign of a binary file, and after HITS_PER_FILE hits."""

    path: str
    hits: list[SecretHit] = field(default_factory=list)
    tokens: set[str] = field(default_factory=set, repr=False)
    binary: bool = False
    _buffer: bytearray = field(default_factory=bytearray)  # fed, not yet settled
    _seen: int = 0  # bytes fed so far
    _lines: int = 0  # line breaks before _buffer
    _found: set[tuple[str, int]] = field(default_factory=set)

    @property
    def done(self) -> bool:
        return self.binary or len(self.hits) >= HITS_PER_FILE

    def feed(self, piece: bytes) -> None:
        if self.done or not piece:
            return
        if self._seen < BINARY_PROBE and b"\0" in piece[: BINARY_PROBE - self._seen]:
            self.binary = True
            return
        self._buffer += piece
        self._seen += len(piece)
        if len(self._buffer) < SCAN_AT:
            return  # small files are scanned once, by finish
        window = bytes(self._buffer)
        # A match ending in the last OVERLAP bytes waits; the kept tail is twice as long,
        # so the next window holds the whole of it (matches repeated there are dropped).
        self._scan(window, settled=len(window) - OVERLAP)
        keep = 2 * OVERLAP
        self._lines += window.count(b"\n", 0, len(window) - keep)
        self._buffer = bytearray(window[len(window) - keep :])

    def finish(self) -> FileScan:
        """The end of the file: what is left (a small file: all of it) is scanned."""
        if not self.done and self._buffer:
            window = bytes(self._buffer)
            self._scan(window, settled=len(window))
        self._buffer = bytearray()
        return self

    def _scan(self, window: bytes, *, settled: int) -> None:
        """Record the matches in window that end by `settled` (the rest may grow)."""
        start = self._seen - len(self._buffer)  # offset of window[0] in the file
        for kind, match in _matches(window):
            if match.end() > settled:
                continue
            self._record(kind, match, window, start)
            if self.done:
                return

    def _record(self, kind: str, match: re.Match[bytes], window: bytes, start: int) -> None:
        offset = start + match.start()
        if (kind, offset) in self._found:  # seen already, in the previous piece's overlap
            return
        self._found.add((kind, offset))
        value = match.group().decode("ascii", "replace")
        line = self._lines + window.count(b"\n", 0, match.start()) + 1
        self.hits.append(SecretHit(kind, FILE_PATH_PREFIX + self.path, line, mask(value)))
        if kind == MARKETPLACE_TOKEN:
            self.tokens.add(value)


def scan_bytes(path: str, data: bytes) -> FileScan:
    scan = FileScan(path)
    scan.feed(data)
    return scan.finish()


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string of a JSON document (keys too) with its JSON path."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            where = join_path(path, str(key))
            yield where, str(key)
            yield from _strings(item, where)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, item_path(path, index))


@dataclass(frozen=True)
class DocumentScan:
    hits: tuple[SecretHit, ...]
    tokens: frozenset[str] = field(repr=False)


def scan_document(document: Any, prefix: str = "") -> DocumentScan:
    """Secrets in the strings of a JSON document (a manifest: inline code, config
    defaults, env values...), each hit at its JSON path."""
    hits: list[SecretHit] = []
    tokens: set[str] = set()
    for path, text in _strings(document, prefix):
        if len(tokens) >= TOKENS_MAX:
            break
        data = text.encode("utf-8", "surrogatepass")
        for kind, match in _matches(data):
            value = match.group().decode("ascii", "replace")
            hits.append(SecretHit(kind, path, None, mask(value)))
            if kind == MARKETPLACE_TOKEN:
                tokens.add(value)
    return DocumentScan(tuple(hits), frozenset(tokens))


def has_marketplace_token(text: str) -> bool:
    return _PAT_TEXT.search(text) is not None


def secret_findings(hits: Iterable[SecretHit]) -> list[Finding]:
    """One error per secret found (an error rejects the version: the secret must go)."""
    findings: list[Finding] = []
    for hit in hits:
        where = f" on line {hit.line}" if hit.line is not None else ""
        if hit.is_marketplace_token:
            message = (
                f"holds a {MARKETPLACE_TOKEN} ({hit.masked}){where}; remove it (a live one "
                "is revoked at upload)"
            )
            findings.append(Finding.error(Code.MARKETPLACE_TOKEN, hit.path, message))
        else:
            message = (
                f"holds what looks like a secret: {hit.kind} ({hit.masked}){where}; remove "
                "it and revoke it where it was issued"
            )
            findings.append(Finding.error(Code.SECRET, hit.path, message))
    return findings
