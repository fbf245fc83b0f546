from __future__ import annotations

from marketplace.kit import text as kit_text
from marketplace.packages import text as packages_text


def test_safe_text_refuses_the_characters_manifests_refuse() -> None:
    # kit repeats the character set so that it imports no domain package; one set it stays.
    assert kit_text._FORBIDDEN.pattern == packages_text._FORBIDDEN.pattern
