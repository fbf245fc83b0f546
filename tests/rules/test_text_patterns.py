"""The documented text patterns say exactly what the server's checks say (issue 24 item 4):
the visible-text pattern is `has_forbidden_chars` (astral format characters and the joiner
rule included), the required-text pattern also asks for something trimming leaves, and a
generator can work from both."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from marketplace_rules.text import (
    has_forbidden_chars,
    is_blank,
    non_blank_visible_pattern,
    trimmed,
    visible_text_pattern,
)

VISIBLE = re.compile(visible_text_pattern())
REQUIRED = re.compile(non_blank_visible_pattern())
# Each kind of character the rules tell apart: ASCII and other letters, ASCII and other
# whitespace, the joiners, forbidden controls (C0, C1, bidi, zero-width), astral format
# characters (a tag, a hieroglyph control), an emoji with its variation selector.
PIECES = [
    "a", "~", " ", "\t", "\n", "中", "é", "\u3000", "\u00a0", "\u200c", "\u200d",
    "\x07", "\x7f", "\x85", "\u200b", "\u202e", "\ufeff",
    "\U000e0058", "\U00013430", "\U0001f600", "\ufe0f",
]  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=10).map("".join))
def test_the_patterns_accept_exactly_what_the_checks_accept(text: str) -> None:
    allowed = not has_forbidden_chars(text)
    assert bool(VISIBLE.fullmatch(text)) is allowed
    assert bool(REQUIRED.fullmatch(text)) is (allowed and not is_blank(text))
    if allowed:  # what is stored is still allowed text
        assert not has_forbidden_chars(trimmed(text))


def test_joiners_are_text_between_other_letters_only() -> None:
    assert VISIBLE.fullmatch("می\u200cخواهم") and REQUIRED.fullmatch("می\u200cخواهم")
    for text in ("a\u200cb", "\u200c中", "中\u200c", "中\u200c a"):
        assert VISIBLE.fullmatch(text) is None and has_forbidden_chars(text)
    # Only joiners and spaces: nothing to keep.
    assert REQUIRED.fullmatch("\u3000\u200d\u3000") is None and is_blank("\u3000\u200d\u3000")


def test_astral_format_characters_are_named_by_the_pattern() -> None:
    for text in ("tag\U000e0041", "hieroglyph\U00013430"):
        assert VISIBLE.fullmatch(text) is None and has_forbidden_chars(text)
    assert VISIBLE.fullmatch("emoji \U0001f600\ufe0f")


@settings(max_examples=200, deadline=None)
@given(st.from_regex(non_blank_visible_pattern(), fullmatch=True))
def test_a_generator_draws_only_accepted_text_from_the_required_pattern(text: str) -> None:
    assert not has_forbidden_chars(text)
    assert not is_blank(text)
