"""A small text model beside the rules: catches paraphrases no rule was written for.

One logistic regression per CONTRACT 14 code over a text's lower-cased words and word pairs
(`model.json`, trained by bench/train_model_text.py on corpora kept outside the
repository; the labelled corpus in ../shared/data only chooses its threshold). It runs
offline in microseconds per word, and it only adds: a code a rule already found is not
scored again. A long text is scored a window of sentences at a time, so its findings name
a line; the words that weighed most are what the console marks.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Final

from marketplace_rules.findings import Code
from marketplace_rules.model_text.gates import lowered

MODEL_PATH: Final = Path(__file__).with_name("model.json")
CODE_NAMES: Final = (
    str(Code.AI_INSTRUCTION_OVERRIDE),
    str(Code.AI_CONCEALMENT),
    str(Code.AI_SENSITIVE_DATA),
    str(Code.AI_EXFILTRATION),
    str(Code.AI_TOOL_SHADOWING),
    str(Code.AI_HIDDEN_MARKUP),
    str(Code.AI_COERCION),
)
_TOKEN: Final = re.compile(r"[a-z0-9_]+|[^\x00-\x7f]|[<>@~/{}\[\]`]")
WINDOW_CHARS: Final = 600
"""A long text is scored in windows of whole sentences of about this many characters
(the model was trained on descriptions and paragraphs of that size)."""
SHOWN_WORDS: Final = 3
SCORED_CHARS: Final = 2_000
"""A package's file is scored only up to this long (short skills, like what the model was
trained on). On a README or a long skill its rare false alarm per window adds up over
hundreds of windows (measured on public MCP servers' READMEs: one in six flagged), and the
rules judge those alone. Descriptions, parameters and instructions are always scored."""


def _tokens(text: str) -> list[re.Match[str]]:
    return list(_TOKEN.finditer(lowered(text)))


def features(text: str) -> set[str]:
    """The words and word pairs of a text, lower-cased: what the model weighs."""
    words = _TOKEN.findall(lowered(text))
    found = set(words)
    found.update(f"{first} {second}" for first, second in itertools.pairwise(words))
    return found


Weights = tuple[tuple[int, float], ...]


@dataclass(frozen=True)
class TextModel:
    names: tuple[str, ...]
    bias: tuple[float, ...]
    threshold: float
    weights: dict[str, list[list[float]]]
    """feature -> [[code index, weight], ...]: only the codes it weighs for, as stored."""

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> TextModel:
        return cls(
            tuple(document["codes"]),
            tuple(document["bias"]),
            float(document["threshold"]),
            document["weights"],
        )

    @cached_property
    def _by_word_and_pair(self) -> tuple[dict[str, Weights], dict[tuple[str, str], Weights]]:
        """The weights by word and by pair of words: a text's distinct words and pairs meet
        them in one set intersection each (no pair spelled out as a string)."""
        words: dict[str, Weights] = {}
        pairs: dict[tuple[str, str], Weights] = {}
        for feature, stored in self.weights.items():
            weighed = tuple((int(position), float(weight)) for position, weight in stored)
            first, space, second = feature.partition(" ")
            if space:
                pairs[first, second] = weighed
            else:
                words[feature] = weighed
        return words, pairs

    def weight(self, feature: str, position: int) -> float:
        for index, value in self.weights.get(feature, ()):
            if index == position:
                return value
        return 0.0

    def scores(self, text: str) -> list[float]:
        """The probability of each code for text, in `codes` order."""
        totals = list(self.bias)
        word_weights, pair_weights = self._by_word_and_pair
        words = _TOKEN.findall(lowered(text))
        for word in word_weights.keys() & set(words):
            for position, weight in word_weights[word]:
                totals[position] += weight
        for pair in pair_weights.keys() & set(itertools.pairwise(words)):
            for position, weight in pair_weights[pair]:
                totals[position] += weight
        return [1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z)))) for z in totals]

    def codes(self, text: str, threshold: float | None = None) -> list[str]:
        limit = self.threshold if threshold is None else threshold
        return [code for code, p in zip(self.names, self.scores(text), strict=True) if p > limit]

    def evidence(self, text: str, offset: int, code: str) -> tuple[tuple[int, int], ...]:
        """Spans (offsets in the whole text) of the words that weighed most for code."""
        position = self.names.index(code)
        tokens = _tokens(text)
        weighed: list[tuple[float, int, int]] = []
        for index, match in enumerate(tokens):
            weight = self.weight(match.group(), position)
            if weight > 0:
                weighed.append((weight, match.start(), match.end()))
            if index + 1 < len(tokens):
                pair = f"{match.group()} {tokens[index + 1].group()}"
                weight = self.weight(pair, position)
                if weight > 0:
                    weighed.append((weight, match.start(), tokens[index + 1].end()))
        top = sorted(weighed, reverse=True)[:SHOWN_WORDS]
        return tuple(sorted((offset + start, offset + end) for _, start, end in top))


@cache
def text_model() -> TextModel | None:
    """The shipped model; None when its file is missing (the rules alone then)."""
    try:
        document = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return TextModel.from_json(document)


def windows(bounds: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Runs of whole sentences of about WINDOW_CHARS (one sentence when it is longer)."""
    start: int | None = None
    end = 0
    for first, last in bounds:
        if start is None:
            start = first
        end = last
        if end - start >= WINDOW_CHARS:
            yield start, end
            start = None
    if start is not None:
        yield start, end
