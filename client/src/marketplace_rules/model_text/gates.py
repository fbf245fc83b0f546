"""Which sentences a signal can match at all, found in one pass over the text.

Python's `re` tries every alternative of a pattern at every position of the text: a few
hundred alternatives over 100 KiB is seconds. So each signal is split into its top-level
alternatives, and each alternative gets a *gate*: words of which every match must contain
at least one (read off the parsed pattern: its literal runs, and the literal choices of a
group it cannot skip). One Aho-Corasick pass over the lower-cased text finds every gate
word; an alternative is tried only in the sentences holding one of its words. Gating
changes no result (a test judges the corpus both ways); it only skips the sentences where
an alternative cannot match.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any, Final

import ahocorasick

_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
LEFT: Final = "\x01"
"""Marks a gate word that must start a word (the pattern has `\\b` before it)."""
RIGHT: Final = "\x02"
"""Marks a gate word that must end a word."""
_REPEATS: Final = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)


def lowered(text: str) -> str:
    """text in lower case with every offset unchanged: str.lower(), unless it changes the
    text's length (a few letters lower to two characters), then ASCII letters only."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


@dataclass(frozen=True, slots=True)
class Alternative:
    """One top-level alternative of a signal, compiled alone, and its gate: sets of words,
    each of which a match must hold one word of (none: tried everywhere)."""

    pattern: re.Pattern[str]
    gates: tuple[frozenset[str], ...]

    @property
    def words(self) -> frozenset[str]:
        return frozenset().union(*self.gates)

    def open_with(self, present: set[str]) -> bool:
        return all(not gate.isdisjoint(present) for gate in self.gates)


def alternatives(pattern: re.Pattern[str]) -> tuple[Alternative, ...]:
    return tuple(
        Alternative(compiled, _gate(compiled))
        for compiled in (
            re.compile(source, pattern.flags) for source in _top_level(pattern.pattern)
        )
    )


def _top_level(source: str) -> list[str]:
    """The pattern's source cut at its top-level `|` (not inside a group or a class)."""
    parts: list[str] = []
    depth, start, index, in_class = 0, 0, 0, False
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if source[index + 1 : index + 2] == "]":  # a class that starts with ]
                index += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(source[start:index])
            start = index + 1
        index += 1
    parts.append(source[start:])
    return parts


def _gate(pattern: re.Pattern[str]) -> tuple[frozenset[str], ...]:
    """Every candidate set without a frequent word (all are required); if each has one,
    the best of them alone."""
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    candidates = list(dict.fromkeys(_candidates(parsed)))
    # Every candidate is required; those holding a function word would only cost time.
    usable = tuple(words for words in candidates if not _stop(words))
    selective = tuple(words for words in usable if not _weak(words))
    if selective:
        return selective
    best = _best(usable)  # no function word: a gate of `in` or `it` opens every sentence
    return (best,) if best else ()


_STOP: Final = frozenset("a an and as at be by for in is it of on or the to".split())


def _stop(words: frozenset[str]) -> bool:
    return any(_stop_word(core(word)) and not _bounded(word) for word in words)


def _bounded(word: str) -> bool:
    """`<cc>`, `<my`: only words that start (or end) there count, which makes even a
    short one selective."""
    return (word.startswith(LEFT) or word.endswith(RIGHT)) and core(word).strip(" .'") not in _STOP


def _stop_word(word: str) -> bool:
    """A function word, or a short run of letters (`do`, `ot`): found almost everywhere.
    Short marks (`@`, `://`, `+`) are rare, and kept."""
    bare = word.strip(" '")
    short = len(bare) < 3 and (not bare or (bare.isascii() and bare.isalpha()))
    return bare.strip(".") in _STOP or short


def _weak(words: frozenset[str]) -> bool:
    return any(_weak_word(word) for word in words)


def _weak_word(word: str) -> bool:
    bare = core(word).strip(" .")
    bounded = word.startswith(LEFT) and word.endswith(RIGHT)
    return bare in _COMMON or (len(bare) < 3 and bare.isascii() and bare.isalpha() and not bounded)


_COMMON: Final = frozenset(
    "a an and any all are as at be by do for from get in is it list me my no not of on or "
    "our read request return that the their them these this to turn use user with when "
    "you your file files issue repo repository directory provide co io com ru".split()
)
"""Words too frequent to make a selective gate (chosen only when nothing else is)."""


def _best(candidates: Iterable[frozenset[str]]) -> frozenset[str] | None:
    """The most selective candidate: no frequent word, longest shortest word, fewest."""
    ranked = sorted(
        candidates,
        key=lambda words: (
            _weak(words),
            -min(len(core(word)) for word in words),
            len(words),
        ),
    )
    return ranked[0] if ranked else None


def _leads(item: tuple[Any, Any] | None) -> list[str]:
    """The leading literal of each branch of a group that follows a literal run (all of
    them, or none when a branch starts otherwise)."""
    if item is None:
        return []
    op, value = item
    if op is sre.SUBPATTERN:
        inner = list(value[3])
        if len(inner) != 1:
            return []
        op, value = inner[0]
    if op is not sre.BRANCH:
        return []
    leads: list[str] = []
    for branch in value[1]:
        lead = ""
        for branch_op, branch_value in branch:
            if branch_op is not sre.LITERAL:
                break
            lead += lowered(chr(branch_value))
        if not lead:
            return []
        leads.append(lead)
    return leads


def _mark(word: str, left: bool, right: bool) -> str:
    """A gate word as the sentence index keeps it: `<w` when the pattern needs a word
    boundary before it, `w>` after it (only at an edge that is a word character)."""
    left = left and _is_word(word[0])
    right = right and _is_word(word[-1])
    return (LEFT if left else "") + word + (RIGHT if right else "")


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def core(word: str) -> str:
    """A gate word without its boundary marks."""
    return word.removeprefix(LEFT).removesuffix(RIGHT)


def _candidates(
    items: Iterable[tuple[Any, Any]], left: bool = False, right: bool = False
) -> list[frozenset[str]]:
    """Sets of words of which each match of `items` holds one (a literal run is a set of
    one word; a group it must pass through gives the union of its branches' best). left,
    right: a word boundary stands just before, after these items."""
    sequence = list(items)
    found: list[frozenset[str]] = []
    run: list[str] = []
    run_left = False
    before_boundary = left
    for position, (op, value) in enumerate(sequence):
        after = sequence[position + 1] if position + 1 < len(sequence) else None
        after_boundary = (
            right if after is None else (after[0] is sre.AT and after[1] is sre.AT_BOUNDARY)
        )
        if op is sre.LITERAL:
            if not run:
                run_left = before_boundary
            run.append(lowered(chr(value)))
            if after is None or after[0] is not sre.LITERAL:
                word = "".join(run)
                leads = _leads(after)
                if leads:  # `(?:any|all)` is parsed as `a` + `(?:ny|ll)`: join them back
                    found.append(frozenset(_mark(word + lead, run_left, False) for lead in leads))
                else:
                    found.append(frozenset({_mark(word, run_left, after_boundary)}))
                run.clear()
            before_boundary = False
            continue
        if op in _REPEATS:
            least, _, inner = value
            if least >= 1:
                found += _candidates(inner)
        elif op is sre.SUBPATTERN:
            found += _candidates(value[3], before_boundary, after_boundary)
        elif op is sre.ATOMIC_GROUP:
            found += _candidates(value, before_boundary, after_boundary)
        elif op is sre.BRANCH:
            best = [
                _best(_candidates(branch, before_boundary, after_boundary)) for branch in value[1]
            ]
            if all(words is not None for words in best):
                found.append(frozenset().union(*(words for words in best if words)))
        # Anything else (classes, any character, assertions) requires no word of its own.
        before_boundary = op is sre.AT and value is sre.AT_BOUNDARY
    return found


@dataclass(frozen=True)
class Signal:
    """A signal's alternatives; those without a gate; and for each gate word, the
    alternatives it opens."""

    alternatives: tuple[Alternative, ...]
    ungated: tuple[Alternative, ...]
    opened_by: dict[str, tuple[Alternative, ...]]
    words: frozenset[str]
    order: dict[int, int] = field(default_factory=dict)
    """id() of each alternative -> its place in the signal."""

    @classmethod
    def of(cls, pattern: re.Pattern[str]) -> Signal:
        found = alternatives(pattern)
        opened_by: dict[str, list[Alternative]] = {}
        for alternative in found:
            for word in alternative.words:
                opened_by.setdefault(word, []).append(alternative)
        return cls(
            found,
            tuple(alternative for alternative in found if not alternative.words),
            {word: tuple(alts) for word, alts in opened_by.items()},
            frozenset(opened_by),
            {id(alternative): place for place, alternative in enumerate(found)},
        )

    def open_in(self, present: set[str]) -> list[Alternative]:
        """The alternatives that can match where the gate words `present` occur, in the
        signal's order (only those a present word opens are looked at: a signal may have
        dozens, a sentence opens one or two)."""
        opened = {
            id(alt): alt
            for word in present
            for alt in self.opened_by.get(word, ())
            if alt.open_with(present)
        }
        if not self.ungated and len(opened) == 1:
            return list(opened.values())
        chosen = [*opened.values(), *self.ungated]
        chosen.sort(key=lambda alt: self.order[id(alt)])
        return chosen


@dataclass
class GateIndex:
    """Every gate word of every signal, in one automaton; the signals by their pattern's
    id(): hashing a compiled pattern hashes its whole program (microseconds for a large
    one), and the rules look signals up tens of thousands of times per 100 KiB."""

    automaton: Any
    signals: dict[int, Signal]

    @classmethod
    def build(cls, patterns: Sequence[re.Pattern[str]]) -> GateIndex:
        automaton = ahocorasick.Automaton()
        signals = {id(pattern): Signal.of(pattern) for pattern in patterns}
        used = frozenset().union(*(signal.words for signal in signals.values()))
        for bare in {core(word) for word in used}:
            # Each hit files only the keys some gate asks for (a bare `.`, a marked
            # `<list>`): None for the others, so most hits cost one or two set additions.
            keys = (bare, LEFT + bare, bare + RIGHT, LEFT + bare + RIGHT)
            automaton.add_word(bare, (len(bare), *(key if key in used else None for key in keys)))
        automaton.make_automaton()
        return cls(automaton, signals)

    def index_words(
        self, text: str, starts: list[int], words: list[set[str]], where: dict[str, set[int]]
    ) -> None:
        """File every gate word of text under its sentence (`starts`: each sentence's first
        offset): in `words[sentence]` and `where[word]`, as the word and as `<w`, `w>`,
        `<w>` where it stands at word boundaries."""
        low = lowered(text)
        size = len(low)
        last = len(starts) - 1
        index = 0
        # Hits come in order of their last character; a sentence is found by walking on
        # (a hit may start before the one found last: then bisect).
        following = starts[1] if last > 0 else size + 1
        for end, (length, bare, left_key, right_key, both_key) in self.automaton.iter(low):
            start = end - length + 1
            if start >= following:
                index = min(bisect.bisect_right(starts, start) - 1, last)
                following = starts[index + 1] if index < last else size + 1
            elif index and start < starts[index]:
                index = max(bisect.bisect_right(starts, start) - 1, 0)
                following = starts[index + 1] if index < last else size + 1
            keys = words[index]
            if bare is not None:
                keys.add(bare)
            if left_key is None and right_key is None and both_key is None:
                continue
            # _is_word inlined: this loop runs once per gate word in the text.
            before = low[start - 1] if start else " "
            left = not (before.isalnum() or before == "_")
            after = low[end + 1] if end + 1 < size else " "
            right = not (after.isalnum() or after == "_")
            if left and left_key is not None:
                keys.add(left_key)
            if right and right_key is not None:
                keys.add(right_key)
            if left and right and both_key is not None:
                keys.add(both_key)
        for sentence, keys in enumerate(words):
            for key in keys:
                where.setdefault(key, set()).add(sentence)
