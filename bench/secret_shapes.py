"""Hostile mebibytes for the secret scan, and their cost as a ratio of ordinary code
scanned in the same run. Shared by `make bench-secrets` (which prints each ratio against
the 5x target) and tests/rules/test_secrets_cost.py (which holds only a bound that a
super-linear scan would break by orders of magnitude, since timed tests are noisy on
shared machines).
"""

from __future__ import annotations

import time
from pathlib import Path

import marketplace_rules
from marketplace_rules.limits import KIB, MIB
from marketplace_rules.secrets import FileScan, scan_bytes

TARGET_RATIO = 5.0
REPEATS = 3
CHUNK = 64 * KIB  # as the service and the publishing tool feed a file
PASSWORD = "hunter2-something"  # noqa: S105 (a made-up value for the scan to find)
AWS_KEY = "AKIAQ3ZLBN5TJ2HVX7PW"
AWS_SECRET = "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"  # noqa: S105
PATHS = ("app.py", ".env")  # quoted values only, and unquoted ones as well


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


def hostile_ratios(path: str) -> dict[str, float]:
    """Each hostile shape's cost over ordinary code's, the baseline measured around them
    (the best of before and after: the machine may have been busier at first)."""
    scan_bytes(path, b"warm = 1\n")  # detect-secrets' import, once
    code = ordinary_code()
    baseline = seconds(path, code)
    hostile = {shape: seconds(path, data) for shape, data in HOSTILE.items()}
    baseline = min(baseline, seconds(path, code))
    return {shape: cost / baseline for shape, cost in hostile.items()}
