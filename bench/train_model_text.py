"""Train the text model beside the model-text rules (marketplace_rules.model_text.model).

One logistic regression per CONTRACT 14 code over a text's lower-cased words and word
pairs, trained by plain stochastic gradient descent on labelled corpora kept outside the
repository (`--corpus PATH`, repeatable; the same shape as ../shared/data's corpus:
`poisoned` with `expect`, `benign`). The labelled corpus in ../shared/data is never used
for training. The threshold is the lowest that flags none of the calibration texts:
the `tune` split's benign texts and the alarming legitimate texts of
tests/rules/test_model_text_cases.py; the `test` split is only measured.

    .venv/bin/python bench/train_model_text.py --corpus /work/dev_corpus/model_text_dev.json \\
        --corpus /work/dev_corpus/model_text_dev2.json

writes client/src/marketplace_rules/model_text/model.json (weights rounded, small ones
dropped).
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.findings_corpus import load_corpus
from tests.rules.test_model_text_cases import BENIGN as LEGITIMATE

from marketplace_rules.model_text.model import CODE_NAMES, MODEL_PATH, TextModel, features

EPOCHS = 40
LEARNING_RATE = 0.2
L2 = 1e-4
KEEP_ABOVE = 0.15
"""Weights smaller than this are dropped from the file (they change no decision)."""
THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99)
FLAGGED_MAX = 0
"""Benign calibration texts the model may flag at the chosen threshold."""
SEED = 1


def _train(positives: list[str], negatives: list[str]) -> tuple[dict[str, float], float]:
    data = [(features(text), 1.0) for text in positives] + [
        (features(text), 0.0) for text in negatives
    ]
    weights: defaultdict[str, float] = defaultdict(float)
    bias = 0.0
    order = random.Random(SEED)
    for _ in range(EPOCHS):
        order.shuffle(data)
        for found, label in data:
            z = bias + sum(weights[feature] for feature in found)
            error = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z)))) - label
            bias -= LEARNING_RATE * error
            for feature in found:
                weights[feature] -= LEARNING_RATE * (error + L2 * weights[feature])
    return dict(weights), bias


SHINGLE_CHARS = 40
"""Two texts that share a run of this many characters (whitespace and case folded) are
the same text for training purposes."""


def _folded(text: str) -> str:
    return " ".join(text.lower().split())


def _shingles(texts: list[str]) -> set[str]:
    found: set[str] = set()
    for text in texts:
        folded = _folded(text)
        found.update(
            folded[at : at + SHINGLE_CHARS] for at in range(len(folded) - SHINGLE_CHARS + 1)
        )
        if len(folded) < SHINGLE_CHARS:
            found.add(folded)
    return found


def _overlaps(text: str, shingles: set[str]) -> bool:
    folded = _folded(text)
    if len(folded) < SHINGLE_CHARS:
        return folded in shingles
    return any(
        folded[at : at + SHINGLE_CHARS] in shingles for at in range(len(folded) - SHINGLE_CHARS + 1)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", type=Path, required=True)
    args = parser.parse_args()
    poisoned: list[dict[str, Any]] = []
    benign: list[str] = []
    shared = load_corpus()
    held_out = _shingles(shared.texts()) if shared is not None else set()
    dropped = 0
    for path in args.corpus:
        data = json.loads(path.read_text(encoding="utf-8"))
        for item in data["poisoned"]:
            if _overlaps(item["text"], held_out):
                dropped += 1
            else:
                poisoned.append(item)
        for item in data["benign"]:
            if _overlaps(item["text"], held_out):
                dropped += 1
            else:
                benign.append(item["text"])
    # The labelled corpus never trains the model, not even as a text another corpus holds.
    print(f"{dropped} texts left out: they share a passage with the labelled corpus")
    table: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(CODE_NAMES))
    biases: list[float] = []
    for position, code in enumerate(CODE_NAMES):
        positives = [item["text"] for item in poisoned if code in item["expect"]]
        negatives = benign + [item["text"] for item in poisoned if code not in item["expect"]]
        weights, bias = _train(positives, negatives)
        biases.append(round(bias, 4))
        for feature, weight in weights.items():
            if abs(weight) > KEEP_ABOVE:
                table[feature][position] = round(weight, 3)
        print(f"{code}: {len(positives)} positive, {len(negatives)} negative texts")
    sparse = {
        feature: [[position, weight] for position, weight in enumerate(row) if weight]
        for feature, row in table.items()
    }
    document = {"codes": list(CODE_NAMES), "bias": biases, "threshold": 0.5, "weights": sparse}
    model = TextModel.from_json(document)
    calibration = list(LEGITIMATE.values())
    if shared is not None:
        calibration += [item.text for item in shared.split("tune").benign]
    for threshold in THRESHOLDS:  # the lowest that flags at most FLAGGED_MAX of them
        flagged = sum(1 for text in calibration if model.codes(text, threshold))
        print(f"threshold {threshold}: {flagged} of {len(calibration)} benign texts flagged")
        document["threshold"] = threshold
        if flagged <= FLAGGED_MAX:
            break
    MODEL_PATH.write_text(json.dumps(document, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"{MODEL_PATH}: {len(table)} features, threshold {document['threshold']}")


if __name__ == "__main__":
    main()
