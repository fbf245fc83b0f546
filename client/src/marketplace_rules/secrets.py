"""Secrets in a package: marketplace publishing tokens and other credentials.

Shared by the service (while an upload streams, `packages.archive`) and the publishing tool
(before it uploads): the same patterns, the same findings. A secret never leaves this
module in clear except the marketplace tokens' values (`FileScan.tokens`), which the
service needs to revoke them; everything shown is `mask`ed.

Three kinds of detection, all `detect-secrets`':
- its regex plugins with distinctive shapes (cloud access keys, private key blocks,
  service tokens);
- its keyword plugin: a value assigned to a secret-sounding name (`OPENAI_API_KEY = "..."`,
  `DB_PASSWORD=...`), with the assignment forms of the file's type (unquoted values in
  `.env`, YAML, INI and TOML files, quoted ones elsewhere);
- an AWS secret access key: 40 base64 characters of high entropy (its Base64 entropy
  measure) next to an access key id, or assigned to an `aws..._key` name unquoted.
Its free-standing entropy plugins are left out: every hash and lock file would trip them.

Every hit but a marketplace token then goes through its filters (`detect-secrets`'
heuristics: templated and `$` values, indirect references, sequential strings, UUIDs,
lock and swagger files, the `pragma: allowlist secret` comment) and a few of ours for the
shapes sample code gives a value: placeholders (`your-api-key`, `xxx`, `changeme`, the AWS
documentation's `...EXAMPLE` keys), names of variables, paths, words. A keyword value must
moreover look made up: no spaces, at least VALUE_MIN characters, letters with a digit or a
symbol (or long and of high entropy). An error finding rejects, so these filters are what
keeps the false findings under the budget (docs/findings.md, `make bench-secrets`).
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from marketplace_rules.findings import FILE_PATH_PREFIX, Code, Finding, item_path, join_path
from marketplace_rules.limits import KIB
from marketplace_rules.vocabulary import PAT_PREFIX

MARKETPLACE_TOKEN: Final = "marketplace publishing token"  # noqa: S105 - a label
KEYWORD_SECRET: Final = "Secret Keyword"  # noqa: S105 - detect-secrets' label
AWS_ACCESS_KEY: Final = "AWS Access Key"  # detect-secrets' label
AWS_SECRET_KEY: Final = "AWS Secret Access Key"  # noqa: S105 - a label
PRIVATE_KEY: Final = "Private Key"  # detect-secrets' label
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
# The file name a manifest's strings are judged as (by the allowlist comment's syntax).
DOCUMENT_NAME: Final = "manifest.json"

# A keyword assignment is looked for on lines of at most LINE_MAX bytes: longer lines are
# minified or generated code, where names like `password` are form fields and
# translations, not credentials (a line of 1,000 characters is also where detect-secrets'
# indirect-reference filter stops). Lines are what OVERLAP holds whole.
LINE_MAX: Final = 1000
# A keyword value: at least this long, and letters with a digit or a symbol, or this long
# and of this Base64 entropy (detect-secrets' measure, bits per character).
VALUE_MIN: Final = 8
LONG_VALUE_MIN: Final = 20
LONG_VALUE_ENTROPY: Final = 4.0
# A value of hexadecimal digits only is a hash or an id below this length.
HEX_VALUE_MIN: Final = 32
# An AWS secret access key: 40 base64 characters of this entropy (random ones have 4.2 to
# 5.2, 99.9% of them over 4.35) within AWS_CONTEXT bytes of an access key id.
AWS_SECRET_ENTROPY: Final = 4.3
AWS_CONTEXT: Final = 512


# Each detector with its gates: cheap searches, one of which finds something in any text
# the detector matches; the detector's own patterns run only over a piece a gate opens.
# Most of its patterns start with an alternation, which the regex engine cannot search for
# quickly: run over every byte they cost 4 s per 50 MiB; a search for a literal prefix
# costs about 25 ms. Gates written in lower case run over the lower-cased piece (for the
# detectors that ignore case).
_Gate = tuple[bytes, bool]
_AWS_NAME_GATE: Final = (b"aws.{0,20}?(?:key|pw|pass|token)", True)
_GATES: Final[dict[str, tuple[_Gate, ...]]] = {
    "AWSKeyDetector": ((b"A(?:KIA|SIA|BIA|CCA|3T)", False), _AWS_NAME_GATE),
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
_AWS_KEY_ID = re.compile(rb"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}")
_BASE64_40 = re.compile(rb"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])")
# detect-secrets' AWS secret pattern (`aws..key.."<40>"`) without the quotes it requires:
# `export AWS_SECRET_ACCESS_KEY=...` in a script or a README.
_AWS_SECRET_ASSIGNED = re.compile(
    rb"aws\w{0,20}?(?:key|pwd|pw|password|pass|token)\w{0,20}?[\"']?\s*[:=]\s*[\"']?"
    rb"([A-Za-z0-9+/]{40})(?![A-Za-z0-9+/=])",
    re.IGNORECASE,
)


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
        (AWS_SECRET_KEY, _AWS_SECRET_ASSIGNED, _gates((_AWS_NAME_GATE,))),
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


# ---------- the filters ----------

# The shapes documentation and tests give a credential (case ignored): the AWS
# documentation's `...EXAMPLE` keys, `xxxx`, `your-...`, `mock`, `test`, one character
# repeated 8 times, a run of 6 letters or digits in order (`abcdef`, `123456`).
_RUNS = [
    text[at : at + 6]
    for text in (string.ascii_lowercase, string.digits)
    for at in range(len(text) - 5)
]
_SAMPLE = re.compile(
    r"example|x{4}|your|dummy|fake|sample|mock|test|placeholder|redacted|(.)\1{7}|"
    + "|".join(_RUNS),
    re.IGNORECASE,
)
# What sample code assigns to a secret-sounding name instead of a secret (also looked for
# with digits read as letters: `P@55w0rd`).
_PLACEHOLDER = re.compile(
    r"change_?me|change-me|replace|insert|demo|default|secret|passw|api_?key"
    r"|api-key|token|abc123|xyz|\*\*\*|\.\.\.|[<>{}]|%s|%\(",
    re.IGNORECASE,
)
_LEET = str.maketrans("013457@$", "oieastas")
# Names of variables and settings (`process.env.X`, `config.db.password`, `DB_PASSWORD`),
# paths, URLs without credentials, dates.
_IDENTIFIER = re.compile(
    r"[A-Za-z_$][\w$]*(?:(?:\.|::?)[A-Za-z_$][\w$]*)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
)
_PATH = re.compile(r"(?:\.{0,2}/|~/|[A-Za-z]:\\).*|.*\.[A-Za-z]{2,4}|\w+://[^@]*")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_HEX = re.compile(r"[0-9a-fA-F]+")
# Besides letters, a value needs a digit or one of these (`_`, `-` and `.` join words).
_MARKS = frozenset(string.digits + string.punctuation) - frozenset("_-.")
# Tests, fixtures, mocks and examples, by the name of a folder or of the file: the values
# assigned there to secret-sounding names are made up (the detectors still run on them).
_TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|__tests__|__mocks__|specs?|fixtures?|mocks?|examples?|samples?|demos?)/"
    r"|(?:^|[/._-])(?:tests?|spec|conftest|fixtures?|mocks?|examples?|samples?)(?:[._-][^/]*)?$",
    re.IGNORECASE,
)
# A private key block holds key material: a base64 run this long, this near its header
# (after the headers of an encrypted key) and before its END line.
_KEY_BODY = re.compile(rb"[A-Za-z0-9+/=]{40}")
KEY_BODY_WITHIN: Final = 300
_BASE64_CHAR = re.compile(rb"[A-Za-z0-9+/]")


@dataclass(frozen=True)
class _Filters:
    """detect-secrets' filters and the parts of its keyword plugin used here (imported at
    the first scan, as `_patterns`)."""

    sequential: Callable[[str], bool]
    uuid: Callable[[str], bool]
    templated: Callable[[str], bool]
    dollar: Callable[[str], bool]
    indirect_reference: Callable[[str], bool]
    likely_id: Callable[[str, str], bool]
    skipped_file: Callable[[str], bool]
    allowlisted: Callable[[str, str, str], bool]
    entropy: Callable[[str], float]
    keyword_regexes: Callable[[str], Mapping[re.Pattern[str], int]]
    keyword_name: re.Pattern[bytes]


@dataclass(frozen=True)
class _Context:
    """What detect-secrets' allowlist filter reads of a line's surroundings."""

    previous_line: str


@functools.cache
def _filters() -> _Filters:
    from detect_secrets.filters import allowlist, heuristic
    from detect_secrets.plugins import keyword
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
    from detect_secrets.util.filetype import FileType, determine_file_type

    def keyword_regexes(path: str) -> Mapping[re.Pattern[str], int]:
        # A `.env` file is assignments without quotes, as an INI file.
        kind = FileType.INI if _is_env_file(path) else determine_file_type(path)
        default = keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
        return keyword.REGEX_BY_FILETYPE.get(kind, default)

    def skipped_file(path: str) -> bool:
        return bool(
            heuristic.is_lock_file(path)
            or heuristic.is_non_text_file(path)
            or heuristic.is_swagger_file(path)
        )

    def allowlisted(path: str, line: str, previous: str) -> bool:
        context: Any = _Context(previous)
        return bool(allowlist.is_line_allowlisted(path, line, context))

    return _Filters(
        sequential=heuristic.is_sequential_string,
        uuid=heuristic.is_potential_uuid,
        templated=heuristic.is_templated_secret,
        dollar=heuristic.is_prefixed_with_dollar_sign,
        indirect_reference=heuristic.is_indirect_reference,
        likely_id=heuristic.is_likely_id_string,
        skipped_file=skipped_file,
        allowlisted=allowlisted,
        entropy=Base64HighEntropyString().calculate_shannon_entropy,
        keyword_regexes=keyword_regexes,
        keyword_name=re.compile("|".join(keyword.DENYLIST).encode("utf-8")),
    )


def _is_env_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name == ".env" or name.startswith(".env.") or name.endswith(".env")


def is_sample(value: str) -> bool:
    """A value in the shape documentation and tests give a credential (`AKIA...EXAMPLE`,
    `ghp_xxxx...`, a sequence, one character repeated)."""
    return _SAMPLE.search(value) is not None or _filters().sequential(value)


def credible_value(value: str) -> bool:
    """Whether a value assigned to a secret-sounding name looks like a credential rather
    than like what sample code puts there: no spaces, at least VALUE_MIN characters, not
    a placeholder, name, path or date; letters with a digit or a symbol, or long and of
    high entropy."""
    filters = _filters()
    if len(value) < VALUE_MIN or not value.isascii() or any(c.isspace() for c in value):
        return False
    if filters.templated(value) or filters.dollar(value) or filters.uuid(value):
        return False
    if _IDENTIFIER.fullmatch(value) or _PATH.fullmatch(value) or _DATE.search(value):
        return False
    if (
        is_sample(value)
        or _PLACEHOLDER.search(value)
        or _PLACEHOLDER.search(value.translate(_LEET))
    ):
        return False
    if _HEX.fullmatch(value) and len(value) < HEX_VALUE_MIN:
        return False  # a short hash or id
    if len(value) >= LONG_VALUE_MIN and filters.entropy(value) >= LONG_VALUE_ENTROPY:
        return True
    return any(char.isalpha() for char in value) and any(char in _MARKS for char in value)


def _credible_aws_secret(value: str) -> bool:
    return (
        _filters().entropy(value) >= AWS_SECRET_ENTROPY
        and any(char.isupper() for char in value)
        and any(char.islower() for char in value)
        and any(char.isdigit() for char in value)
        and not is_sample(value)
    )


def keyword_file(path: str) -> bool:
    """Whether the file is searched for keyword assignments: not a lock file (hashes and
    URLs), a swagger document, a file detect-secrets does not read (source maps, images,
    archives), nor a test, fixture, mock or example."""
    return not (_filters().skipped_file(path) or _TEST_PATH.search(path))


# ---------- the scan ----------


class _Candidate(NamedTuple):
    kind: str
    start: int  # of the value in the window
    end: int
    value: str
    line_start: int  # of its line, which must end by the settled point (keywords only)
    line_end: int


def _opens(gates: tuple[_CompiledGate, ...], data: bytes, lowered: list[bytes]) -> bool:
    if not gates:
        return True
    for gate, on_lowered in gates:
        if gate.search(_lowered(data, lowered) if on_lowered else data):
            return True
    return False


def _lowered(data: bytes, lowered: list[bytes]) -> bytes:
    # The piece lower-cased, made once if something needs it.
    if not lowered:
        lowered.append(data.lower())
    return lowered[0]


def _matches(data: bytes, lowered: list[bytes]) -> Iterator[tuple[str, re.Match[bytes]]]:
    for kind, pattern, gates in _patterns():
        if not _opens(gates, data, lowered):
            continue
        for match in pattern.finditer(data):
            yield kind, match


def _line(data: bytes, at: int) -> tuple[int, int] | None:
    """(start, end) of the line holding data[at], None when it is longer than LINE_MAX."""
    start = data.rfind(b"\n", max(0, at - LINE_MAX - 1), at) + 1
    if start == 0 and at > LINE_MAX:
        return None
    end = data.find(b"\n", at, start + LINE_MAX + 1)
    if end == -1:
        if len(data) - start > LINE_MAX:
            return None
        end = len(data)
    return start, end


def _text(data: bytes, start: int, end: int) -> str:
    return data[start:end].decode("utf-8", "replace").rstrip("\r")


def _allowlisted(path: str, data: bytes, at: int) -> bool:
    """detect-secrets' `pragma: allowlist secret` on the line (or `allowlist nextline`
    on the line before)."""
    line = _line(data, at)
    if line is None:
        return False
    start, end = line
    before = _line(data, start - 1) if start > 0 else None
    previous = _text(data, *before) if before is not None else ""
    return _filters().allowlisted(path, _text(data, start, end), previous)


def _detector_candidates(path: str, data: bytes, lowered: list[bytes]) -> Iterator[_Candidate]:
    """The regex detectors' matches, then AWS secret keys next to the access key ids; one
    candidate per value."""
    key_ids: list[tuple[int, int]] = []
    seen: set[int] = set()
    for kind, match in _matches(data, lowered):
        if kind in (AWS_ACCESS_KEY, AWS_SECRET_KEY) and match.group(1) is not None:
            # detect-secrets' `aws..key.."<40>"`, or its unquoted form: the key alone.
            kind = AWS_SECRET_KEY
        start, end = match.span(1) if kind == AWS_SECRET_KEY else match.span()
        value = data[start:end].decode("ascii", "replace")
        if start in seen:
            continue
        if kind != MARKETPLACE_TOKEN and _dismissed(kind, path, data, start, end, value):
            continue
        if _AWS_KEY_ID.fullmatch(data, start, end):
            key_ids.append((start, end))
        seen.add(start)
        yield _Candidate(kind, start, end, value, start, end)
    for near_start, near_end in key_ids:
        around = (max(0, near_start - AWS_CONTEXT), near_end + AWS_CONTEXT)
        for found in _BASE64_40.finditer(data, *around):
            start, end = found.span()
            value = found.group().decode("ascii")
            if start in seen or not _credible_aws_secret(value):
                continue
            if not _allowlisted(path, data, start):
                seen.add(start)
                yield _Candidate(AWS_SECRET_KEY, start, end, value, start, end)


def _has_key_material(data: bytes, header_end: int) -> bool:
    """Base64 key material after a private key header, before its END line."""
    last = data.find(b"-----END", header_end, header_end + KEY_BODY_WITHIN)
    last = header_end + KEY_BODY_WITHIN if last == -1 else last
    return _KEY_BODY.search(data, header_end, last) is not None


def _dismissed(kind: str, path: str, data: bytes, start: int, end: int, value: str) -> bool:
    """A detector's match that is not a secret: a sample value; an AWS access key id
    inside a longer run of base64 (an embedded blob, a DNA sequence); a private key
    header without key material after it (code that looks for one); or on a line with
    the allowlist comment."""
    if is_sample(value):
        return True
    if _AWS_KEY_ID.fullmatch(data, start, end) and (
        _BASE64_CHAR.fullmatch(data, max(0, start - 1), start)
        or _BASE64_CHAR.fullmatch(data, end, end + 1)
    ):
        return True
    if kind == PRIVATE_KEY and not _has_key_material(data, end):
        return True
    if kind == AWS_SECRET_KEY and not _credible_aws_secret(value):
        return True
    return _allowlisted(path, data, start)


# Keywords of detect-secrets' KeywordDetector, found by literal searches (fast) and then
# checked against its list.
_KEYWORD_LITERALS: Final = (b"key", b"pass", b"pwd", b"secret", b"contrase")


def _keyword_lines(lowered: bytes) -> list[tuple[int, int]]:
    """(start, end) of the lines of at most LINE_MAX bytes naming a keyword, in order."""
    name = _filters().keyword_name
    lines: set[tuple[int, int]] = set()
    for literal in _KEYWORD_LITERALS:
        at = lowered.find(literal)
        while at != -1:
            if not name.search(lowered, max(0, at - 9), at + len(literal) + 5):
                at = lowered.find(literal, at + 1)  # `keys`, `monkey`, `bypass`...
                continue
            line = _line(lowered, at)
            if line is None:  # a long line: on to the next one
                after = lowered.find(b"\n", at)
                at = -1 if after == -1 else lowered.find(literal, after)
                continue
            lines.add(line)
            at = lowered.find(literal, line[1])  # the line is in: on to the next one
    return sorted(lines)


def _keyword_candidates(path: str, data: bytes, lowered: list[bytes]) -> Iterator[_Candidate]:
    """Values assigned to secret-sounding names (detect-secrets' KeywordDetector with
    the assignment forms of the file's type), each passed through the filters."""
    if not keyword_file(path):
        return
    filters = _filters()
    regexes = filters.keyword_regexes(path)
    for first, last in _keyword_lines(_lowered(data, lowered)):
        line = _text(data, first, last)
        for regex, group in regexes.items():
            match = regex.search(line)
            if match is None:
                continue
            value = match.group(group)
            if (
                not credible_value(value)
                or filters.indirect_reference(line)
                or filters.likely_id(value, line)
                or _allowlisted(path, data, first)
            ):
                break
            start = first + len(line[: match.start(group)].encode("utf-8"))
            end = start + len(value.encode("utf-8"))
            yield _Candidate(KEYWORD_SECRET, start, end, value, first, last)
            break


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
    _found: set[int] = field(default_factory=set)  # offsets of the values recorded

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
        """Record the matches in window that end by `settled` (the rest may grow); for a
        keyword assignment its whole line must, and begin in the window."""
        start = self._seen - len(self._buffer)  # offset of window[0] in the file
        lowered: list[bytes] = []
        final = settled == len(window)
        found = [
            candidate
            for candidate in _detector_candidates(self.path, window, lowered)
            if candidate.end <= settled
        ]
        for candidate in _keyword_candidates(self.path, window, lowered):
            ends = candidate.line_end < settled or (final and candidate.line_end == settled)
            # A line at the window's first byte began in the previous window, which saw it.
            if ends and (candidate.line_start > 0 or start == 0):
                found.append(candidate)
        # In the file's order; a value both a detector and a keyword found is the
        # detector's (sorting is stable).
        for candidate in sorted(found, key=lambda candidate: candidate.start):
            self._record(candidate, window, start)
            if self.done:
                return

    def _record(self, candidate: _Candidate, window: bytes, start: int) -> None:
        offset = start + candidate.start
        if offset in self._found:  # seen already, in the previous piece's overlap
            return
        self._found.add(offset)
        line = self._lines + window.count(b"\n", 0, candidate.start) + 1
        kind, value = candidate.kind, candidate.value
        self.hits.append(SecretHit(kind, FILE_PATH_PREFIX + self.path, line, mask(value)))
        if kind == MARKETPLACE_TOKEN:
            self.tokens.add(value)


def scan_bytes(path: str, data: bytes) -> FileScan:
    scan = FileScan(path)
    scan.feed(data)
    return scan.finish()


def _strings(value: Any, path: str) -> Iterator[tuple[str, str, str | None]]:
    """Every string of a JSON document (keys too) with its JSON path, and the key it is
    the value of (None for keys and list items)."""
    if isinstance(value, str):
        yield path, value, None
    elif isinstance(value, Mapping):
        for key, item in value.items():
            where = join_path(path, str(key))
            yield where, str(key), None
            if isinstance(item, str):
                yield where, item, str(key)
            else:
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
    defaults, env values...), each hit at its JSON path: what the detectors find in each
    string, and a string that is the value of a secret-sounding key (`"DB_PASSWORD":
    "..."`) as a keyword assignment."""
    hits: list[SecretHit] = []
    tokens: set[str] = set()
    for path, text, key in _strings(document, prefix):
        if len(tokens) >= TOKENS_MAX:
            break
        data = text.encode("utf-8", "surrogatepass")
        found = False
        for candidate in _detector_candidates(DOCUMENT_NAME, data, []):
            found = True
            hits.append(SecretHit(candidate.kind, path, None, mask(candidate.value)))
            if candidate.kind == MARKETPLACE_TOKEN:
                tokens.add(candidate.value)
        if not found and key is not None and _secret_name(key) and credible_value(text):
            hits.append(SecretHit(KEYWORD_SECRET, path, None, mask(text)))
    return DocumentScan(tuple(hits), frozenset(tokens))


def _secret_name(key: str) -> bool:
    return _filters().keyword_name.search(key.lower().encode("utf-8")) is not None and not (
        _filters().likely_id("x", f"{key}=x")
    )


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
