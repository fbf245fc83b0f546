"""rules.secrets: what a scan costs stays linear and small whatever a file holds (an upload
is hostile until checked, and Python's `re` holds the GIL while it runs), and the budget
that bounds the work Python does per match.

Times are ratios against ordinary source code scanned in the same test, never seconds;
the shapes and their measure are bench/secret_shapes.py's.
"""

from __future__ import annotations

import pytest
from bench.secret_shapes import AWS_KEY, AWS_SECRET, PASSWORD, PATHS, hostile_ratios

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

# `make bench-secrets` prints each ratio against its 5x target. A test only holds a bound
# that a super-linear scan breaks by orders of magnitude (a quadratic pass over a line of
# 1,000 characters costs hundreds of times a linear one): shared CI machines measured
# a linear shape at 6.3 times ordinary code once.
SUPER_LINEAR = 25.0


@pytest.mark.parametrize("path", PATHS)
def test_no_hostile_mebibyte_costs_a_super_linear_multiple_of_ordinary_code(path: str) -> None:
    ratios = hostile_ratios(path)
    over = {shape: f"{ratio:.1f}" for shape, ratio in ratios.items() if ratio > SUPER_LINEAR}
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
