"""The rules on text a model reads (CONTRACT 14): what they find in the labelled corpus,
what they cost, and whether that cost stays linear on hostile text.

Reads the corpus from ../shared/data/model_text_corpus.json beside the repository
(MARKETPLACE_MODEL_TEXT_CORPUS names another file) and prints, with the measures defined
once in bench/findings_corpus.py (the corpus test uses the same):

* per code: texts expecting it and recall, on the `test` split (the figure reported) and
  on `tune` (for reference); codes reported on poisoned texts that do not expect them;
* overall recall (every expected code of every poisoned text), detected (poisoned texts
  with any ai-* finding) and the false-positive rate (benign texts with any ai-* finding);
* time per 1,000 corpus texts (median of PASSES passes over all of them), as a ratio
  against baselines timed in the same run over the same texts: a lowercase copy and one
  literal searched for, and the secret scan an upload already runs on every file;
* a realistic 100 KiB SKILL.md (headings, prose from the corpus's benign texts, lists,
  code fences, links, tables) judged as the service judges a file: milliseconds (target
  under DOCUMENT_MS_MAX) and ratios against the same baselines;
* linearity: each hostile shape of findings_corpus.HOSTILE (and each with an attack
  planted after it) timed at n and 4n characters; the ratio is about 4 when the cost is
  linear, 16 when quadratic: "linear" when under RATIO_MAX.

    make bench-findings        # or: .venv/bin/python bench/bench_findings.py
    python bench/bench_findings.py --show tune   # the tune split's misses and false hits

Exit status: 0; 1 when the 100 KiB document takes DOCUMENT_MS_MAX or more, or a shape's
4n/n ratio exceeds RATIO_MAX, on a second measurement too (machines are noisy); 2 when
the corpus is missing.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import machine
from findings_corpus import (
    HOSTILE,
    PLANTED,
    SPLITS,
    Corpus,
    Measure,
    corpus_path,
    load_corpus,
    measure,
)

from marketplace_rules.model_text import file_text, judge, text_findings
from marketplace_rules.model_text.rules import CODE_ORDER
from marketplace_rules.secrets import scan_bytes

PASSES = 7
DOCUMENT_BYTES = 100 * 1024
DOCUMENT_MS_MAX = 50.0
DOCUMENT_RUNS = 15
LINEAR_CHARS = 64 * 1024
RATIO_MAX = 8.0
LITERAL = re.compile(re.escape("ignore previous instructions"))


def literal_search(text: str) -> bool:
    """The baseline: the least a text rule can do, a lowercase copy and one literal."""
    return LITERAL.search(text.lower()) is not None


def secret_scan(text: str) -> object:
    """The other baseline: the secret scan every uploaded file already gets."""
    return scan_bytes("SKILL.md", text.encode("utf-8"))


def judged(text: str) -> object:
    return judge(text)


def best(run: Callable[[], object], *, runs_min: int = 3, runs_max: int = 50) -> float:
    """The fastest of several runs (seconds): at least runs_min, more while they are quick
    (up to half a second in all), fewer when one run alone takes over 5 s."""
    times: list[float] = []
    spent = 0.0
    while len(times) < runs_max:
        started = time.perf_counter()
        run()
        took = time.perf_counter() - started
        times.append(took)
        spent += took
        if took > 5.0 or (len(times) >= runs_min and spent > 0.5):
            break
    return min(times)


def pass_seconds(check: Callable[[str], object], texts: list[str]) -> float:
    """Median seconds of PASSES passes of `check` over every text (a pass repeats the
    texts until it lasts 50 ms, for the quick baselines)."""
    loops = 1
    while True:
        started = time.perf_counter()
        for _ in range(loops):
            for text in texts:
                check(text)
        if time.perf_counter() - started >= 0.05 or loops >= 1024:
            break
        loops *= 2
    times = []
    for _ in range(PASSES):
        started = time.perf_counter()
        for _ in range(loops):
            for text in texts:
                check(text)
        times.append((time.perf_counter() - started) / loops)
    return statistics.median(times)


def percent(value: float) -> str:
    return "  n/a" if value != value else f"{100 * value:5.1f}%"  # NaN: no text


def quality(measures: dict[str, Measure]) -> None:
    test, tune = measures["test"], measures["tune"]
    print("== what the rules find (ai-* codes) ==")
    print(
        f"{'code':<26}{'test: texts':>12}{'recall':>8}{'tune: texts':>13}{'recall':>8}"
        f"{'extra test':>12}{'extra tune':>12}"
    )
    for code in CODE_ORDER:
        print(
            f"{code!s:<26}{test.expected[code]:>12}{percent(test.recall(code)):>8}"
            f"{tune.expected[code]:>13}{percent(tune.recall(code)):>8}"
            f"{test.extra[code]:>12}{tune.extra[code]:>12}"
        )
    for name in SPLITS:
        result = measures[name]
        pairs = sum(result.expected.values())
        print(
            f"{name}: overall recall {percent(result.overall_recall)} "
            f"({sum(result.found.values())}/{pairs} expected codes); detected "
            f"{percent(result.detected_rate)} ({result.detected}/{result.poisoned} poisoned "
            f"texts); false-positive rate {percent(result.false_positive_rate)} "
            f"({len(result.flagged)}/{result.benign} benign texts)"
        )
    print("(extra: poisoned texts given a code they do not expect; for information)")


def document(corpus: Corpus) -> str:
    """A SKILL.md-like Markdown document of DOCUMENT_BYTES, its prose the corpus's benign
    texts: front matter, headings, paragraphs, lists, code fences, links and tables."""
    prose = [item.text for item in corpus.benign]
    parts = [
        "---\nname: project-helper\ndescription: Helps with the project's files, issues "
        "and releases.\n---\n\n# Project helper\n\nThis skill gathers what the tools of the "
        "project do and how to use them.\n"
    ]
    size = len(parts[0].encode())
    section = 0
    while size < DOCUMENT_BYTES + 4096:
        text = prose[section % len(prose)]
        step = [
            f"\n## {section + 1}. Step {section + 1}\n\n{text}\n",
            "\n- Check the `status` field of each answer.\n- Use the `page` parameter for "
            "long lists.\n- See [the reference](https://docs.example.com/reference) for "
            "every option.\n",
        ]
        if section % 3 == 0:
            step.append(
                "\n```bash\nnpm install --save project-helper\nnpx project-helper --help\n"
                'curl -s "https://api.example.com/v1/items?page=2" | jq .items\n```\n'
            )
        if section % 5 == 0:
            step.append(
                "\n| Option | Default | Meaning |\n|---|---|---|\n| `page` | 1 | Which page "
                "to return |\n| `limit` | 50 | Items per page |\n"
            )
        chunk = "".join(step)
        parts.append(chunk)
        size += len(chunk.encode())
        section += 1
    data = "".join(parts).encode()[:DOCUMENT_BYTES]
    data = data[: data.rfind(b"\n") + 1]
    return data.decode("utf-8", "ignore")


def as_file(text: str) -> object:
    data = text.encode("utf-8")
    return text_findings(file_text("SKILL.md", data))


def speed(corpus: Corpus, figures: dict[str, Any]) -> bool:
    texts = corpus.texts()
    rules = pass_seconds(judged, texts)
    literal = pass_seconds(literal_search, texts)
    scan = pass_seconds(secret_scan, texts)
    per_1000 = 1000 / len(texts)
    print(f"\n== time per 1,000 texts ({len(texts)} corpus texts, median of {PASSES} passes) ==")
    print(
        f"rules: {rules * per_1000 * 1000:.1f} ms; {rules / literal:.0f}x a lowercase copy "
        f"and one literal searched for ({literal * per_1000 * 1000:.2f} ms), "
        f"{rules / scan:.2f}x the secret scan ({scan * per_1000 * 1000:.1f} ms)"
    )
    figures["per1000Ms"] = rules * per_1000 * 1000
    figures["per1000VsLiteral"] = rules / literal
    figures["per1000VsSecretScan"] = rules / scan

    text = document(corpus)
    findings = text_findings(file_text("SKILL.md", text.encode()))
    print(
        f"\n== a realistic SKILL.md of {len(text.encode()) / 1024:.0f} KiB "
        f"({text.count(chr(10))} lines; {len(findings)} ai-* findings in it) =="
    )
    ok = True
    for attempt in (1, 2):
        took = statistics.median(_times(lambda: as_file(text), DOCUMENT_RUNS))
        base_literal = statistics.median(_times(lambda: literal_search(text), DOCUMENT_RUNS))
        base_scan = statistics.median(_times(lambda: secret_scan(text), DOCUMENT_RUNS))
        ok = took * 1000 < DOCUMENT_MS_MAX
        print(
            f"judged as a file: {took * 1000:.1f} ms (median of {DOCUMENT_RUNS}; target under "
            f"{DOCUMENT_MS_MAX:.0f} ms: {'met' if ok else 'MISSED'}); "
            f"{took / base_literal:.0f}x the literal search ({base_literal * 1000:.2f} ms), "
            f"{took / base_scan:.2f}x the secret scan ({base_scan * 1000:.1f} ms)"
            + ("" if attempt == 1 else " [second measurement]")
        )
        figures["documentMs"] = took * 1000
        if ok:
            break
    for finding in findings:
        print(f"  {finding.path}: {finding.code}: {finding.message[:120]}")
    return ok


def _times(run: Callable[[], object], count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return times


def shapes() -> dict[str, Callable[[int], str]]:
    found: dict[str, Callable[[int], str]] = dict(HOSTILE)
    for name, planted in PLANTED.items():
        found[f"{name} (planted)"] = planted.text
    return found


def ratio_of(make: Callable[[int], str]) -> tuple[float, float]:
    small, large = make(LINEAR_CHARS), make(4 * LINEAR_CHARS)
    return best(lambda: judge(small)), best(lambda: judge(large))


def linearity(figures: dict[str, Any]) -> bool:
    print(
        f"\n== linearity: each hostile shape at n = {LINEAR_CHARS // 1024} Ki and 4n "
        f"characters (fastest of several runs; linear ~4, quadratic ~16) =="
    )
    print(f"{'shape':<46}{'n (ms)':>10}{'4n (ms)':>10}{'4n/n':>8}  verdict")
    ok = True
    rows = {}
    for name, make in shapes().items():
        small, large = ratio_of(make)
        if large / small > RATIO_MAX:
            small, large = ratio_of(make)  # once more before calling it superlinear
        ratio = large / small
        linear = ratio <= RATIO_MAX
        ok &= linear
        verdict = "linear" if linear else ("quadratic" if ratio < 40 else "worse than quadratic")
        print(f"{name:<46}{small * 1000:>10.2f}{large * 1000:>10.2f}{ratio:>8.1f}  {verdict}")
        rows[name] = {"nMs": small * 1000, "fourNMs": large * 1000, "ratio": ratio}
    figures["linearity"] = rows
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--show", choices=SPLITS, help="also list that split's missed and flagged texts"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    corpus = load_corpus()
    if corpus is None:
        print(f"the corpus is missing: {corpus_path()}", file=sys.stderr)
        return 2
    facts = machine()
    print(f"python {facts['python']} on {facts['cpu'] or facts['platform']} ({facts['git']})")
    print(f"corpus: {corpus_path()} ({len(corpus.poisoned)} poisoned, {len(corpus.benign)} benign)")
    judge("warm up")
    measures = {name: measure(corpus.split(name)) for name in SPLITS}
    quality(measures)
    if args.show:
        print(f"\n== {args.show} split ==\n{measures[args.show].report()}")
    figures: dict[str, Any] = {
        name: {
            "recall": {str(code): result.recall(code) for code in CODE_ORDER},
            "overallRecall": result.overall_recall,
            "detected": result.detected_rate,
            "falsePositiveRate": result.false_positive_rate,
            "extra": {str(code): count for code, count in result.extra.items()},
        }
        for name, result in measures.items()
    }
    fast = speed(corpus, figures)
    linear = linearity(figures)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2, default=str), encoding="utf-8")
    if not fast:
        print(f"FAILED: the 100 KiB document took {DOCUMENT_MS_MAX:.0f} ms or more")
    if not linear:
        print(f"FAILED: a hostile shape's 4n/n ratio exceeds {RATIO_MAX:.0f}")
    return 0 if fast and linear else 1


if __name__ == "__main__":
    sys.exit(main())
