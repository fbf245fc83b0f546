from __future__ import annotations

import sys
import unicodedata

import pytest

from marketplace_rules.text import display, forbidden_chars, has_forbidden_chars, iter_strings


@pytest.mark.parametrize(
    "text",
    [
        "evil\u202ecod.exe",  # right-to-left override
        "a\u2066b\u2069",  # isolates
        "zero\u200bwidth",
        "left\u200emark",
        "\ufeffbom",
        "soft\u00adhyphen",
        "esc\x1b[31m",
        "nul\x00",
        "del\x7f",
        "tag\U000e0041",
        "hangul\u3164filler",
        "line\u2028separator",
        "pay\u200dpal",  # joiner between ASCII letters
        "\u200cadmin",  # joiner at the start
        "admin\u200d",  # joiner at the end
        "lone\ud800surrogate",
    ],
)
def test_flags_invisible_and_bidi_control_characters(text: str) -> None:
    assert has_forbidden_chars(text)


@pytest.mark.parametrize(
    "text",
    [
        "插件市场：高效的开发工具",
        "日本語のプラグイン、テスト。",
        "한국어 플러그인",
        "تطبيق عربي",
        "نمی\u200cخواهم",  # Persian ZWNJ inside a word
        "👩\u200d💻 family 👨\u200d👩\u200d👧",  # emoji ZWJ sequences
        "❤\ufe0f heart with variation selector",
        "tabs\tand\nnewlines\r\n",
        "Ünïcödé façade",
        "全角　空格",
    ],
)
def test_passes_ordinary_text_in_any_script(text: str) -> None:
    assert not has_forbidden_chars(text)


def test_covers_every_invisible_format_character_of_this_unicode_version() -> None:
    # Visible "prepended concatenation marks" (Arabic, Syriac, Kaithi number signs) are Cf
    # but print; ZWNJ/ZWJ are allowed inside words. Every other Cf must be flagged.
    visible = {0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06DD, 0x070F}
    visible |= {0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD, 0x200C, 0x200D}
    missed = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) == "Cf"
        and code not in visible
        and not has_forbidden_chars(f"a{chr(code)}b")
    ]

    assert missed == []


def test_forbidden_chars_lists_each_character_once() -> None:
    assert forbidden_chars("\u202ea\u202eb\u200b") == ["U+202E", "U+200B"]


def test_iter_strings_yields_values_and_keys_with_paths() -> None:
    found = sorted(iter_strings({"a": ["x", {"b": "y"}], "n": 1}))

    assert found == [
        ("manifest.a (key name)", "a"),
        ("manifest.a[0]", "x"),
        ("manifest.a[1].b", "y"),
        ("manifest.a[1].b (key name)", "b"),
        ("manifest.n (key name)", "n"),
    ]


def test_iter_strings_handles_deep_nesting_without_recursion() -> None:
    deep: object = "leaf"
    for _ in range(5000):
        deep = [deep]

    assert next(iter_strings(deep)) == ("manifest" + "[0]" * 5000, "leaf")


def test_display_escapes_unprintable_characters_and_caps_length() -> None:
    assert display("a\u202eb\x1b" + "x" * 200, limit=5) == "a\\u202eb\\u001bx..."
