"""The seven rules of CONTRACT 14 (work in progress: filled in next)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from marketplace_rules.findings import Code, Severity
from marketplace_rules.model_text.sources import NO_CONTEXT, ToolContext

CODE_ORDER: Final = (
    Code.AI_INSTRUCTION_OVERRIDE,
    Code.AI_CONCEALMENT,
    Code.AI_SENSITIVE_DATA,
    Code.AI_EXFILTRATION,
    Code.AI_TOOL_SHADOWING,
    Code.AI_HIDDEN_MARKUP,
    Code.AI_COERCION,
)
AI_CODES: Final = frozenset(CODE_ORDER)
SEVERITY: Final[dict[Code, Severity]] = {
    code: ("info" if code == Code.AI_COERCION else "warning") for code in CODE_ORDER
}


@dataclass(frozen=True, slots=True)
class TextHit:
    """One rule's evidence in one text: spans of the matched words (offsets in the text,
    first one first), the sentence they stand in, and a note (the annotation's
    contradiction) or ""."""

    code: Code
    spans: tuple[tuple[int, int], ...]
    context: tuple[int, int]
    note: str = ""


def judge(text: str, context: ToolContext = NO_CONTEXT) -> list[TextHit]:
    return []
