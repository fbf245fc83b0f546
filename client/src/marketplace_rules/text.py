"""Text hygiene for manifests and request fields: hidden characters and safe display."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

# Characters that hide or reorder what a reviewer reads:
# - C0/C1 controls except tab, newline, carriage return (terminal escapes, NUL);
# - the Unicode "Cf" format characters that render as nothing: soft hyphen, zero-width
#   space, LRM/RLM/ALM, the bidi embeddings, overrides and isolates ("Trojan Source"),
#   word joiner and invisible operators, BOM, interlinear annotations, tag characters;
# - invisible letters and separators used for spoofing although they are not "Cf":
#   combining grapheme joiner, Hangul fillers, Khmer inherent vowels, U+2028/U+2029;
# - unpaired surrogates, which no UTF-8 store can hold.
# Left out on purpose: the visible Arabic/Syriac/Kaithi number signs (Cf but printed),
# variation selectors (every emoji uses U+FE0F) and ordinary CJK punctuation and spaces.
_ALWAYS = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e"
    "\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
    "\u3164\ud800-\udfff\ufeff\uffa0\ufff9-\ufffb"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)
# ZWNJ and ZWJ are needed inside Persian and Indic words and emoji sequences; next to
# ASCII (or at either end of the text) they only serve to disguise a word.
_JOINERS = "\u200c\u200d"
_FORBIDDEN = re.compile(
    rf"[{_ALWAYS}]"
    rf"|(?:\A|(?<=[\x00-\x7f]))[{_JOINERS}]"
    rf"|[{_JOINERS}](?=[\x00-\x7f]|\Z)"
)


def _escaped(char: str) -> str:
    return f"\\u{ord(char):04x}"


# What str.strip() removes (str.isspace), spelled out so that a pattern means the same in
# ECMA-262 and Python (their `\\s` differ: U+001C-U+001F, U+0085, U+FEFF).
WHITESPACE = "\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def is_blank(text: str) -> bool:
    """Nothing but whitespace (what trimming would leave empty)."""
    return not text.strip()


def _class_body(ranges: str) -> str:
    parts: list[str] = []
    for first, last in re.findall(r"(.)(?:-(.))?", ranges, flags=re.DOTALL):
        # Astral ranges cannot be named (above); nor lone surrogates, which no UTF-8 JSON
        # body can carry and which make common generators (schemathesis) drop the pattern.
        if ord(first) > 0xFFFF or 0xD800 <= ord(first) <= 0xDFFF:
            continue
        end = chr(min(ord(last), 0xFFFF)) if last else ""
        parts.append(_escaped(first) + (f"-{_escaped(end)}" if end else ""))
    return "".join(parts)


def non_blank_visible_pattern() -> str:
    """`visible_text_pattern`, and at least one character that is not whitespace: the text a
    required field accepts (it is stored trimmed, and must not trim to nothing)."""
    hidden = _class_body(_ALWAYS)
    return f"^[^{hidden}]*[^{hidden}{_class_body(WHITESPACE)}][^{hidden}]*$"


def visible_text_pattern() -> str:
    """A JSON Schema `pattern` (ECMA-262 and Python alike) refusing the characters above.

    Only the Basic Multilingual Plane can be named in a class without ECMA's `u` flag, so
    the astral ranges (tag characters, hieroglyph and musical format controls) and the
    joiner-next-to-ASCII rule stay with the server's own check: the pattern is what every
    accepted text matches, not everything the server refuses.
    """
    return f"^[^{_class_body(_ALWAYS)}]*$"


def has_forbidden_chars(text: str) -> bool:
    """True when text holds invisible or bidirectional-control characters."""
    return _FORBIDDEN.search(text) is not None


def forbidden_chars(text: str) -> list[str]:
    """The distinct forbidden characters of text as U+XXXX labels, in order of appearance."""
    seen = dict.fromkeys(match.group() for match in _FORBIDDEN.finditer(text))
    return [f"U+{ord(char):04X}" for char in seen]


def walk_strings(value: Any, path: str = "") -> Iterator[tuple[str, str, bool]]:
    """Every string in a JSON value, keys included: (JSON path, text, whether a key name).

    A key name comes with the path of its member. Keys of one object come before their
    values (last key first); the order is the one review notes have always listed.
    """
    # Iterative: json.loads accepts nesting close to the recursion limit.
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item, False
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                member = f"{where}.{key}" if where else str(key)
                yield member, str(key), True
                stack.append((member, child))
        elif isinstance(item, list):
            stack.extend(
                (f"{where}[{index}]", child) for index, child in reversed(list(enumerate(item)))
            )


def iter_strings(value: Any, path: str = "manifest") -> Iterator[tuple[str, str]]:
    """Every string in a JSON value, keys included, with a readable path to it."""
    for where, text, is_key in walk_strings(value, path):
        yield (f"{where} (key name)" if is_key else where), text


def display(text: str, limit: int = 120) -> str:
    """text made safe to echo in an error message: unprintables escaped, length capped."""
    shown = "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in text[:limit])
    return shown + ("..." if len(text) > limit else "")
