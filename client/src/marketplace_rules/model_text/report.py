"""Hits as findings (CONTRACT 14): one finding per code and text, at the place of its
first evidence, its message quoting the matched words in their context."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from marketplace_rules.findings import Code, Finding
from marketplace_rules.model_text.rules import CODE_ORDER, SEVERITY, TextHit, judge
from marketplace_rules.model_text.sources import NO_CONTEXT, ModelText, ToolContext

QUOTE_MAX: Final = 200
"""Characters of the text quoted in a finding's message (CONTRACT 14)."""
_ELLIPSIS: Final = "…"

WHAT: Final[dict[Code, str]] = {
    Code.AI_INSTRUCTION_OVERRIDE: "tells the model to ignore or override its instructions",
    Code.AI_CONCEALMENT: "tells the model to hide something from the user",
    Code.AI_SENSITIVE_DATA: "asks the model to read or pass credentials or private files",
    Code.AI_EXFILTRATION: "asks the model to send data somewhere the user did not ask for",
    Code.AI_TOOL_SHADOWING: "changes how the model uses another tool",
    Code.AI_HIDDEN_MARKUP: "holds instructions hidden from a human reader",
    Code.AI_COERCION: "pressures the model to call this tool first or always",
}


def model_text_findings(
    texts: Iterable[ModelText], context: ToolContext = NO_CONTEXT
) -> list[Finding]:
    """The findings of every text, in the order given, codes in CODE_ORDER per text."""
    findings: list[Finding] = []
    for text in texts:
        findings += text_findings(text, context)
    return findings


def text_findings(text: ModelText, context: ToolContext = NO_CONTEXT) -> list[Finding]:
    return [_finding(text, hit) for hit in judge(text.text, context, document=text.line_numbers)]


def _finding(source: ModelText, hit: TextHit) -> Finding:
    path = source.path
    if source.line_numbers:
        path = f"{path}:{source.text.count(chr(10), 0, hit.spans[0][0]) + 1}"
    message = f'{WHAT[hit.code]}: "{quote(source.text, hit)}"'
    if hit.note:
        message += f" ({hit.note})"
    return Finding(hit.code, SEVERITY[hit.code], path, message)


def quote(text: str, hit: TextHit) -> str:
    """The matched words in their sentence, cut around them to QUOTE_MAX characters;
    whitespace runs (hidden text's padding among them) shown as one space."""
    first, last = hit.spans[0][0], max(end for _, end in hit.spans)
    start, end = max(hit.context[0], first - 60), hit.context[1]
    shown = " ".join(text[start:end].split())
    lead = start > hit.context[0]
    if len(shown) > QUOTE_MAX or lead:
        words = " ".join(text[start : min(end, max(last, first + 1) + QUOTE_MAX)].split())
        shown = (_ELLIPSIS if lead else "") + words
        if len(shown) > QUOTE_MAX:
            shown = shown[: QUOTE_MAX - 1] + _ELLIPSIS
    return shown


__all__ = ["CODE_ORDER", "WHAT", "model_text_findings", "quote", "text_findings"]
