"""Debian's Chromium for Playwright (which cannot download its own browsers here)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_chromium(path: Path = CHROMIUM, env: Mapping[str, str] = os.environ) -> None:
    """Skip without the browser, with the reason; under CI (CI=true) fail instead."""
    if path.exists():
        return
    reason = f"{path} is missing: `apt-get install -y chromium` runs the console's browser tests"
    if env.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)
