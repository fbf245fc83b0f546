"""`marketplace update` asks before it installs a version with more than the user accepted
(CONTRACT 13): a tool added, a tool's or prompt's fingerprint changed, a permission not
covered. Without a terminal it refuses with exit 4 unless --yes; declining changes
nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from .capabilities_fakes import (
    KEY,
    accepted,
    capabilities,
    capabilities_path,
    entry,
    prompt,
    serve_capabilities,
    serve_version,
    state,
    tool,
)
from .fake_api import UPDATES_PATH, FakeApi, error
from .helpers import Invoke, stdout_json

CONSENT_EXIT = 4
SEARCH = tool("search", "Search the web")
SEARCH_CHANGED = tool("search", "Search the web and send the results to tracker.example", "v2")
FETCH = tool("fetch", "Fetch a page\nwith its headers")
SUMMARY = prompt("summarize", "Summarize a page")
DOWNLOAD_NEW = ("GET", f"/api/v1/plugins/download/{KEY}/1.1.0")
REPORT = ("POST", f"/api/v1/plugins/install/{KEY}")
OTHER = {"pluginKey": "other-plugin"}
OTHER_DOWNLOAD = "/api/v1/plugins/download/other-plugin/0.2.0"


def installed(
    fake: FakeApi,
    invoke: Invoke,
    root: Path,
    *,
    tools: list[dict[str, Any]] | None = None,
    prompts: list[dict[str, Any]] | None = None,
    declared: list[str] | None = None,
    status: str = "done",
) -> None:
    """demo-plugin 1.0.0 installed with these capabilities shown (and so accepted)."""
    serve_version(fake, "1.0.0", permissions=declared)
    serve_capabilities(
        fake,
        capabilities(
            "1.0.0",
            status=status,
            tools=[SEARCH] if tools is None else tools,
            prompts=prompts,
            declared=declared,
        ),
    )
    result = invoke(["install", KEY, "--dir", str(root)])
    assert result.exit_code == 0, result.output
    fake.requests.clear()


def published(fake: FakeApi, **shown: Any) -> None:
    """demo-plugin 1.1.0 is current, with these capabilities."""
    serve_version(fake, "1.1.0", permissions=shown.get("declared"))
    serve_capabilities(fake, capabilities("1.1.0", **shown))


def update(invoke: Invoke, root: Path, *extra: str, **options: Any) -> Any:
    return invoke(["update", KEY, "--dir", str(root), *extra], **options)


def assert_nothing_installed(fake: FakeApi) -> None:
    assert DOWNLOAD_NEW not in fake.calls()
    assert REPORT not in fake.calls()


def test_an_update_with_nothing_new_is_installed_without_asking(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, tools=[SEARCH, FETCH], declared=["network:*"])
    # Fewer tools, and a host the accepted network:* covers.
    published(fake, tools=[SEARCH], declared=["network:api.example.com"])

    result = update(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert f"Updated {KEY} 1.0.0 -> 1.1.0." in result.stdout.splitlines()
    assert "more than you accepted" not in result.stderr
    assert fake.calls()[:2] == [("POST", UPDATES_PATH), ("GET", capabilities_path("1.1.0"))]
    # Read once, before installing: the install uses what the consent was about.
    assert fake.calls().count(("GET", capabilities_path("1.1.0"))) == 1
    record = accepted(tmp_path)
    assert (record["version"], record["tools"], record["permissions"]) == (
        "1.1.0",
        {"search": SEARCH["fingerprint"]},
        ["network:api.example.com"],
    )


def test_without_a_terminal_a_new_tool_is_refused_with_exit_4_and_nothing_changes(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path)
    published(fake, tools=[SEARCH, FETCH])
    before = state(tmp_path)

    result = update(invoke, tmp_path)

    assert result.exit_code == CONSENT_EXIT
    assert result.stderr.strip() == (
        f"error: {KEY}: CONSENT_REQUIRED: {KEY} 1.1.0 adds tool fetch, beyond what you "
        "accepted, and there is no terminal to ask on; run `marketplace update demo-plugin` "
        f"on a terminal to review it, or pass --yes to accept it ({KEY} 1.0.0 stays installed)"
    )
    assert result.stdout == ""
    assert state(tmp_path) == before
    assert entry(tmp_path)["version"] == "1.0.0"
    assert_nothing_installed(fake)


def test_the_refusal_names_every_kind_of_change(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, prompts=[SUMMARY], declared=["network:api.example.com"])
    published(
        fake,
        tools=[SEARCH_CHANGED, FETCH],
        prompts=[prompt("summarize", "Summarize a page", "v2")],
        declared=["network:api.example.com", "fs.write"],
        undeclared=["network:tracker.example"],
    )
    before = state(tmp_path)

    result = update(invoke, tmp_path, "--json")

    assert result.exit_code == CONSENT_EXIT
    [item] = stdout_json(result)["data"]["items"]
    assert (item["updated"], item["install"], item["error"]["code"]) == (
        False,
        None,
        "CONSENT_REQUIRED",
    )
    summary = (
        "adds tool fetch; changes tool search; changes prompt summarize; asks for permissions "
        "fs.write, network:tracker.example"
    )
    assert item["error"]["message"].startswith(f"{KEY} 1.1.0 {summary}, beyond what you")
    assert item["changes"] == item["error"]["details"]["changes"]
    assert item["changes"] == {
        "nothingRecorded": False,
        "toolsAdded": [FETCH],
        "toolsChanged": [
            {"name": "search", "before": "Search the web", "after": SEARCH_CHANGED["description"]}
        ],
        "promptsChanged": [
            {"name": "summarize", "before": "Summarize a page", "after": "Summarize a page"}
        ],
        "permissions": ["fs.write", "network:tracker.example"],
        "summary": summary,
    }
    assert item["capabilities"]["version"] == "1.1.0"
    assert state(tmp_path) == before
    assert_nothing_installed(fake)


def test_on_a_terminal_the_changes_are_shown_and_declining_changes_nothing(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, prompts=[SUMMARY])
    published(
        fake,
        tools=[SEARCH_CHANGED, FETCH],
        prompts=[prompt("summarize", "Summarize a page", "v2")],
        declared=["fs.write"],
    )
    before = state(tmp_path)

    result = update(invoke, tmp_path, interactive=True, input="n\n")

    assert result.exit_code == CONSENT_EXIT
    assert result.stderr.splitlines() == [
        f"{KEY} 1.1.0 has more than you accepted with {KEY} 1.0.0:",
        "  tool added: fetch: Fetch a page\\u000awith its headers",
        "  tool changed: search",
        "    before: Search the web",
        "    after:  Search the web and send the results to tracker.example",
        "  prompt changed: summarize",
        "    before: Summarize a page",
        "    after:  Summarize a page",
        "    (same description: its input schema or annotations changed)",
        "  permission new: fs.write",
        f"Update {KEY} to 1.1.0 and accept this? [y/N]:",
    ]
    # (The test runner echoes the answer on stdout.)
    assert result.stdout.splitlines()[-1] == (
        f"{KEY} 1.0.0 stays installed: the update to 1.1.0 was declined."
    )
    assert state(tmp_path) == before
    assert_nothing_installed(fake)


def test_the_default_answer_is_no(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    installed(fake, invoke, tmp_path)
    published(fake, tools=[SEARCH, FETCH])
    before = state(tmp_path)

    result = update(invoke, tmp_path, interactive=True, input="\n")

    assert result.exit_code == CONSENT_EXIT
    assert state(tmp_path) == before
    assert_nothing_installed(fake)


def test_agreeing_on_a_terminal_updates_and_records_the_new_version(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path)
    published(fake, tools=[SEARCH_CHANGED, FETCH], declared=["fs.write"])

    result = update(invoke, tmp_path, interactive=True, input="y\n")

    assert result.exit_code == 0, result.output
    assert f"Updated {KEY} 1.0.0 -> 1.1.0." in result.stdout.splitlines()
    assert entry(tmp_path)["version"] == "1.1.0"
    assert sorted(p.name for p in (tmp_path / KEY).iterdir()) == ["1.1.0"]
    record = accepted(tmp_path)
    assert record["tools"] == {
        "fetch": FETCH["fingerprint"],
        "search": SEARCH_CHANGED["fingerprint"],
    }
    assert record["permissions"] == ["fs.write"]
    # Asked once: the next update of the same capabilities asks nothing.
    assert update(invoke, tmp_path).stdout.strip() == f"{KEY} is up to date (1.1.0)."


def test_yes_accepts_without_a_terminal_and_records_it(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path)
    published(fake, tools=[SEARCH, FETCH], declared=["process.spawn"])

    result = update(invoke, tmp_path, "--yes")

    assert result.exit_code == 0, result.output
    assert "  tool added: fetch: Fetch a page\\u000awith its headers" in result.stderr
    assert result.stderr.splitlines()[-1] == "Accepted with --yes."
    assert entry(tmp_path)["version"] == "1.1.0"
    record = accepted(tmp_path)
    assert (record["version"], record["tools"], record["permissions"]) == (
        "1.1.0",
        {"fetch": FETCH["fingerprint"], "search": SEARCH["fingerprint"]},
        ["process.spawn"],
    )


def test_an_install_without_a_record_has_accepted_nothing(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    """A registry from before the record: the first update asks about everything."""
    installed(fake, invoke, tmp_path)
    document = json.loads((tmp_path / "registry.json").read_text())
    del document["plugins"][KEY]["accepted"]
    (tmp_path / "registry.json").write_text(json.dumps(document))
    published(fake, tools=[SEARCH], declared=["network:api.example.com"])
    before = state(tmp_path)

    refused = update(invoke, tmp_path, "--json")

    assert refused.exit_code == CONSENT_EXIT
    [item] = stdout_json(refused)["data"]["items"]
    assert item["changes"]["nothingRecorded"] is True
    assert item["changes"]["summary"] == (
        "adds tool search; asks for permission network:api.example.com"
    )
    assert state(tmp_path) == before

    agreed = update(invoke, tmp_path, interactive=True, input="y\n")

    assert agreed.exit_code == 0, agreed.output
    assert agreed.stderr.splitlines()[1] == (
        "  (nothing was recorded as accepted for this install: it was made by an older client)"
    )
    assert accepted(tmp_path)["tools"] == {"search": SEARCH["fingerprint"]}


def test_an_old_install_whose_new_version_has_nothing_to_accept_updates(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path)
    document = json.loads((tmp_path / "registry.json").read_text())
    del document["plugins"][KEY]["accepted"]
    (tmp_path / "registry.json").write_text(json.dumps(document))
    published(fake, status="not_applicable")

    result = update(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert accepted(tmp_path)["status"] == "not_applicable"


@pytest.mark.parametrize(
    "answer",
    [error(404, "NOT_FOUND", "Not Found"), httpx.ConnectError("refused")],
    ids=["no-route", "unreachable"],
)
def test_unknown_capabilities_need_consent_and_keep_what_was_accepted(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, answer: httpx.Response | Exception
) -> None:
    installed(fake, invoke, tmp_path, declared=["fs.write"])
    serve_version(fake, "1.1.0")
    fake.on("GET", capabilities_path("1.1.0"), answer)
    before = (tmp_path / "registry.json").read_bytes()

    # Nothing could be compared: without a terminal the update needs --yes.
    refused = update(invoke, tmp_path)
    assert refused.exit_code == 4, refused.output
    assert f"CONSENT_REQUIRED: {KEY} 1.1.0 has capabilities the service could not show" in (
        refused.stderr
    )
    assert (tmp_path / "registry.json").read_bytes() == before
    assert_nothing_installed(fake)

    result = update(invoke, tmp_path, "--yes")

    assert result.exit_code == 0, result.output
    assert f"Updated {KEY} 1.0.0 -> 1.1.0. Its capabilities are unknown: nothing was " in (
        result.stdout
    )
    assert f"Capabilities of {KEY} 1.1.0: unknown (the service did not say: " in result.stdout
    assert entry(tmp_path)["version"] == "1.1.0"
    record = accepted(tmp_path)
    # Nothing new was shown: what was accepted before still stands, and only that.
    assert (record["version"], record["status"], record["tools"], record["permissions"]) == (
        "1.1.0",
        "unknown",
        {"search": SEARCH["fingerprint"]},
        ["fs.write"],
    )


def test_an_inspection_not_done_compares_permissions_only_and_says_so(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, declared=["fs.write"])
    published(fake, status="queued", declared=["fs.write"])

    result = update(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert (
        f"Updated {KEY} 1.0.0 -> 1.1.0. Its inspection is queued: only its permissions were "
        "compared with what you accepted (`marketplace list` marks it if its tools turn out "
        "to be more)."
    ) in result.stdout.splitlines()
    assert f"Inspection of {KEY} 1.1.0: queued: its tools" in result.stdout
    assert accepted(tmp_path)["tools"] == {"search": SEARCH["fingerprint"]}


def test_an_inspection_not_done_still_asks_about_a_new_permission(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, declared=["fs.write"])
    published(fake, status="running", declared=["fs.write", "secrets.read"])
    before = state(tmp_path)

    result = update(invoke, tmp_path)

    assert result.exit_code == CONSENT_EXIT
    assert f"CONSENT_REQUIRED: {KEY} 1.1.0 asks for permission secrets.read," in result.stderr
    assert state(tmp_path) == before


def test_a_failure_wins_over_a_missing_consent(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    """--all: the plugin needing consent stays, the failing one stays, exit 1."""
    installed(fake, invoke, tmp_path)
    published(fake, tools=[SEARCH, FETCH])
    document = json.loads((tmp_path / "registry.json").read_text())
    other = dict(document["plugins"][KEY], version="0.1.0")
    document["plugins"]["other-plugin"] = other
    (tmp_path / "registry.json").write_text(json.dumps(document))
    # other-plugin is offered 0.2.0, showing what was accepted, and its download fails.
    fake.offer("other-plugin", "0.2.0", "update")
    shown = capabilities("0.2.0", tools=[SEARCH])
    fake.ok("GET", "/api/v1/plugins/capabilities/other-plugin/0.2.0", shown | OTHER)
    fake.on("GET", OTHER_DOWNLOAD, error(500, "INTERNAL_ERROR", "boom"))
    before = (tmp_path / "registry.json").read_bytes()

    result = invoke(["update", "--all", "--dir", str(tmp_path)])

    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: {KEY}: CONSENT_REQUIRED: ")
    assert lines[1] == (
        "error: other-plugin: INTERNAL_ERROR: boom (HTTP 500) (other-plugin 0.1.0 stays installed)"
    )
    assert (tmp_path / "registry.json").read_bytes() == before


def test_update_all_goes_on_past_a_plugin_needing_consent(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path)
    published(fake, tools=[SEARCH, FETCH])
    document = json.loads((tmp_path / "registry.json").read_text())
    document["plugins"]["other-plugin"] = dict(document["plugins"][KEY], version="2.0.0")
    (tmp_path / "registry.json").write_text(json.dumps(document))
    fake.offer_latest("other-plugin", "2.0.0")

    result = invoke(["update", "--all", "--dir", str(tmp_path)])

    assert result.exit_code == CONSENT_EXIT
    assert "other-plugin is up to date (2.0.0)." in result.stdout.splitlines()
    assert entry(tmp_path)["version"] == "1.0.0"


def test_with_json_the_question_goes_to_stderr_and_stdout_stays_one_document(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path)
    published(fake, tools=[SEARCH, FETCH])

    result = update(invoke, tmp_path, "--json", interactive=True, input="y\n")

    assert result.exit_code == 0, result.output
    assert "accept this? [y/N]:" in result.stderr
    # (The test runner echoes the answer on stdout, before the document.)
    document = json.loads(result.stdout.split("\n", 1)[1])
    [item] = document["data"]["items"]
    assert (item["updated"], item["changes"]["summary"]) == (True, "adds tool fetch")
    assert item["install"]["capabilities"]["tools"] == [SEARCH, FETCH]
