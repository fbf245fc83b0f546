"""The gates (rules.model_text.gates) only skip work: every text gets the same hits with
them as without them, and each alternative's gate words are in every match it makes."""

from __future__ import annotations

import re

import pytest
from bench.findings_corpus import HOSTILE, load_corpus

from marketplace_rules.model_text import judge
from marketplace_rules.model_text.gates import LEFT, RIGHT, alternatives, core, lowered
from marketplace_rules.model_text.signals import SENTENCE_SIGNALS
from tests.rules.test_model_text_cases import ATTACKS, BENIGN

HOSTILE_CHARS = 4096


def _texts() -> list[str]:
    texts = [attack.text for attack in ATTACKS] + list(BENIGN.values())
    texts += [make(HOSTILE_CHARS) for make in HOSTILE.values()]
    corpus = load_corpus()
    if corpus is not None:
        texts += corpus.texts()
    return texts


@pytest.mark.parametrize("index", range(len(_texts())))
def test_gated_and_ungated_judgements_agree(index: int) -> None:
    text = _texts()[index]
    assert judge(text) == judge(text, gated=False)


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _holds(text: str, start: int, end: int, word: str) -> bool:
    """Whether text[start:end] holds the gate word, at the word boundaries its marks ask
    for, as the index sees them in the whole text."""
    low, bare = lowered(text), core(word)
    at = low.find(bare, start, end)
    while at >= 0:
        stop = at + len(bare)
        left = at == 0 or not _word_char(low[at - 1])
        right = stop >= len(low) or not _word_char(low[stop])
        if (left or not word.startswith(LEFT)) and (right or not word.endswith(RIGHT)):
            return True
        at = low.find(bare, at + 1, end)
    return False


def test_every_match_holds_a_word_of_each_gate() -> None:
    """The words read off a pattern are necessary: checked on every match the signals make
    in the test texts (a wrong gate would make the gated judgement miss matches)."""
    checked = 0
    for pattern in SENTENCE_SIGNALS:
        for alternative in alternatives(pattern):
            for text in _texts():
                for match in alternative.pattern.finditer(text):
                    for gate in alternative.gates:
                        assert any(
                            _holds(text, match.start(), match.end(), word) for word in gate
                        ), (
                            f"{alternative.pattern.pattern[:60]!r} matched {match.group()!r} "
                            f"without any of {sorted(gate)[:5]}"
                        )
                    checked += 1
    assert checked > 1000  # the texts exercise the signals


def test_gate_words_are_read_off_the_pattern() -> None:
    (literal,) = alternatives(re.compile(r"\bsend\s+(?:every|each)\s+emails?\b", re.I))
    # `send` must start a word; `every|each`, parsed as `e` + `(?:very|ach)`, is joined
    # back.
    assert frozenset({LEFT + "send"}) in literal.gates
    assert frozenset({"every", "each"}) in literal.gates
    (bounded,) = alternatives(re.compile(r"\b(?:tell|mention)\b", re.I))
    assert bounded.gates == (frozenset({LEFT + "tell" + RIGHT, LEFT + "mention" + RIGHT}),)
    # A literal `<` is a word like any other, not a mark.
    (angle,) = alternatives(re.compile(r"=<\w+>"))
    assert angle.gates == (frozenset({"=<"}), frozenset({">"}))
    assert frozenset({"email"}) in literal.gates
    # A group it can skip gives no word; a class gives none either.
    (optional,) = alternatives(re.compile(r"(?:secret\s+)?[a-z]+key", re.I))
    assert optional.gates == (frozenset({"key"}),)
    assert alternatives(re.compile(r"\w+@\w+"))[0].gates == (frozenset({"@"}),)


def test_top_level_alternatives_are_split_outside_groups_and_classes() -> None:
    found = alternatives(re.compile(r"a(?:b|c)d|[|]x|e\|f"))
    assert [alternative.pattern.pattern for alternative in found] == ["a(?:b|c)d", "[|]x", r"e\|f"]
