"""The console on a phone-sized screen (375 px wide): the menu wraps instead of running off
the edge."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from tests.e2e.market import ADMIN_EMAIL, PASSWORD, Market

WIDTH = 375


@pytest.fixture
async def phone(browser: Browser, console_market: Market) -> AsyncIterator[Page]:
    context = await browser.new_context(
        base_url=console_market.url, viewport={"width": WIDTH, "height": 812}
    )
    opened = await context.new_page()
    yield opened
    await context.close()


async def test_every_menu_link_is_on_screen_at_375_pixels(
    phone: Page, console_market: Market, screenshots: Path
) -> None:
    await phone.goto("/console")
    await phone.get_by_label("Email", exact=True).fill(ADMIN_EMAIL)
    await phone.get_by_label("Password", exact=True).fill(PASSWORD)
    await phone.get_by_role("button", name="Log in").click()
    await expect(phone).to_have_url("/console")

    for path in ("/console", "/console/audit"):
        await phone.goto(path)
        links = phone.locator("nav.mainnav a")
        await expect(links).to_have_text(["Queue", "Categories", "Audit log"])
        for link in await links.all():
            await expect(link).to_be_visible()
            box = await link.bounding_box()
            assert box is not None
            assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, (path, box)
        logout = phone.get_by_role("button", name="Log out")
        await expect(logout).to_be_visible()
        box = await logout.bounding_box()
        assert box is not None and box["x"] + box["width"] <= WIDTH, (path, box)
        # Nothing in the header reaches past the screen's edge.
        overflow = await phone.evaluate("() => document.querySelector('header.topbar').scrollWidth")
        assert overflow <= WIDTH, path
    await phone.screenshot(path=screenshots / "narrow-375.png", full_page=True)
