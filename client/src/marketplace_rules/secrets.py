"""Secrets in a package: marketplace publishing tokens and other credentials.

Shared by the service (while an upload streams, `packages.archive`) and the publishing tool
(before it uploads): the same patterns, the same findings. A secret never leaves this
module in clear except the marketplace tokens' values (`FileScan.tokens`), which the
service needs to revoke them; everything shown is `mask`ed.

Three kinds of detection, all `detect-secrets`':
- its regex plugins with distinctive shapes (cloud access keys, private key blocks,
  service tokens);
- its keyword plugin: a value assigned to a secret-sounding name (`OPENAI_API_KEY = "..."`,
  `DB_PASSWORD=...`, `OpenAI(api_key="...")`), with the names of tokens it lacks
  (`AUTH_TOKEN`, `accessToken`, `x-api-key`): every assignment of a line, quoted values
  anywhere, unquoted ones in `.env`, YAML, INI, TOML, `.properties` and `.cfg` files;
- an AWS secret access key: 40 base64 characters of high entropy (its Base64 entropy
  measure) next to an access key id, or assigned to an `aws..._key` name, quoted or not.
Its free-standing entropy plugins are left out: every hash and lock file would trip them.

Every hit but a marketplace token then goes through its filters (`detect-secrets`'
heuristics: templated and `$` values, sequential strings, UUIDs, lock and swagger files,
the `pragma: allowlist secret` comment) and a few of ours for the shapes sample code gives
a value: placeholders (`your-api-key`, `xxx`, `changeme`, the AWS documentation's
`...EXAMPLE` keys), names of variables, calls, paths, dates, words. Each value is judged by
itself, never by the rest of its line. A keyword value must moreover look made up: no
spaces, at least VALUE_MIN characters, letters with a digit or a symbol (or long and of
high entropy). An error finding rejects, so these filters are what keeps the false findings
under the budget (docs/findings.md, `make bench-secrets`).

An upload is hostile until checked, and Python's `re` holds the GIL while it runs: the
scan's cost must stay linear in the bytes whatever they hold
(tests/rules/test_secrets_cost.py). The keyword patterns start with a literal the regex
engine searches for fast, and each of their repetitions is bounded and possessive or stops
at the byte after it; detect-secrets' patterns run only where a cheap search opens them,
and those that backtrack far are replaced (`REPLACED_PATTERNS`). What Python does per match
is bounded by a budget per file and per package (`ScanBudget`): past it a file is not
searched further, and `FileScan.cut_short` says so.
"""

from __future__ import annotations

import functools
import itertools
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
# translations, not credentials. Lines are what OVERLAP holds whole.
LINE_MAX: Final = 1000
# What a keyword match looks at after its keyword, each part bounded: the rest of the name,
# the spaces around the operator and the value (about 400 bytes at most).
NAME_REST_MAX: Final = 40
SPACES_MAX: Final = 32
VALUE_MAX: Final = 256
# Assignments judged per line (`{"password": "...", "api_key": "..."}` holds two).
ASSIGNMENTS_PER_LINE: Final = 8
# What Python does per match, bounded per file and per package: lines with keyword
# assignments judged, and detector matches examined. Real packages stay far below: in the
# npm and Python corpora (`make bench-secrets`, tests/rules/test_secrets_corpus.py) at most
# 30 keyword lines and 11 matches in a file, 311 and 35 in a package.
KEYWORD_LINES_PER_FILE: Final = 1000
KEYWORD_LINES_PER_PACKAGE: Final = 10_000
MATCHES_PER_FILE: Final = 1000
MATCHES_PER_PACKAGE: Final = 10_000
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
_GATES: Final[dict[str, tuple[_Gate, ...]]] = {
    "AWSKeyDetector": ((b"A(?:KIA|SIA|BIA|CCA|3T)", False),),
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
# detect-secrets' patterns that backtrack far, and what runs instead (None: left out). Its
# OpenAI pattern starts `sk-[...]*`: each `sk-` of a run scans to the run's end and back,
# quadratic in the run's length (16 KiB of `sk-` took 0.3 s). Here the key starts a run
# (no character of the run before its `sk-`), at most 200 characters before OpenAI's
# marker, which is found before the 20 characters behind it are checked. Its AWS secret
# pattern (`aws.{0,20}?(?:key|...).{0,20}?['"]...`: nested lazy repetitions, 0.9 s per MiB
# of `awskey`) is `_AWS_SECRET_NAMED`.
_AWS_ASSIGNED_PATTERN: Final = (
    r"aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[\'\"]([0-9a-zA-Z/+]{40})[\'\"]"
)
REPLACED_PATTERNS: Final[dict[str, str | None]] = {
    "sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}": (
        "sk-(?<![A-Za-z0-9_-]sk-)[A-Za-z0-9_-]{0,200}T3BlbkFJ(?<=[A-Za-z0-9]{20}T3BlbkFJ)"
        "[A-Za-z0-9]{20}"
    ),
    _AWS_ASSIGNED_PATTERN: None,
}
_AWS_KEY_ID = re.compile(rb"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}")
_BASE64_40 = re.compile(rb"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])")
# An AWS secret access key assigned to an `aws..._key` name (detect-secrets' pattern, its
# quotes optional: `export AWS_SECRET_ACCESS_KEY=...` in a script or a README), run over
# the lower-cased bytes; the name must hold one of _AWS_SECRET_WORD.
_AWS_SECRET_NAMED = re.compile(
    rb"aws([a-z0-9_. -]{0,40}+)[\]'\"]{0,2}+[ \t]{0,32}+(?>:=|=>|[=:])[ \t]{0,32}+['\"]?+"
    rb"([a-z0-9+/]{40})(?![a-z0-9+/=])"
)
_AWS_SECRET_WORD = re.compile(rb"key|pw|pass|token")


def _as_bytes(pattern: re.Pattern[str]) -> re.Pattern[bytes]:
    # Every detector pattern is ASCII; as bytes it runs over raw file bytes, undecoded.
    return re.compile(pattern.pattern.encode("ascii"), pattern.flags & ~re.UNICODE)


def _one_pattern(detector: Any) -> re.Pattern[bytes]:
    # One alternation per detector: one pass over the bytes instead of one per pattern.
    denylist: list[re.Pattern[str]] = list(detector.denylist)
    parts = [REPLACED_PATTERNS.get(p.pattern, p.pattern) for p in denylist]
    kept = [f"(?:{part})" for part in parts if part is not None]
    return _as_bytes(re.compile("|".join(kept), denylist[0].flags))


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
# What sample code assigns to a secret-sounding name instead of a secret: a value marked
# as a template or as elided (`<your key>`, `{key}`, `%s`, `...`, `***`), or one made
# mostly of the words of placeholders (`your-api-key`, `changeme`, `s3cr3t-v4lue`: also
# read with digits as letters, `P@55w0rd`). A random key holding such a word by chance
# (`...Xyz...`, `...Dem0...`) is not one.
_PLACEHOLDER_MARK = re.compile(r"<[\w .:-]+>|\{[\w .:-]*\}|%s|%\(\w+\)|\.\.\.|…|\*\*\*")
_PLACEHOLDER_WORD = re.compile(
    r"change|replace|insert|enter|demo|default|secret|passw(?:or)?d|pass|api|key|token|your"
    r"|my|me|here|with|the|some|value|user|admin|root|super|welcome|xyz|abc|foo|bar"
    r"|example|sample|dummy|fake|mock|test|placeholder|redacted"
)
_LEET = str.maketrans("013457@$", "oieastas")
# Runs of this many letters or digits in order (`abc`, `123`) count with those words
# (`SuperSecret123!`, `sk-abc123xyz789def456`).
SEQUENCE_MIN: Final = 3
# Names of variables, settings and resources (`process.env.X`, `config.db.password`,
# `DB_PASSWORD`, `arn:aws:...`, `*` a wildcard): a name holds few digits followed by
# letters (`s3Bucket`, `oauth2Client`), not the many of random characters or of a JWT.
_IDENTIFIER = re.compile(
    r"[A-Za-z_$][\w$]*(?:(?:\.|::?)[A-Za-z_$][\w$]*)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
)
_DIGIT_LETTER = re.compile(r"[0-9][A-Za-z]")
NAME_DIGIT_LETTERS_MAX: Final = 2
_ARN = re.compile(r"arn:[\w*-]+:[\w*-]+:")
# Calls and indexing (`os.getenv(X)`, `ENV[X]`), dates and times.
_REFERENCE = re.compile(r"[\w.$:-]+(?:\(.*\)|\[.*\]);?")
_DATE = re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?")
# Paths (`/run/secrets/db.txt`, `~/.ssh/id_rsa`, `C:\\keys`, `key.pem`) and URLs without
# credentials. A path's parts are names: lower case, capitalised or upper case, not the
# mixed case of random characters (a base64 key may start with `/` or hold a `.`).
_PATH = re.compile(
    r"(?:~|\.{1,2}|[A-Za-z]:)?(?:[/\\][\w.@+-]*)+|[\w@+-]+(?:\.[\w@+-]+)*\.[A-Za-z]{2,4}"
)
_PATH_PART = re.compile(r"[A-Za-z]?[a-z0-9_@+-]*|[A-Z0-9_@+-]*")
_PATH_SEPARATOR = re.compile(r"[/\\.:~]")
_URL = re.compile(r"[A-Za-z][\w+.-]*://[^@]*")
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
    """detect-secrets' filters and file types (imported at the first scan, as `_patterns`)."""

    sequential: Callable[[str], bool]
    uuid: Callable[[str], bool]
    templated: Callable[[str], bool]
    dollar: Callable[[str], bool]
    likely_id: Callable[[str, str], bool]
    skipped_file: Callable[[str], bool]
    allowlisted: Callable[[str, str, str], bool]
    entropy: Callable[[str], float]
    config_file: Callable[[str], bool]


@dataclass(frozen=True)
class _Context:
    """What detect-secrets' allowlist filter reads of a line's surroundings."""

    previous_line: str


@functools.cache
def _filters() -> _Filters:
    from detect_secrets.filters import allowlist, heuristic
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
    from detect_secrets.util.filetype import FileType, determine_file_type

    config = {FileType.YAML, FileType.CONFIG, FileType.INI, FileType.PROPERTIES, FileType.TOML}

    def config_file(path: str) -> bool:
        # The files detect-secrets reads unquoted values in; a `.env` file is an INI file.
        return _is_env_file(path) or determine_file_type(path) in config

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
        likely_id=heuristic.is_likely_id_string,
        skipped_file=skipped_file,
        allowlisted=allowlisted,
        entropy=Base64HighEntropyString().calculate_shannon_entropy,
        config_file=config_file,
    )


def _is_env_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name == ".env" or name.startswith(".env.") or name.endswith(".env")


def is_sample(value: str) -> bool:
    """A value in the shape documentation and tests give a credential (`AKIA...EXAMPLE`,
    `ghp_xxxx...`, a sequence, one character repeated)."""
    return _SAMPLE.search(value) is not None or _filters().sequential(value)


def _is_placeholder(value: str) -> bool:
    """A value marked as a template or as elided, or whose letters and digits are at least
    half the words sample code puts where a secret goes and runs of characters in order
    (`your-api-key`, `SuperSecret123!`, `sk-abc123xyz789`)."""
    if _PLACEHOLDER_MARK.search(value):
        return True
    covered = [False] * len(value)
    for word in _PLACEHOLDER_WORD.finditer(value.translate(_LEET).lower()):
        covered[word.start() : word.end()] = [True] * len(word.group())
    for start, end in _sequences(value.lower()):
        covered[start:end] = [True] * (end - start)
    alphanumeric = [char.isalnum() for char in value]
    return 2 * sum(itertools.compress(covered, alphanumeric)) >= sum(alphanumeric)


def _sequences(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each run of SEQUENCE_MIN or more letters or digits in order."""
    start = 0
    for at in range(1, len(text) + 1):
        if (
            at < len(text)
            and text[at].isalnum()
            and text[at - 1].isalnum()
            and ord(text[at]) == ord(text[at - 1]) + 1
        ):
            continue
        if at - start >= SEQUENCE_MIN:
            yield start, at
        start = at


def _is_name(value: str) -> bool:
    """The name of a variable, a setting or a resource (`process.env.X`, `DB_PASSWORD`,
    `arn:aws:...`)."""
    if _ARN.match(value):
        return True
    return _IDENTIFIER.fullmatch(value) is not None and (
        len(_DIGIT_LETTER.findall(value)) <= NAME_DIGIT_LETTERS_MAX
    )


def _is_path(value: str) -> bool:
    """A path or a URL without credentials: the whole value, each part a name."""
    if _URL.fullmatch(value):
        return True
    return _PATH.fullmatch(value) is not None and all(
        _PATH_PART.fullmatch(part) for part in _PATH_SEPARATOR.split(value)
    )


def credible_value(value: str) -> bool:
    """Whether a value assigned to a secret-sounding name looks like a credential rather
    than like what sample code puts there: no spaces, at least VALUE_MIN characters, not
    a placeholder, name, call, path or date; letters with a digit or a symbol, or long
    and of high entropy. The value is judged whole: a random key holding a date, a word or
    a slash is still one."""
    filters = _filters()
    if len(value) < VALUE_MIN or not value.isascii() or any(c.isspace() for c in value):
        return False
    if filters.templated(value) or filters.dollar(value) or filters.uuid(value):
        return False
    if _is_name(value) or _REFERENCE.fullmatch(value) or _DATE.fullmatch(value) or _is_path(value):
        return False
    if is_sample(value) or _is_placeholder(value):
        return False
    if _HEX.fullmatch(value) and len(value) < HEX_VALUE_MIN:
        return False  # a short hash or id
    if len(value) >= LONG_VALUE_MIN and filters.entropy(value) >= LONG_VALUE_ENTROPY:
        return True
    return any(char.isalpha() for char in value) and any(char in _MARKS for char in value)


def _credible_aws_secret(value: str) -> bool:
    return (
        any(char.isupper() for char in value)
        and any(char.islower() for char in value)
        and any(char.isdigit() for char in value)
        and not is_sample(value)
        and _filters().entropy(value) >= AWS_SECRET_ENTROPY
    )


def keyword_file(path: str) -> bool:
    """Whether the file is searched for keyword assignments: not a lock file (hashes and
    URLs), a swagger document, a file detect-secrets does not read (source maps, images,
    archives), nor a test, fixture, mock or example."""
    return not (_filters().skipped_file(path) or _TEST_PATH.search(path))


# ---------- the budget ----------


@dataclass
class Remaining:
    """How many more of something a scan may examine."""

    count: int


@dataclass
class ScanBudget:
    """What the scans of one package's files may examine together: pass the same one to
    each file's `FileScan` (a scan without one has a package's budget to itself)."""

    keyword_lines: Remaining = field(default_factory=lambda: Remaining(KEYWORD_LINES_PER_PACKAGE))
    matches: Remaining = field(default_factory=lambda: Remaining(MATCHES_PER_PACKAGE))


@dataclass
class _Allowance:
    """What one file's scan may still examine of one kind: its own share and its package's."""

    file: Remaining
    package: Remaining
    spent: bool = False  # something was left unexamined

    def left(self) -> int:
        return min(self.file.count, self.package.count)

    def take(self) -> bool:
        if self.left() <= 0:
            self.spent = True
            return False
        self.file.count -= 1
        self.package.count -= 1
        return True


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
    if data.find(b"pragma", before[0] if before is not None else start, end) == -1:
        return False  # what each of its comments holds
    previous = _text(data, *before) if before is not None else ""
    return _filters().allowlisted(path, _text(data, start, end), previous)


def _detector_candidates(
    path: str, data: bytes, lowered: list[bytes], allowance: _Allowance
) -> Iterator[_Candidate]:
    """The regex detectors' matches, then AWS secret keys; one candidate per value. Each
    match examined spends the allowance."""
    key_ids: list[tuple[int, int]] = []
    seen: set[int] = set()
    for kind, pattern, gates in _patterns():
        if not _opens(gates, data, lowered):
            continue
        for match in pattern.finditer(data):
            if not allowance.take():
                return
            start, end = match.span()
            value = data[start:end].decode("ascii", "replace")
            if start in seen:
                continue
            if kind != MARKETPLACE_TOKEN and _dismissed(kind, path, data, start, end, value):
                continue
            if kind == AWS_ACCESS_KEY:
                key_ids.append((start, end))
            seen.add(start)
            yield _Candidate(kind, start, end, value, start, end)
    yield from _aws_secret_candidates(path, data, lowered, key_ids, seen, allowance)


def _aws_secret_candidates(
    path: str,
    data: bytes,
    lowered: list[bytes],
    key_ids: list[tuple[int, int]],
    seen: set[int],
    allowance: _Allowance,
) -> Iterator[_Candidate]:
    """AWS secret access keys: assigned to an `aws..._key` name, or within AWS_CONTEXT
    bytes of an access key id."""
    for start, end in sorted(_aws_secret_spans(data, lowered, key_ids, allowance)):
        value = data[start:end].decode("ascii")
        if start in seen or not _credible_aws_secret(value) or _allowlisted(path, data, start):
            continue
        seen.add(start)
        yield _Candidate(AWS_SECRET_KEY, start, end, value, start, end)


def _aws_secret_spans(
    data: bytes, lowered: list[bytes], key_ids: list[tuple[int, int]], allowance: _Allowance
) -> set[tuple[int, int]]:
    spans: set[tuple[int, int]] = set()
    for match in _AWS_SECRET_NAMED.finditer(_lowered(data, lowered)):
        if not allowance.take():
            return spans
        if _AWS_SECRET_WORD.search(match.group(1)):
            spans.add(match.span(2))
    for near_start, near_end in key_ids:
        around = (max(0, near_start - AWS_CONTEXT), near_end + AWS_CONTEXT)
        for found in _BASE64_40.finditer(data, *around):
            if not allowance.take():
                return spans
            spans.add(found.span())
    return spans


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
    if kind == AWS_ACCESS_KEY and (
        _BASE64_CHAR.fullmatch(data, max(0, start - 1), start)
        or _BASE64_CHAR.fullmatch(data, end, end + 1)
    ):
        return True
    if kind == PRIVATE_KEY and not _has_key_material(data, end):
        return True
    return _allowlisted(path, data, start)


# ---------- keyword assignments ----------


def _preceded(literal: bytes, words: tuple[bytes, ...], joins: tuple[bytes, ...]) -> bytes:
    """Lookbehinds for `literal` right after one of `words`, joined by one of `joins`:
    written after the literal, so that a pattern starts with it (the regex engine searches
    for a leading literal fast, and tries an alternation at every byte)."""
    return b"|".join(b"(?<=" + word + join + literal + b")" for word in words for join in joins)


_JOINS: Final = (b"", b"_", b"-")
# Keys by the names of what they open (`api_key`, `private-key`, `clientKey`).
_KEY_OF: Final = (
    b"api",
    b"auth",
    b"service",
    b"account",
    b"db",
    b"database",
    b"priv",
    b"private",
    b"client",
)
# Tokens by the names of what they open (`auth_token`, `github-token`, `accessToken`).
_TOKEN_OF: Final = (
    b"access",
    b"auth",
    b"api",
    b"bearer",
    b"refresh",
    b"session",
    b"oauth",
    b"bot",
    b"github",
    b"gitlab",
    b"npm",
    b"slack",
    b"discord",
    b"telegram",
    b"hf",
)
# The names of secrets, lower case: detect-secrets' KeywordDetector list (`api_key`,
# `db_pass`, `password`, `passwd`, `pwd`, `secret`, `private_key`...), with `-` as well as
# `_` between words (`x-api-key`, `private-key`), and the names of tokens it lacks, ending
# the name (`AUTH_TOKEN`, `x-auth-token`, `accessToken`; `TOKEN_HEADER` and
# `AUTH_TOKEN_PREFIX` name something else). A name holding one, with anything before it
# and up to NAME_REST_MAX characters after it, is secret-sounding.
_KEYWORDS: Final = (
    b"key(?:" + _preceded(b"key", _KEY_OF, _JOINS) + b")",
    b"pass(?:w(?:or)?d|" + _preceded(b"pass", (b"db", b"database", b"key"), _JOINS) + b")",
    b"pwd",
    b"secret",
    b"contrase(?:\xc3\xb1|n)a",
    b"token(?:" + _preceded(b"token", _TOKEN_OF, _JOINS) + b")(?![a-z0-9_-])",
)
# Any other `*_TOKEN`: in capitals only, an environment variable's name (`GITHUB_TOKEN`,
# `CF_API_TOKEN`), not a field's or a tokenizer's (`output_token`, `eos_token`). Looked for
# in the bytes as written.
_CAPITAL_TOKEN: Final = b"TOKEN(?<=[_-]TOKEN)(?![A-Za-z0-9_-])"
_KEYWORD_NAME = re.compile(b"|".join(_KEYWORDS))
_CAPITAL_TOKEN_NAME = re.compile(_CAPITAL_TOKEN)
# A quoted value assigned to a name holding a keyword, anywhere on a line: after the
# keyword, the rest of the name, a closing quote or bracket (`"password":`,
# `['password'] =`, `password[25] =`), an operator (`=`, `:`, `:=`, `==`, `!==`, `=>`) and
# the value in quotes. Every repetition is bounded and possessive (nothing is given back to
# retry) or stops at the byte after it: a match looks at no more than about 400 bytes.
_QUOTED_ASSIGNMENT: Final = (
    rb"[a-z0-9_-]{0,%d}+(?:\[[0-9]{0,8}+\])?+[\]'\"`]{0,2}+[ \t]{0,%d}+"
    rb"(?>:=|!==?|===?|=>|[=:])[ \t]{0,%d}+@?+"
    rb"(?P<quote>['\"`])(?P<value>[^'\"`\r\n]{1,%d}+)(?P=quote)"
) % (NAME_REST_MAX, SPACES_MAX, SPACES_MAX, VALUE_MAX)
# A bare value, in config files: a line `NAME = value` or `NAME: value` (after `export ` or
# YAML's `- `), the name holding a keyword (or, in capitals, ending `_TOKEN`), the value
# running to the end of the line or to a comment. Tried once per line, at its start.
NAME_MAX: Final = 128
_LINE_START: Final = rb"^[ \t]{0,64}+(?:export[ \t]{1,8}+|-[ \t]{1,8}+)?+['\"]?+"
_BARE_VALUE: Final = (
    rb"['\"]?+[ \t]{0,%d}+[:=][ \t]{0,%d}+(?P<value>[^\s'\"`]{1,%d}+)[ \t]*+"
    rb"(?:[#;][^\r\n]*+)?\r?$"
) % (SPACES_MAX, SPACES_MAX, VALUE_MAX)
_BARE_ASSIGNMENT: Final = (
    _LINE_START
    + rb"(?=[a-z0-9_.-]{0,%d}?(?:%s))[a-z0-9_.-]{1,%d}+"
    % (NAME_MAX, b"|".join(_KEYWORDS), NAME_MAX)
    + _BARE_VALUE
)
_CAPITAL_BARE_ASSIGNMENT: Final = (
    _LINE_START + rb"[A-Z0-9_.-]{1,%d}+(?<=[_-]TOKEN)" % (NAME_MAX,) + _BARE_VALUE
)


class _KeywordPattern(NamedTuple):
    pattern: re.Pattern[bytes]
    lowered: bool  # runs over the lower-cased bytes (else over the bytes as written)


def _quoted_assignment(keyword: bytes) -> re.Pattern[bytes]:
    return re.compile(b"(?:%s)%s" % (keyword, _QUOTED_ASSIGNMENT))


@functools.cache
def _keyword_patterns(bare: bool) -> tuple[_KeywordPattern, ...]:
    """One pattern per keyword (led by its literal) and the one of `*_TOKEN`; in config
    files, those of bare values."""
    patterns = [
        *(_KeywordPattern(_quoted_assignment(keyword), lowered=True) for keyword in _KEYWORDS),
        _KeywordPattern(_quoted_assignment(_CAPITAL_TOKEN), lowered=False),
    ]
    if bare:
        patterns += [
            _KeywordPattern(re.compile(_BARE_ASSIGNMENT, re.MULTILINE), lowered=True),
            _KeywordPattern(re.compile(_CAPITAL_BARE_ASSIGNMENT, re.MULTILINE), lowered=False),
        ]
    return tuple(patterns)


def names_a_secret(name: bytes) -> bool:
    """Whether a name holds a keyword (`DB_PASSWORD`, `apiKey`) or ends `_TOKEN`."""
    return bool(_KEYWORD_NAME.search(name.lower()) or _CAPITAL_TOKEN_NAME.search(name))


_Line = tuple[int, int]


def _assignments(
    data: bytes, lowered: bytes, bare: bool, accept: Callable[[int, int], bool], lines_max: int
) -> dict[_Line, list[re.Match[bytes]]]:
    """The keyword assignments of the lines `accept` takes (at most LINE_MAX bytes long,
    each pattern's first `lines_max` lines, ASSIGNMENTS_PER_LINE on a line), by line."""
    by_line: dict[_Line, list[re.Match[bytes]]] = {}
    for pattern, on_lowered in _keyword_patterns(bare):
        searched = lowered if on_lowered else data
        at, lines = 0, 0
        while lines < lines_max and (match := pattern.search(searched, at)) is not None:
            line = _line(lowered, match.start())
            if line is None or not accept(*line):
                # Minified code, or a line another window judges: on to the next line.
                after = lowered.find(b"\n", match.end())
                if after == -1:
                    break
                at = after + 1
                continue
            at = match.end()
            found = by_line.setdefault(line, [])
            lines += not found
            found.append(match)
            if len(found) >= ASSIGNMENTS_PER_LINE:
                at = line[1] + 1
    return by_line


def _keyword_candidates(
    path: str,
    data: bytes,
    lowered: list[bytes],
    accept: Callable[[int, int], bool],
    allowance: _Allowance,
) -> Iterator[_Candidate]:
    """Values assigned to secret-sounding names on the lines `accept` takes, each value
    passed through the filters on its own. Each line with assignments spends the
    allowance."""
    if not keyword_file(path):
        return
    filters = _filters()
    bare = filters.config_file(path)
    low = _lowered(data, lowered)
    # One line more than the allowance: the scan must know it stopped short.
    by_line = _assignments(data, low, bare, accept, allowance.left() + 1)
    for first, last in sorted(by_line):
        if not allowance.take():
            return
        allowlisted: bool | None = None
        matches = sorted(by_line[first, last], key=lambda match: match.start())
        for match in matches[:ASSIGNMENTS_PER_LINE]:
            start, end = match.span("value")
            value = data[start:end].decode("utf-8", "replace")
            named = data[match.start() : end].decode("utf-8", "replace")
            if not credible_value(value) or filters.likely_id(value, named):
                continue
            if allowlisted is None:
                allowlisted = _allowlisted(path, data, first)
            if allowlisted:
                break
            yield _Candidate(KEYWORD_SECRET, start, end, value, first, last)


@dataclass
class FileScan:
    """Scans one file's bytes as they come (`feed` pieces of any size, then `hits`).

    Stops reading at the first sign of a binary file, and after HITS_PER_FILE hits; stops
    searching once its budget is spent (`cut_short`)."""

    path: str
    hits: list[SecretHit] = field(default_factory=list)
    tokens: set[str] = field(default_factory=set, repr=False)
    binary: bool = False
    budget: ScanBudget = field(default_factory=ScanBudget, repr=False)
    _buffer: bytearray = field(default_factory=bytearray)  # fed, not yet settled
    _seen: int = 0  # bytes fed so far
    _lines: int = 0  # line breaks before _buffer
    _found: set[int] = field(default_factory=set)  # offsets of the values recorded
    _judged_to: int = 0  # keyword lines ending before this offset are judged
    _keyword_lines: _Allowance = field(init=False, repr=False)
    _matches: _Allowance = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._keyword_lines = _Allowance(
            Remaining(KEYWORD_LINES_PER_FILE), self.budget.keyword_lines
        )
        self._matches = _Allowance(Remaining(MATCHES_PER_FILE), self.budget.matches)

    @property
    def done(self) -> bool:
        return self.binary or len(self.hits) >= HITS_PER_FILE

    @property
    def cut_short(self) -> bool:
        """The budget ran out before the end of the file: what follows was not searched
        (for keyword values, or for any secret), so a secret there may be missing."""
        return self._keyword_lines.spent or self._matches.spent

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
        judged_to = self._judged_to - start
        found = [
            candidate
            for candidate in _detector_candidates(self.path, window, lowered, self._matches)
            if candidate.end <= settled
        ]

        def accept(first: int, last: int) -> bool:
            ends = last < settled or (final and last == settled)
            # A line at the window's first byte began in the previous window, which saw
            # it; one that ended before the previous window's settled point was judged.
            return ends and (first > 0 or start == 0) and last >= judged_to

        found += _keyword_candidates(self.path, window, lowered, accept, self._keyword_lines)
        self._judged_to = start + settled
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
    allowance = _Allowance(Remaining(MATCHES_PER_PACKAGE), Remaining(MATCHES_PER_PACKAGE))
    for path, text, key in _strings(document, prefix):
        if len(tokens) >= TOKENS_MAX:
            break
        data = text.encode("utf-8", "surrogatepass")
        found = False
        for candidate in _detector_candidates(DOCUMENT_NAME, data, [], allowance):
            found = True
            hits.append(SecretHit(candidate.kind, path, None, mask(candidate.value)))
            if candidate.kind == MARKETPLACE_TOKEN:
                tokens.add(candidate.value)
        if not found and key is not None and _secret_name(key) and credible_value(text):
            hits.append(SecretHit(KEYWORD_SECRET, path, None, mask(text)))
    return DocumentScan(tuple(hits), frozenset(tokens))


def _secret_name(key: str) -> bool:
    return names_a_secret(key.encode("utf-8")) and not (_filters().likely_id("x", f"{key}=x"))


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
