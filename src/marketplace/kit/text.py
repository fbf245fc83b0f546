"""The text check every client-supplied string passes (SafeText): no hidden characters.

The same character set as packages/text.py, which checks manifests with it and explains
each range; tests/kit/test_text.py keeps the two equal. It is repeated here so that kit
depends on no domain package.
"""

from __future__ import annotations

import re

_ALWAYS = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e"
    "\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
    "\u3164\ud800-\udfff\ufeff\uffa0\ufff9-\ufffb"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)
# ZWNJ and ZWJ belong inside Persian and Indic words and emoji sequences; next to ASCII
# (or at either end of the text) they only serve to disguise a word.
_JOINERS = "\u200c\u200d"
_FORBIDDEN = re.compile(
    rf"[{_ALWAYS}]"
    rf"|(?:\A|(?<=[\x00-\x7f]))[{_JOINERS}]"
    rf"|[{_JOINERS}](?=[\x00-\x7f]|\Z)"
)


def has_forbidden_chars(text: str) -> bool:
    """True when text holds invisible or bidirectional-control characters."""
    return _FORBIDDEN.search(text) is not None
