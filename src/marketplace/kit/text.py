"""Text hygiene shared by request validation and manifest checks."""

from __future__ import annotations

import unicodedata

# Bidirectional controls and zero-width characters that can hide or reorder text
# (the "Trojan Source" family), plus other invisible format characters.
_EXPLICIT = frozenset(
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e"
    "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\u206a\u206b\u206c\u206d\u206e\u206f"
    "\u3164\ufeff\uffa0"
)


def has_forbidden_chars(text: str) -> bool:
    """True for invisible/bidi-control characters; ordinary CJK and emoji pass."""
    for char in text:
        if char in _EXPLICIT:
            return True
        category = unicodedata.category(char)
        # Cf = format characters (all invisible); Cc except tab/newline/carriage return.
        if category == "Cf":
            return True
        if category == "Cc" and char not in "\t\n\r":
            return True
    return False
