"""`marketplace search`, `info` and `status` against a live server (CONTRACT 18), and the
errors that name the thing and the next step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.market import Market, write_plugin
from tests.e2e.server import free_port

pytestmark = pytest.mark.e2e

KEY = "discover-sky"


def data_of(result: Any) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["data"]


def public(market: Market, *args: str) -> Any:
    """No token and no stored login: the public commands need none."""
    return market.cli(*args, "--backend", market.url)


@pytest.fixture(scope="module")
def published(market: Market, tmp_path_factory: pytest.TempPathFactory) -> str:
    """KEY approved at 1.0.0 (listed), with 1.1.0 waiting for review."""
    work = tmp_path_factory.mktemp("discover")
    first = write_plugin(work / "v1", KEY, name="Discover Sky", tags=["clouds"])
    assert market.as_developer("publish", str(first)).returncode == 0
    approved = market.as_admin("review", "approve-plugin", KEY, "--note", "Welcome")
    assert approved.returncode == 0, approved.stderr
    second = write_plugin(work / "v2", KEY, name="Discover Sky", version="1.1.0")
    assert market.as_developer("publish", str(second)).returncode == 0
    return KEY


def test_search_finds_the_listed_plugin_without_a_login(market: Market, published: str) -> None:
    result = public(market, "search", "discover-s")
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["PLUGIN", "NAME", "VERSION", "RATING", "DOWNLOADS"]
    assert [row.split()[0] for row in rows] == [published]
    assert rows[0].split()[-3:] == ["1.0.0", "-", "0"]
    assert data_of(public(market, "search", "clouds", "--type", "tool", "--json"))["total"] == 1

    nothing = public(market, "search", "discover-nothing-like-it")
    assert nothing.returncode == 0
    assert nothing.stdout.strip() == (
        f'No plugin matches "discover-nothing-like-it" on {market.url}.'
    )


def test_info_prints_detail_versions_and_tools(market: Market, published: str) -> None:
    result = public(market, "info", published)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"{published}: Discover Sky"
    assert "Current:    1.0.0" in lines
    assert "Developer:  Dev" in lines
    assert "Versions: 1" in lines  # 1.1.0 is not approved: not public
    assert any(line.startswith("  1.0.0") and "current" in line for line in lines)
    assert any(line.startswith("Tools: ") for line in lines)
    assert lines[-1] == f"Install: marketplace install {published}"


def test_status_shows_the_review_state_of_each_version(market: Market, published: str) -> None:
    one = market.as_developer("status", published)
    assert one.returncode == 0, one.stderr
    lines = one.stdout.splitlines()
    assert lines[0] == f"{published} (Discover Sky): approved, listed, current version 1.0.0"
    assert lines[1] == "Reviewer's note: Welcome"
    assert [line.split()[:2] for line in lines[3:]] == [["1.1.0", "pending"], ["1.0.0", "approved"]]

    listing = data_of(market.as_developer("status", "--json"))
    [mine] = [item for item in listing["items"] if item["pluginKey"] == published]
    assert mine["reviewStatus"] == "approved" and mine["listed"] is True
    assert [v["reviewStatus"] for v in mine["versions"]] == ["pending", "approved"]


def test_errors_name_the_plugin_and_the_next_step(market: Market, published: str) -> None:
    missing = public(market, "info", "discover-weathr")
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        'error: PLUGIN_NOT_FOUND: no plugin "discover-weathr"; look for it with `marketplace '
        "search discover-weathr` (HTTP 404)"
    )

    refused = market.as_developer("review", "list")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: FORBIDDEN: ")
    assert "ADMIN" in refused.stderr
    assert "log in as an administrator (`marketplace login`)" in refused.stderr

    gone = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    offline = market.cli("search", "sky", "--backend", gone)
    assert offline.returncode == 1
    assert f"is the service running at {gone}? Start it with `marketplace serve`" in (
        offline.stderr
    )

    folder = market.client_env()["MARKETPLACE_PLUGINS_DIR"]
    absent = market.cli("uninstall", published)
    assert absent.returncode == 1
    assert absent.stderr.strip() == (
        f"error: NOT_INSTALLED: {published} is not installed in {Path(folder).resolve()} "
        "(MARKETPLACE_PLUGINS_DIR); pass --dir with the folder it was installed in, or "
        "change MARKETPLACE_PLUGINS_DIR"
    )
