"""rules.secrets: what a scan costs stays linear and small whatever a file holds (an upload
is hostile until checked, and Python's `re` holds the GIL while it runs), and the budget
that bounds the work Python does per match.

Times are ratios against ordinary source code scanned in the same test, never seconds:
1 MiB of each hostile shape may cost at most RATIO_MAX times 1 MiB of ordinary code.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import marketplace_rules
from marketplace_rules.limits import KIB, MIB
from marketplace_rules.secrets import (
    AWS_ACCESS_KEY,
    AWS_SECRET_KEY,
    KEYWORD_LINES_PER_FILE,
    KEYWORD_SECRET,
    MATCHES_PER_FILE,
    FileScan,
    Remaining,
    ScanBudget,
    scan_bytes,
)

RATIO_MAX = 5.0
REPEATS = 3
CHUNK = 64 * KIB  # as the service and the publishing tool feed a file
PASSWORD = "hunter2-something"
AWS_KEY = "AKIAQ3ZLBN5TJ2HVX7PW"
AWS_SECRET = "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"


def mebibyte(unit: bytes) -> bytes:
    return (unit * (MIB // len(unit) + 1))[:MIB]


def ordinary_code() -> bytes:
    """The shared rules' own sources: code that names passwords, secrets, keys and tokens."""
    folder = Path(marketplace_rules.__file__).parent
    return mebibyte(b"".join(path.read_bytes() for path in sorted(folder.glob("*.py"))))


HOSTILE = {
    # The shapes of the review: keywords run together, and a long YAML value of spaces.
    "keywords run together": mebibyte((b"password" + b"a" * 30) * 25 + b"\n"),
    "quoted keywords run together": mebibyte((b'"password' + b"a" * 30 + b'"') * 25 + b"\n"),
    "secret and spaces": mebibyte(b"secret:" + b" " * 990 + b"x\n"),
    "quotes": mebibyte(b'"' * 999 + b"\n"),
    "equals signs": mebibyte(b"password" + b"=" * 990 + b"\n"),
    "colons": mebibyte(b"password" + b":" * 990 + b"\n"),
    "blanks before a value": mebibyte(b"api_key =" + b" \t" * 495 + b'"x"\n'),
    "assignments run together": mebibyte(b"pwd=" * 249 + b"\n"),
    "keyword fragments": mebibyte(b"passkeysecretpwdtokenawsapi_contrase_" * 27 + b"\n"),
    "one line of keywords": mebibyte(b"db_password=" * 100),
    "many values to judge": mebibyte(b'pwd="a1b2c3d4e5"' * 60 + b"\n"),
    "distinct values": b"".join(
        b'api_key = "Kq8vR2xLp9Tz3Wn7Bc4M%06d"\n' % i for i in range(MIB // 30)
    )[:MIB],
    "capital tokens": mebibyte(b'A_TOKEN="Kq8v-9x"; B_TOKEN: Kq8v-9x\n'),
    "aws names": mebibyte(b"awskey" * 166 + b"\n"),
    "aws secrets named": mebibyte(f"aws_key={AWS_SECRET}\n".encode()),
    "aws key ids": mebibyte(f"{AWS_KEY}\n".encode()),
    "aws key ids and secrets": mebibyte(f"{AWS_KEY} {AWS_SECRET}\n".encode()),
    "openai prefixes": b"T3BlbkFJ\n" + mebibyte(b"sk-")[9:],
    "gitlab agent prefixes": mebibyte(b"glagent-" * 6 + b"a" * 2000 + b" "),
    "private key headers": mebibyte(b"-----BEGIN RSA PRIVATE KEY-----\n"),
    "allowlist comments": mebibyte(
        f'password = "{PASSWORD}" # pragma: allowlist secret\n'.encode()
    ),
}
PATHS = ("app.py", ".env")  # quoted values only, and unquoted ones as well


def seconds(path: str, data: bytes) -> float:
    """The best of REPEATS scans of data fed as the service feeds a file."""
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        scan = FileScan(path)
        for start in range(0, len(data), CHUNK):
            scan.feed(data[start : start + CHUNK])
        scan.finish()
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize("path", PATHS)
def test_a_hostile_mebibyte_costs_at_most_a_few_of_ordinary_code(path: str) -> None:
    scan_bytes(path, b"warm = 1\n")  # detect-secrets' import, once
    code = ordinary_code()
    baseline = seconds(path, code)
    hostile = {shape: seconds(path, data) for shape, data in HOSTILE.items()}
    baseline = min(baseline, seconds(path, code))  # the machine may have been busier first
    ratios = {shape: cost / baseline for shape, cost in hostile.items()}
    over = {shape: f"{ratio:.1f}" for shape, ratio in ratios.items() if ratio > RATIO_MAX}
    assert not over, f"times the cost of ordinary code: {over}"


# ---------- the budget ----------


def test_keyword_lines_past_the_file_budget_are_not_searched() -> None:
    judged = b'password = "changeme"\n' * KEYWORD_LINES_PER_FILE
    secret = f'password = "{PASSWORD}"\n'.encode()
    scan = scan_bytes("app.py", judged + secret)
    assert scan.hits == []
    assert scan.cut_short
    within = scan_bytes("app.py", judged[len(b'password = "changeme"\n') :] + secret)
    assert [(hit.kind, hit.line) for hit in within.hits] == [
        (KEYWORD_SECRET, KEYWORD_LINES_PER_FILE)
    ]
    assert not within.cut_short


def test_lines_without_a_keyword_assignment_spend_nothing() -> None:
    code = b'const password = form.password; // a password: see "docs"\n' * (
        2 * KEYWORD_LINES_PER_FILE
    )
    scan = scan_bytes("app.js", code + f'const password = "{PASSWORD}";\n'.encode())
    assert [hit.kind for hit in scan.hits] == [KEYWORD_SECRET]
    assert not scan.cut_short


def test_detector_matches_past_the_file_budget_are_not_examined() -> None:
    samples = b"AKIAIOSFODNN7EXAMPLE\n" * MATCHES_PER_FILE
    scan = scan_bytes("keys.txt", samples + f"{AWS_KEY}\n".encode())
    assert scan.hits == []
    assert scan.cut_short
    within = scan_bytes("keys.txt", samples[21:] + f"{AWS_KEY}\n".encode())
    assert [hit.kind for hit in within.hits] == [AWS_ACCESS_KEY]


def test_a_package_budget_is_shared_by_its_files() -> None:
    budget = ScanBudget(keyword_lines=Remaining(2), matches=Remaining(2))
    line = f'password = "{PASSWORD}"\n'.encode()
    scans = [FileScan(f"src/{name}.py", budget=budget) for name in ("a", "b", "c")]
    for scan in scans:
        scan.feed(line)
        scan.finish()
    assert [len(scan.hits) for scan in scans] == [1, 1, 0]
    assert [scan.cut_short for scan in scans] == [False, False, True]


def test_aws_secrets_named_or_next_to_a_key_id_are_found_within_the_budget() -> None:
    text = f'{{"aws_secret_access_key": "{AWS_SECRET}"}}\n'
    assert [hit.kind for hit in scan_bytes("aws.json", text.encode()).hits] == [AWS_SECRET_KEY]
