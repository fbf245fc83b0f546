"""The publisher portal and the public pages in a real browser (issue 29): log in, read a
rejection note, set, halt and resume a rollout, make a token and see it once, add and
remove a member, and open a plugin's public page from the landing page's search.

Screenshots go to tests/screenshots/ like the console's; `make screenshots` runs these
tests with MARKETPLACE_DOCS_SCREENSHOTS=1 to write them to docs/screenshots/ instead, where
the documentation shows them (so an ordinary test run leaves the tracked files alone)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.admin_console.browser.seed import _approve_plugin, _publish, _upload
from tests.e2e.market import DEVELOPER_EMAIL, PASSWORD, Market
from tests.helpers import ok

REPOSITORY = Path(__file__).parents[3]
DOCS_SCREENSHOTS = REPOSITORY / "docs" / "screenshots"
TEST_SCREENSHOTS = REPOSITORY / "tests" / "screenshots"
INDEX = "export default function main() {\n  return { tools: [] };\n}\n"
REJECTION = "The description promises offline use, but index.js calls a remote service."


@dataclass(frozen=True)
class PortalSeed:
    rejected_id: str
    rolling_id: str
    rolling_version_id: str
    member_email: str


@pytest.fixture(scope="session")
def portal_seed(console_market: Market) -> PortalSeed:
    market = console_market
    developer = {"Authorization": f"Bearer {market.developer_token}"}
    rejected = _publish(market, "portal-rejected", "Portal Rejected")
    _upload(market, rejected, "portal-rejected", "1.0.0", {"index.js": INDEX}, [], "First")
    market.request(
        "POST",
        f"/api/v1/admin/plugins/{rejected}/review",
        json={"approved": False, "reviewNote": REJECTION},
    )

    rolling = _publish(market, "portal-rolling", "Portal Rolling")
    _upload(market, rolling, "portal-rolling", "1.0.0", {"index.js": INDEX}, [], "First")
    _approve_plugin(market, rolling)
    version = _upload(market, rolling, "portal-rolling", "1.1.0", {"index.js": INDEX}, [], "Next")
    ok(
        httpx.put(
            f"{market.url}/api/v1/developer/plugins/{rolling}/versions/{version}/rollout",
            json={"percent": 10},
            headers=developer,
        )
    )
    market.request(
        "POST", f"/api/v1/admin/plugins/versions/{version}/review", json={"approved": True}
    )
    for n in range(4):  # today's installs and an uninstall, for the chart
        user = {"Authorization": f"Bearer {market.new_user(f'portal-user-{n}')}"}
        body = {"version": "1.0.0"}
        ok(
            httpx.post(f"{market.url}/api/v1/plugins/install/{rolling}", json=body, headers=user),
            201,
        )
        if n == 0:
            path = f"/api/v1/plugins/uninstall/{rolling}"
            ok(httpx.post(market.url + path, json=body, headers=user), 201)
    market.new_user("portal-member")
    return PortalSeed(rejected, rolling, version, "portal-member@example.com")


async def _log_in(page: Page) -> None:
    await page.goto("/portal")
    await expect(page).to_have_url("/portal/login?m=login&next=%2Fportal")
    await page.get_by_label("Email", exact=True).fill(DEVELOPER_EMAIL)
    await page.get_by_label("Password", exact=True).fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    await expect(page).to_have_url("/portal")


def _shot(name: str) -> str:
    for_docs = os.environ.get("MARKETPLACE_DOCS_SCREENSHOTS") == "1"
    folder = DOCS_SCREENSHOTS if for_docs else TEST_SCREENSHOTS
    folder.mkdir(exist_ok=True)
    return str(folder / name)


async def test_log_in_and_read_a_rejection_note(page: Page, portal_seed: PortalSeed) -> None:
    await _log_in(page)
    await expect(page.get_by_role("heading", name="Your plugins")).to_be_visible()
    row = page.locator("table.portal-plugins tbody tr").filter(has_text="portal-rejected")
    await expect(row).to_contain_text("rejected")
    await expect(row).to_contain_text(REJECTION)
    await page.screenshot(path=_shot("portal-plugins.png"), full_page=True)
    await row.get_by_role("link", name="Portal Rejected").click()
    await expect(page.locator("#review-note")).to_contain_text(REJECTION)
    await page.get_by_role("button", name="Log out").click()
    await expect(page.get_by_text("You have logged out.")).to_be_visible()


async def test_set_halt_and_resume_a_rollout(page: Page, portal_seed: PortalSeed) -> None:
    await _log_in(page)
    await page.goto(f"/portal/plugins/{portal_seed.rolling_id}")
    card = page.locator(f"#rollout-{portal_seed.rolling_version_id}")
    await expect(card).to_contain_text("10% of installs")
    await card.get_by_label("Percent of installs").fill("40")
    await card.get_by_role("button", name="Set rollout").click()
    await expect(page.get_by_text("Rollout changed.")).to_be_visible()
    await expect(card).to_contain_text("40% of installs")
    await page.screenshot(path=_shot("portal-plugin.png"), full_page=True)

    await card.get_by_label("Reason").fill("Crash reports from 1.1.0 on start")
    await card.get_by_role("button", name="Halt rollout").click()
    await expect(page.get_by_text("Rollout halted")).to_be_visible()
    await expect(card).to_contain_text("Crash reports from 1.1.0 on start")
    await card.get_by_role("button", name="Resume rollout").click()
    await expect(page.get_by_text("Rollout resumed.")).to_be_visible()
    await expect(card).to_contain_text("rolling")


async def test_create_a_token_and_see_it_once(page: Page, portal_seed: PortalSeed) -> None:
    await _log_in(page)
    await page.get_by_role("link", name="Tokens").click()
    await page.get_by_label("Name", exact=True).fill("CI on main")
    await page.get_by_role("button", name="New token").click()
    shown = page.locator("#token-value")
    await expect(shown).to_contain_text("mkt_pat_")
    token = await shown.inner_text()
    await page.screenshot(path=_shot("portal-tokens.png"), full_page=True)
    await page.goto("/portal/tokens")
    await expect(page.locator("#token-value")).to_have_count(0)
    await expect(page.locator("body")).not_to_contain_text(token)
    row = page.locator("#tokens tbody tr").filter(has_text="CI on main")
    await row.get_by_role("button", name="Revoke").click()
    await expect(row).to_contain_text("revoked")


async def test_add_and_remove_a_member(page: Page, portal_seed: PortalSeed) -> None:
    await _log_in(page)
    await page.get_by_role("link", name="Organizations").click()
    await page.get_by_label("Slug").fill("portal-team")
    await page.get_by_label("Name").fill("Portal Team")
    await page.get_by_role("button", name="Create organization").click()
    await expect(page).to_have_url("/portal/orgs/portal-team?done=created")
    await page.get_by_label("Email").fill(portal_seed.member_email)
    await page.get_by_role("button", name="Add member").click()
    await expect(page.get_by_text("Member added.")).to_be_visible()
    members = page.locator("#members tbody tr")
    await expect(members).to_have_count(2)
    await page.screenshot(path=_shot("portal-organization.png"), full_page=True)
    await page.get_by_role("button", name=f"Remove {portal_seed.member_email}").click()
    await expect(page.get_by_text("Member removed")).to_be_visible()
    await expect(members).to_have_count(1)


async def test_open_a_public_page_from_the_landing_pages_search(
    page: Page, portal_seed: PortalSeed
) -> None:
    await page.goto("/")
    await expect(page.get_by_role("link", name="Publisher portal", exact=True)).to_be_visible()
    await page.get_by_label("Search plugins").fill("portal rolling")
    await page.get_by_role("button", name="Search").click()
    await expect(page).to_have_url("/?q=portal+rolling&category=&type=")
    await page.screenshot(path=_shot("public-landing.png"), full_page=True)
    await page.get_by_role("link", name="Portal Rolling").first.click()
    await expect(page).to_have_url("/plugins/portal-rolling")
    await expect(page.get_by_role("heading", name="Portal Rolling")).to_be_visible()
    await expect(page.locator("#install")).to_contain_text("marketplace install portal-rolling")
    await page.screenshot(path=_shot("public-plugin.png"), full_page=True)
