"""Rules over the text a model reads (CONTRACT 14): tool poisoning and prompt injection.

`judge(text, context)` finds the hits of one text; `report` turns them into findings with
the path of their source (`sources`); `signals.highlight` gives the words of a quote a
reviewer should see marked. The rules run offline, in the service and in `marketplace
validate`, and give the same findings for the same input.
"""

from marketplace_rules.model_text.report import model_text_findings, text_findings
from marketplace_rules.model_text.rules import AI_CODES, judge
from marketplace_rules.model_text.signals import highlight
from marketplace_rules.model_text.sources import (
    NO_CONTEXT,
    FileTexts,
    ModelText,
    ToolContext,
    file_text,
    inspection_texts,
    is_model_text_file,
    manifest_texts,
)

__all__ = [
    "AI_CODES",
    "NO_CONTEXT",
    "FileTexts",
    "ModelText",
    "ToolContext",
    "file_text",
    "highlight",
    "inspection_texts",
    "is_model_text_file",
    "judge",
    "manifest_texts",
    "model_text_findings",
    "text_findings",
]
