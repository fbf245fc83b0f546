"""The browser tests skip without Chromium, except under CI, where they fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.admin_console.browser.chromium import require_chromium


def test_missing_chromium_skips_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        require_chromium(tmp_path / "chromium", env={})


def test_missing_chromium_fails_under_ci(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match="is missing"):
        require_chromium(tmp_path / "chromium", env={"CI": "true"})


def test_present_chromium_passes(tmp_path: Path) -> None:
    browser = tmp_path / "chromium"
    browser.touch()
    require_chromium(browser, env={"CI": "true"})
