"""The rules on text a model reads (CONTRACT 14) on the labelled corpus's `test` split:
recall on poisoned texts and the false-positive rate on benign ones, as
bench/findings_corpus.py defines them (`make bench-findings` prints the same figures per
code). The corpus lives beside the repository (../shared/data), never in it: without it
the test is skipped, except under CI=true, where it fails.

On failure the message lists every missed poisoned text and every flagged benign text,
with their codes: what to tune the rules on (on the `tune` split, never on this one).
"""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

import pytest
from bench.findings_corpus import Measure, corpus_or_skip, measure

RECALL_MIN = 0.90
FALSE_POSITIVE_RATE_MAX = 0.03
SPLIT = "test"


@cache
def _measured() -> Measure:
    return measure(corpus_or_skip().split(SPLIT))


def test_split_holds_both_kinds_of_text() -> None:
    corpus = corpus_or_skip().split(SPLIT)
    assert corpus.poisoned and corpus.benign, f"the corpus has no {SPLIT!r} split"


RECALL_MEASURED_FLOOR = 0.70
"""What the rules and the text model reach on the test split today (0.72, measured once
they were settled; 0.74 before the rules were made to keep quiet on real READMEs and
skills): a guard against falling back while the target above is not met."""


@pytest.mark.xfail(
    strict=True,
    reason="target not met: recall on the test split is 0.72 (rules and text model tuned on "
    "the tune split and development corpora, never on this split); docs/findings.md",
)
def test_overall_recall_on_poisoned_texts() -> None:
    result = _measured()
    assert result.overall_recall >= RECALL_MIN, (
        f"recall must be at least {RECALL_MIN}\n{result.report()}"
    )


def test_recall_does_not_fall_below_what_was_measured() -> None:
    result = _measured()
    assert result.overall_recall >= RECALL_MEASURED_FLOOR, (
        f"recall fell below {RECALL_MEASURED_FLOOR}\n{result.report()}"
    )


def test_false_positive_rate_on_benign_texts() -> None:
    result = _measured()
    assert result.false_positive_rate <= FALSE_POSITIVE_RATE_MAX, (
        f"the false-positive rate must be at most {FALSE_POSITIVE_RATE_MAX}\n{result.report()}"
    )


PASSAGE = 60  # characters, whitespace folded: longer than any stock phrase


def _folded(text: str) -> str:
    return " ".join(text.split())


def test_no_tracked_file_holds_a_passage_of_the_corpus() -> None:
    """The corpus is read from ../shared/data, never copied: no file git tracks (tests,
    docs, the text model's vocabulary) holds 120 characters in a row of any of its texts.
    Every 60-character window of the corpus is known; a file's windows are looked up every
    60 characters, which any copied run of 120 or more contains."""
    windows = {
        folded[i : i + PASSAGE]
        for text in corpus_or_skip().texts()
        for folded in [_folded(text)]
        for i in range(max(1, len(folded) - PASSAGE + 1))
    }
    root = Path(__file__).resolve().parents[2]
    tracked = (
        subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, timeout=60
        )
        .stdout.decode()
        .split("\0")
    )
    copied = []
    for name in filter(None, tracked):
        try:
            content = _folded((root / name).read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue  # binary or gone from the work tree
        found = next(
            (
                content[i : i + PASSAGE]
                for i in range(0, len(content), PASSAGE)
                if content[i : i + PASSAGE] in windows
            ),
            None,
        )
        if found is not None:
            copied.append(f"{name}: {found!r}")
    assert copied == [], "passages of the shared corpus in the repository:\n" + "\n".join(copied)
