"""Small pure rules of the console: where login may return to, and how times read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from marketplace.web.security import safe_next, same_token
from marketplace.web.sites import CONSOLE
from marketplace.web.templating import age, icon_src, size

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "target",
    ["/console", "/console/audit?action=REVIEW_APPROVE&page=2", "/console/plugins/versions/x"],
)
def test_console_pages_are_kept(target: str) -> None:
    assert safe_next(CONSOLE, target) == target


@pytest.mark.parametrize(
    "target",
    [
        None,
        "",
        "https://evil.example/console",
        "//evil.example",
        "/\\evil.example",
        "javascript:alert(1)",
        "/console/..",
        "/console/%2E%2E/api",
        "/console/login",
        "/console\n/x",
        "/consolex",
        "/" + "a" * 3000,
    ],
)
def test_anything_else_returns_to_the_queue(target: str | None) -> None:
    assert safe_next(CONSOLE, target) == "/console"


def test_tokens_compare_only_when_equal() -> None:
    assert same_token("abc", "abc")
    assert not same_token("abd", "abc")
    assert not same_token(None, "abc")
    assert not same_token("", "")


@pytest.mark.parametrize(
    ("delta", "shown"),
    [
        (timedelta(seconds=5), "just now"),
        (timedelta(minutes=12), "12 min"),
        (timedelta(hours=3, minutes=59), "3 h"),
        (timedelta(days=2, hours=23), "2 d"),
    ],
)
def test_age_reads_in_the_largest_whole_unit(delta: timedelta, shown: str) -> None:
    assert age(NOW - delta, NOW) == shown


def test_sizes_are_binary() -> None:
    assert (size(10), size(2048), size(5 * 1024 * 1024), size(None)) == (
        "10 B",
        "2.0 KiB",
        "5.0 MiB",
        "-",
    )


def test_icon_sources_are_image_data_urls_only() -> None:
    assert icon_src("data:image/webp;base64,AAAA") == "data:image/webp;base64,AAAA"
    assert icon_src("data:image/svg+xml;base64,PHN2Zy8+") is not None
    assert icon_src("data:image/svg+xml;utf8,<svg onload=alert(1)>") is None
    assert icon_src("https://example.com/icon.png") is None
    assert icon_src(None) is None
