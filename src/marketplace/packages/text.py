"""Text hygiene, now in `marketplace.rules.text` (shared with the CLI); kept for importers."""

from __future__ import annotations

from marketplace.rules.text import display, forbidden_chars, has_forbidden_chars, iter_strings

__all__ = ["display", "forbidden_chars", "has_forbidden_chars", "iter_strings"]
