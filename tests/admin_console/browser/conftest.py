"""Browser tests: Debian's Chromium driven by Playwright against one live server.

Every test here is marked `browser` and `e2e`, and grouped on one xdist worker (the
Makefile runs pytest with `--dist loadgroup`), so a run starts one server and one browser.
Without /usr/bin/chromium they skip with the reason, except under CI, where they fail:
CI installs it (.ci/run).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, BrowserContext, Page, async_playwright

from tests.admin_console.browser.chromium import ARGS, CHROMIUM, require_chromium
from tests.admin_console.browser.seed import Seeded, seed
from tests.e2e.market import Market, running_market

HERE = Path(__file__).parent
SCREENSHOTS = HERE.parents[1] / "screenshots"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.xdist_group("browser"))


@pytest.fixture(scope="session")
def console_market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Market]:
    require_chromium()
    with running_market(tmp_path_factory.mktemp("console-market")) as live:
        yield live


@pytest.fixture(scope="session")
def seeded(console_market: Market) -> Seeded:
    return seed(console_market)


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    require_chromium()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        await launched.close()


@pytest.fixture
async def page(browser: Browser, console_market: Market) -> AsyncIterator[Page]:
    """A fresh browser profile (no cookies) per test."""
    context: BrowserContext = await browser.new_context(
        base_url=console_market.url, viewport={"width": 1366, "height": 900}
    )
    opened = await context.new_page()
    yield opened
    await context.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS
