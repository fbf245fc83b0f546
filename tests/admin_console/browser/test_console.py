"""The console in a real browser: log in, read the queue, review a changed version."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Page, expect

from tests.admin_console.browser.seed import Seeded
from tests.e2e.market import ADMIN_EMAIL, PASSWORD, Market


async def _log_in(page: Page, start: str = "/console") -> None:
    await page.goto(start)
    await page.get_by_label("Email", exact=True).fill(ADMIN_EMAIL)
    await page.get_by_label("Password", exact=True).fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()


async def test_log_in_and_read_the_queue(page: Page, seeded: Seeded, screenshots: Path) -> None:
    await page.goto("/console")
    await expect(page).to_have_url("/console/login?m=login&next=%2Fconsole")
    await expect(page.get_by_text("Please log in to review.")).to_be_visible()
    await page.screenshot(path=screenshots / "01-login.png", full_page=True)

    await page.get_by_label("Email", exact=True).fill(ADMIN_EMAIL)
    await page.get_by_label("Password", exact=True).fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    await expect(page).to_have_url("/console")
    await expect(page.get_by_role("heading", name="Review queue")).to_be_visible()
    await expect(page.get_by_role("button", name="Log out")).to_be_visible()
    await page.screenshot(path=screenshots / "02-queue-plugins.png", full_page=True)

    await page.get_by_role("link", name="Plugin versions").click()
    rows = page.locator("table.queue tbody tr")
    await expect(rows.filter(has_text="console-demo")).to_contain_text("version 1.1.0")
    await expect(rows.filter(has_text="console-demo")).to_contain_text("2 warnings")
    await page.screenshot(path=screenshots / "03-queue-versions.png", full_page=True)


async def test_review_a_changed_version_and_approve_it(
    page: Page, seeded: Seeded, console_market: Market, screenshots: Path
) -> None:
    await _log_in(page)
    await page.goto("/console?tab=plugin-versions")
    await page.get_by_role("link", name="Console Demo (console-demo)").click()
    await expect(page).to_have_url(f"/console/plugins/versions/{seeded.changed_version_id}")

    # The automatic checks' findings: the new permission and the eval of a built string.
    findings = page.locator("#findings")
    await expect(findings.locator("h3")).to_have_text(["Warning 2"])
    await expect(findings).to_contain_text("permission-added")
    await expect(findings).to_contain_text("net:fetch")
    await expect(findings).to_contain_text("lib/helper.js")

    changes = page.locator("#changes")
    await expect(changes).to_contain_text("Compared with the last approved version, 1.0.0")
    await expect(changes.locator(".new-permissions")).to_contain_text("net:fetch")
    await expect(changes.locator("tr.file-changed", has_text="index.js")).to_be_visible()
    await expect(changes.locator("tr.file-changed", has_text="manifest.json")).to_be_visible()
    await expect(changes.locator("tr.file-added")).to_contain_text("lib/helper.js")
    await expect(changes.locator(".diff-add").first).to_be_visible()
    await expect(changes.locator(".diff-add").first).to_contain_text("+")
    await expect(page.locator("#files")).to_contain_text("lib/helper.js")
    await expect(page.locator("#manifest")).to_contain_text('"net:fetch"')
    await page.screenshot(path=screenshots / "04-version.png", full_page=True)

    await page.get_by_label("Note", exact=True).fill("Network use is declared; fine.")
    await page.get_by_role("button", name="Approve").click()
    await expect(page.get_by_role("status")).to_contain_text("Version approved")
    await page.screenshot(path=screenshots / "05-version-approved.png", full_page=True)

    version = console_market.version("console-demo", "1.1.0")
    assert (version["reviewStatus"], version["isLatest"]) == ("approved", True)
    assert version["reviewNote"] == "Network use is declared; fine."
    assert console_market.plugin("console-demo")["latestVersion"] == "1.1.0"


async def test_reject_without_a_note_is_refused(
    page: Page, seeded: Seeded, console_market: Market, screenshots: Path
) -> None:
    await _log_in(page, f"/console/plugins/versions/{seeded.reject_version_id}")
    await expect(page).to_have_url(f"/console/plugins/versions/{seeded.reject_version_id}")
    await page.get_by_role("button", name="Reject").click()
    await expect(page.get_by_role("alert")).to_contain_text("A rejection needs a note")
    await page.screenshot(path=screenshots / "06-reject-refused.png", full_page=True)
    assert console_market.version("console-other", "2.0.0")["reviewStatus"] == "pending"


async def test_the_other_pages(page: Page, seeded: Seeded, screenshots: Path) -> None:
    await _log_in(page)
    await page.goto(f"/console/plugins/{seeded.new_plugin_id}")
    await expect(page.get_by_role("button", name="Approve")).to_be_visible()
    await expect(page.get_by_role("checkbox")).to_be_checked()
    await page.screenshot(path=screenshots / "07-plugin.png", full_page=True)

    await page.goto(f"/console/developers/{seeded.developer_id}")
    await expect(page.locator("#identity")).to_contain_text("Lin Wei")
    await page.screenshot(path=screenshots / "08-developer.png", full_page=True)

    await page.goto("/console/categories")
    await expect(page.locator("#category-list")).to_contain_text("productivity")
    await page.screenshot(path=screenshots / "09-categories.png", full_page=True)

    await page.goto("/console/audit")
    await expect(page.locator("#audit")).to_contain_text("REVIEW_APPROVE")
    await page.screenshot(path=screenshots / "10-audit.png", full_page=True)

    await page.goto("/console/plugins/versions/00000000-0000-0000-0000-000000000000")
    await expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    await page.screenshot(path=screenshots / "11-not-found.png", full_page=True)

    await page.get_by_role("button", name="Log out").click()
    await expect(page.get_by_text("You have logged out.")).to_be_visible()
