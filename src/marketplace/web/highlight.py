"""The words a finding about text the model reads (CONTRACT 14) should show marked.

Such a finding's message is `<what>: "<quote>"`, maybe followed by ` (<note>)`; the rules'
`highlight` names the spans of the quote to mark. The page gets plain (text, marked) parts
and escapes every one of them itself: nothing of the message ever becomes mark-up.
"""

from __future__ import annotations

from collections.abc import Iterable

from marketplace_rules.findings import Code
from marketplace_rules.model_text import AI_CODES, highlight

Part = tuple[str, bool]

_OPEN = ': "'
_CLOSE = '"'


def quoted_parts(message: str, code: str) -> list[Part]:
    """The message as (text, marked) parts, in order, none empty; unmarked as a whole when
    the code is not one of CONTRACT 14's or the message quotes nothing."""
    if code not in AI_CODES:
        return _nonempty([(message, False)])
    opening = message.find(_OPEN)
    start = opening + len(_OPEN)
    end = message.rfind(_CLOSE)
    if opening < 0 or end < start:
        return _nonempty([(message, False)])
    quote = message[start:end]
    parts: list[Part] = [(message[:start], False)]
    shown = 0
    for first, last in _spans(highlight(quote, Code(code)), len(quote)):
        parts += [(quote[shown:first], False), (quote[first:last], True)]
        shown = last
    parts += [(quote[shown:], False), (message[end:], False)]
    return _nonempty(parts)


def _spans(spans: Iterable[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    """The spans inside the quote, in order, overlapping or touching ones joined."""
    joined: list[tuple[int, int]] = []
    for first, last in sorted((max(0, a), min(length, b)) for a, b in spans):
        if first >= last:
            continue
        if joined and first <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(joined[-1][1], last))
        else:
            joined.append((first, last))
    return joined


def _nonempty(parts: list[Part]) -> list[Part]:
    """Empty parts left out, neighbours of the same kind joined."""
    kept: list[Part] = []
    for text, marked in parts:
        if not text:
            continue
        if kept and kept[-1][1] == marked:
            kept[-1] = (kept[-1][0] + text, marked)
        else:
            kept.append((text, marked))
    return kept
