"""`marketplace review` against a recording fake service: which calls it makes, what it
prints, and how it refuses (exit 2 for a rejection without a note, 1 for service errors)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from marketplace_client import review_view
from marketplace_client.review_view import columns, format_age, format_size

from .fake_api import FakeApi, envelope, error
from .helpers import Invoke, stdout_json

ADMIN = "/api/v1/admin"
PLUGINS = f"{ADMIN}/plugins"
PLUGIN_QUEUE = f"{ADMIN}/plugins/versions/pending"
SCENARIO_QUEUE = f"{ADMIN}/scenarios/versions/pending"
DEVELOPERS = f"{ADMIN}/developers"
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
VID = "11111111-1111-4111-8111-111111111111"


@pytest.fixture(autouse=True)
def frozen_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(review_view, "utcnow", lambda: NOW)
    monkeypatch.setattr("marketplace_client.review.utcnow", lambda: NOW)


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).isoformat().replace("+00:00", "Z")


def page(items: list[dict[str, Any]], total: int | None = None) -> dict[str, Any]:
    return {"items": items, "total": len(items) if total is None else total, "page": 1}


def plugin_item(key: str, created: str, owner: str = "dev-1") -> dict[str, Any]:
    return {"id": f"p-{key}", "pluginKey": key, "name": key.title(), "createdAt": created,
            "ownerId": owner, "reviewStatus": "pending", "enabled": False}  # fmt: skip


def plugin_version(vid: str, key: str, version: str, created: str, **extra: Any) -> dict[str, Any]:
    return {"id": vid, "pluginId": f"p-{key}", "pluginKey": key, "pluginName": key.title(),
            "version": version, "createdAt": created, **extra}  # fmt: skip


def scenario_version(
    vid: str, sid: str, version: str, created: str, **extra: Any
) -> dict[str, Any]:
    return {"id": vid, "scenarioId": sid, "scenarioName": sid.title(), "name": sid,
            "version": version, "createdAt": created, **extra}  # fmt: skip


def serve_queue(fake: FakeApi) -> None:
    fake.ok("GET", PLUGINS, page([plugin_item("weather", ago(hours=5))]))
    finding = {"code": "SECRET", "severity": "warning", "path": "a.js", "message": "key?"}
    fake.ok(
        "GET",
        PLUGIN_QUEUE,
        page(
            [
                plugin_version("v-new", "maps", "2.0.0", ago(minutes=3), findings=[finding]),
                plugin_version("v-old", "weather", "1.0.0", ago(days=2, hours=3)),
            ]
        ),
    )
    fake.ok("GET", SCENARIO_QUEUE, page([scenario_version("s-1", "triage", "1.1.0", ago(hours=1))]))
    fake.ok("GET", f"{PLUGINS}/p-weather", plugin_item("weather", ago(days=9)))
    fake.ok("GET", f"{PLUGINS}/p-maps", plugin_item("maps", ago(days=9), owner="dev-2"))
    fake.ok("GET", f"{ADMIN}/scenarios/triage", {"id": "triage", "ownerId": "dev-2"})
    fake.ok(
        "GET",
        DEVELOPERS,
        page(
            [
                {"id": "dev-1", "displayName": "Ada"},
                {"id": "dev-2", "name": "Bo", "displayName": None},
            ]
        ),
    )


def test_list_merges_the_three_queues_oldest_first_with_age_developer_and_findings(
    fake: FakeApi, invoke: Invoke
) -> None:
    serve_queue(fake)
    result = invoke(["review", "list"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "AGE    TYPE              ID         ITEM     VERSION  DEVELOPER  FINDINGS",
        "2d 3h  plugin-version    v-old      weather  1.0.0    Ada        0",
        "5h 0m  plugin            p-weather  weather  -        Ada        -",
        "1h 0m  scenario-version  s-1        triage   1.1.0    Bo         0",
        "3m     plugin-version    v-new      maps     2.0.0    Bo         1",
    ]
    assert "4 waiting; page 1 of 1" in result.stderr
    assert fake.find("GET", PLUGINS).params == {
        "reviewStatus": "pending",
        "page": "1",
        "limit": "100",
    }
    # One owner lookup per item, not per row.
    assert fake.calls().count(("GET", f"{PLUGINS}/p-weather")) == 1


def test_list_json_has_every_field_and_passes_the_search_on(fake: FakeApi, invoke: Invoke) -> None:
    serve_queue(fake)
    result = invoke(["review", "list", "--json", "--search", "wea"])
    assert result.exit_code == 0, result.output
    data = stdout_json(result)["data"]
    assert (data["total"], data["page"], data["pageSize"]) == (4, 1, 50)
    assert data["items"][0] == {
        "type": "plugin-version",
        "id": "v-old",
        "key": "weather",
        "name": "Weather",
        "version": "1.0.0",
        "createdAt": ago(days=2, hours=3),
        "ageSeconds": 2 * 86400 + 3 * 3600,
        "developer": {"id": "dev-1", "name": "Ada"},
        "findings": 0,
    }
    for path in (PLUGINS, PLUGIN_QUEUE, SCENARIO_QUEUE):
        assert fake.find("GET", path).params["search"] == "wea"


def test_list_of_one_kind_asks_only_its_queue(fake: FakeApi, invoke: Invoke) -> None:
    serve_queue(fake)
    result = invoke(["review", "list", "--kind", "scenarios", "--json"])
    assert result.exit_code == 0, result.output
    assert [i["id"] for i in stdout_json(result)["data"]["items"]] == ["s-1"]
    assert ("GET", PLUGIN_QUEUE) not in fake.calls() and ("GET", PLUGINS) not in fake.calls()


def test_list_reads_every_page_of_the_service_then_pages_by_50(
    fake: FakeApi, invoke: Invoke
) -> None:
    versions = [
        plugin_version(f"v-{i:03}", "bulk", f"1.0.{i}", ago(minutes=200 - i)) for i in range(120)
    ]
    fake.ok("GET", PLUGINS, page([]))
    fake.on(
        "GET",
        PLUGIN_QUEUE,
        envelope(page(versions[:100], total=120)),
        envelope(page(versions[100:], total=120)),
    )
    fake.ok("GET", SCENARIO_QUEUE, page([]))
    fake.ok("GET", f"{PLUGINS}/p-bulk", plugin_item("bulk", ago(days=1)))
    fake.ok("GET", DEVELOPERS, page([]))
    result = invoke(["review", "list", "--json", "--page", "3"])
    assert result.exit_code == 0, result.output
    data = stdout_json(result)["data"]
    assert data["total"] == 120
    assert [i["id"] for i in data["items"]] == [f"v-{i:03}" for i in range(100, 120)]
    assert [r.params["page"] for r in fake.requests if r.path == PLUGIN_QUEUE] == ["1", "2"]
    # The developer list does not know the owner: the id stands in for the name.
    assert data["items"][0]["developer"] == {"id": "dev-1", "name": "dev-1"}


def test_an_empty_queue_says_so(fake: FakeApi, invoke: Invoke) -> None:
    for path in (PLUGINS, PLUGIN_QUEUE, SCENARIO_QUEUE, DEVELOPERS):
        fake.ok("GET", path, page([]))
    result = invoke(["review", "list"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "Nothing waits for review."
    # Only the identity queue asked for developers: no name lookups for an empty page.
    assert [r.params.get("identityStatus") for r in fake.requests if r.path == DEVELOPERS] == [
        "pending"
    ]


def test_list_includes_identities_waiting_since_they_were_submitted(
    fake: FakeApi, invoke: Invoke
) -> None:
    for path in (PLUGINS, PLUGIN_QUEUE, SCENARIO_QUEUE):
        fake.ok("GET", path, page([]))
    waiting = {"id": "dev-9", "email": "lin@example.com", "realName": "Lin Wei",
               "displayName": "Lin", "identityStatus": "pending",
               "submittedAt": ago(hours=2), "createdAt": ago(days=30)}  # fmt: skip
    fake.ok("GET", DEVELOPERS, page([waiting]))
    result = invoke(["review", "list", "--kind", "identities", "--json"])
    assert result.exit_code == 0, result.output
    [item] = stdout_json(result)["data"]["items"]
    assert (item["type"], item["id"], item["key"], item["name"]) == (
        "identity", "dev-9", "lin@example.com", "Lin Wei"
    )  # fmt: skip
    assert item["ageSeconds"] == 2 * 3600
    assert item["developer"] == {"id": "dev-9", "name": "Lin"}
    assert ("GET", PLUGIN_QUEUE) not in fake.calls()


def test_list_as_a_developer_prints_the_service_refusal_without_a_traceback(
    fake: FakeApi, invoke: Invoke
) -> None:
    fake.on("GET", PLUGINS, error(403, "FORBIDDEN", "Administrator role required"))
    result = invoke(["review", "list"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: FORBIDDEN: Administrator role required; this needs")
    assert "Traceback" not in result.output


def test_without_a_token_nothing_is_sent(fake: FakeApi, invoke: Invoke) -> None:
    result = invoke(["review", "list", "--backend", "http://market.test"], auth=False)
    assert result.exit_code == 1
    assert "NOT_LOGGED_IN" in result.stderr
    assert fake.requests == []


VERSION = {
    "id": VID,
    "pluginId": "p-weather",
    "version": "1.1.0",
    "changelog": "faster\nsmaller",
    "manifest": {"id": "weather", "version": "1.1.0", "permissions": ["network"]},
    "sha256": "ab" * 32,
    "size": 2048,
    "distribution": "tarball",
    "isLatest": False,
    "reviewStatus": "pending",
    "reviewNote": None,
    "reviewedBy": None,
    "createdAt": ago(hours=2),
    "findings": [
        {"code": "SECRET_FOUND", "severity": "error", "path": "a.js", "message": "AWS key"}
    ],
}


def test_show_prints_the_version_its_developer_findings_and_manifest(
    fake: FakeApi, invoke: Invoke
) -> None:
    fake.ok("GET", f"{PLUGINS}/versions/{VID}", VERSION)
    fake.ok("GET", f"{PLUGINS}/p-weather", plugin_item("weather", ago(days=3)))
    fake.ok("GET", DEVELOPERS, page([{"id": "dev-1", "displayName": "Ada"}]))
    result = invoke(["review", "show", VID])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:7] == [
        "Plugin version 1.1.0 of weather (Weather)",
        f"  id:           {VID}",
        "  status:       pending",
        f"  created:      {ago(hours=2)}  (2h 0m ago)",
        "  developer:    Ada",
        "  distribution: tarball",
        f"  package:      2.0 KiB, sha256 {'ab' * 32}",
    ]
    assert "Findings (1):" in lines
    assert "  error   SECRET_FOUND  a.js: AWS key" in lines
    manifest = lines[lines.index("Manifest:") + 1 :]
    assert manifest[:3] == ["  {", '    "id": "weather",', '    "permissions": [']


def test_show_falls_back_to_scenarios_and_treats_missing_findings_as_none(
    fake: FakeApi, invoke: Invoke
) -> None:
    fake.on("GET", f"{PLUGINS}/versions/{VID}", error(404, "PLUGIN_VERSION_NOT_FOUND"))
    scenario = {"id": VID, "scenarioId": "triage", "version": "1.0.0", "name": "Triage",
                "type": "programmatic", "category": "development", "permissions": ["fs"],
                "reviewStatus": "pending", "isLatest": False, "sha256": None, "size": None,
                "createdAt": ago(minutes=5)}  # fmt: skip
    fake.ok("GET", f"{ADMIN}/scenarios/versions/{VID}", scenario)
    fake.ok("GET", f"{ADMIN}/scenarios/triage", {"id": "triage", "name": "Triage", "ownerId": "d"})
    fake.ok("GET", DEVELOPERS, page([]))
    result = invoke(["review", "show", VID, "--json"])
    assert result.exit_code == 0, result.output
    data = stdout_json(result)["data"]
    assert data["kind"] == "scenarios" and data["version"] == scenario
    assert data["developer"] == {"id": "d", "name": "d"}
    human = invoke(["review", "show", VID])
    assert "Scenario version 1.0.0 of triage (Triage)" in human.stdout
    assert "Findings: none" in human.stdout
    assert "  package:      none" in human.stdout


def test_an_id_of_neither_kind_is_one_not_found_error(fake: FakeApi, invoke: Invoke) -> None:
    fake.on("GET", f"{PLUGINS}/versions/{VID}", error(404, "PLUGIN_VERSION_NOT_FOUND"))
    fake.on("GET", f"{ADMIN}/scenarios/versions/{VID}", error(404, "SCENARIO_NOT_FOUND"))
    result = invoke(["review", "show", VID, "--json"])
    assert result.exit_code == 1
    assert stdout_json(result)["error"]["code"] == "VERSION_NOT_FOUND"
    assert VID in result.stderr


def test_a_refusal_other_than_not_found_is_not_retried_as_a_scenario(
    fake: FakeApi, invoke: Invoke
) -> None:
    fake.on("GET", f"{PLUGINS}/versions/{VID}", error(401, "UNAUTHORIZED", "Token expired"))
    result = invoke(["review", "show", VID])
    assert result.exit_code == 1
    assert (
        "UNAUTHORIZED: Token expired; run `marketplace login`, or pass a new token with "
        "--token or MARKETPLACE_TOKEN (HTTP 401)"
    ) in result.stderr
    assert fake.calls() == [("GET", f"{PLUGINS}/versions/{VID}")]


DIFF = {
    "base": {"id": "v-base", "version": "1.0.0"},
    "files": {
        "added": [{"path": "lib/new.js", "size": 2}],
        "removed": [{"path": "old.js", "size": 2048}],
        "changed": [{"path": "index.js", "sizeBefore": 10, "sizeAfter": 3 * 1024 * 1024}],
    },
    "manifest": {
        "added": {"homepage": "https://x.test"},
        "removed": {"legacy": True},
        "changed": {"version": {"before": "1.0.0", "after": "1.1.0"}},
    },
    "newPermissions": ["filesystem:write", "network"],
}


def test_diff_prints_files_manifest_keys_and_new_permissions(fake: FakeApi, invoke: Invoke) -> None:
    fake.ok("GET", f"{PLUGINS}/versions/{VID}/diff", DIFF)
    result = invoke(["review", "diff", VID])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "Against version 1.0.0 (v-base), the last approved",
        "Files: 1 added, 1 removed, 1 changed",
        "  + lib/new.js (2 B)",
        "  - old.js (2.0 KiB)",
        "  ~ index.js (10 B -> 3.0 MiB)",
        "Manifest: 1 added, 1 removed, 1 changed",
        '  + homepage: "https://x.test"',
        "  - legacy: true",
        '  ~ version: "1.0.0" -> "1.1.0"',
        "New permissions: filesystem:write, network",
    ]


def test_diff_of_a_first_scenario_version_with_kind_and_json(fake: FakeApi, invoke: Invoke) -> None:
    first = {"base": None, "files": {"added": [], "removed": [], "changed": []},
             "manifest": {"added": {}, "removed": {}, "changed": {}}, "newPermissions": []}  # fmt: skip
    fake.ok("GET", f"{ADMIN}/scenarios/versions/{VID}/diff", first)
    result = invoke(["review", "diff", VID, "--kind", "scenarios", "--json"])
    assert result.exit_code == 0, result.output
    assert stdout_json(result)["data"] == {"kind": "scenarios", "versionId": VID, "diff": first}
    assert fake.calls() == [("GET", f"{ADMIN}/scenarios/versions/{VID}/diff")]
    human = invoke(["review", "diff", VID, "--kind", "scenarios"])
    assert human.stdout.splitlines()[0].startswith("First version: nothing approved")
    assert human.stdout.splitlines()[-1] == "New permissions: none"


def test_approve_posts_the_review_of_the_kind_that_has_the_id(
    fake: FakeApi, invoke: Invoke
) -> None:
    fake.on("GET", f"{PLUGINS}/versions/{VID}", error(404, "PLUGIN_VERSION_NOT_FOUND"))
    fake.ok("GET", f"{ADMIN}/scenarios/versions/{VID}", {"id": VID, "scenarioId": "triage"})
    approved = {"id": VID, "scenarioId": "triage", "version": "1.1.0", "isLatest": True,
                "reviewStatus": "approved"}  # fmt: skip
    fake.ok("POST", f"{ADMIN}/scenarios/versions/{VID}/review", approved)
    fake.ok("GET", f"{ADMIN}/scenarios/triage", {"id": "triage"})
    result = invoke(["review", "approve", VID])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "Approved scenario version 1.1.0 of triage (now current)"
    assert fake.find("POST", f"{ADMIN}/scenarios/versions/{VID}/review").json == {"approved": True}
    assert fake.writes() == [("POST", f"{ADMIN}/scenarios/versions/{VID}/review")]


def test_approve_with_a_note_and_a_kind_sends_the_note(fake: FakeApi, invoke: Invoke) -> None:
    fake.ok("GET", f"{PLUGINS}/versions/{VID}", VERSION)
    fake.ok("POST", f"{PLUGINS}/versions/{VID}/review", {**VERSION, "reviewStatus": "approved"})
    fake.ok("GET", f"{PLUGINS}/p-weather", plugin_item("weather", ago(days=1)))
    result = invoke(["review", "approve", VID, "--kind", "plugins", "--note", "Welcome", "--json"])
    assert result.exit_code == 0, result.output
    body = fake.find("POST", f"{PLUGINS}/versions/{VID}/review").json
    assert body == {"approved": True, "reviewNote": "Welcome"}
    assert stdout_json(result)["data"]["version"]["reviewStatus"] == "approved"


def test_a_refused_move_prints_the_service_message_and_exits_1(
    fake: FakeApi, invoke: Invoke
) -> None:
    fake.ok("GET", f"{PLUGINS}/versions/{VID}", VERSION)
    message = "Only a pending version can be approved, not approved"
    fake.on("POST", f"{PLUGINS}/versions/{VID}/review", error(409, "INVALID_STATE", message))
    result = invoke(["review", "approve", VID, "--json"])
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: INVALID_STATE: {message} (HTTP 409)"
    assert stdout_json(result)["error"] == {
        "code": "INVALID_STATE", "message": message, "details": {}, "status": 409,
    }  # fmt: skip
    assert "Traceback" not in result.output


@pytest.mark.parametrize("note", [None, "", "   "])
@pytest.mark.parametrize("command", [["reject", VID], ["reject-plugin", "weather"]])
def test_a_rejection_without_a_note_is_refused_locally_with_exit_2(
    fake: FakeApi, invoke: Invoke, note: str | None, command: list[str]
) -> None:
    args = ["review", *command] + (["--note", note] if note is not None else [])
    result = invoke(args)
    assert result.exit_code == 2
    assert (
        result.stderr.strip() == 'error: NOTE_REQUIRED: A rejection needs a note: add --note "why"'
    )
    assert fake.requests == []


def test_a_rejection_without_a_note_in_json_mode_is_a_json_error(
    fake: FakeApi, invoke: Invoke
) -> None:
    result = invoke(["review", "reject", VID, "--json"])
    assert result.exit_code == 2
    assert stdout_json(result)["error"]["code"] == "NOTE_REQUIRED"


def test_reject_sends_the_note(fake: FakeApi, invoke: Invoke) -> None:
    fake.ok("GET", f"{PLUGINS}/versions/{VID}", VERSION)
    rejected = {**VERSION, "reviewStatus": "rejected", "reviewNote": "too slow"}
    fake.ok("POST", f"{PLUGINS}/versions/{VID}/review", rejected)
    fake.ok("GET", f"{PLUGINS}/p-weather", plugin_item("weather", ago(days=1)))
    result = invoke(["review", "reject", VID, "--note", "too slow"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "Rejected plugin version 1.1.0 of weather"
    body = fake.find("POST", f"{PLUGINS}/versions/{VID}/review").json
    assert body == {"approved": False, "reviewNote": "too slow"}


@pytest.mark.parametrize(
    ("flag", "body"),
    [
        ([], {"approved": True}),
        (["--approve-pending-version"], {"approved": True, "approvePendingVersion": True}),
        (["--no-approve-pending-version"], {"approved": True, "approvePendingVersion": False}),
    ],
)
def test_approve_plugin_sends_the_pending_version_choice_only_when_given(
    fake: FakeApi, invoke: Invoke, flag: list[str], body: dict[str, Any]
) -> None:
    plugin = {**plugin_item("weather", ago(days=1)), "reviewStatus": "approved",
              "enabled": True, "latestVersion": "1.0.0"}  # fmt: skip
    fake.ok("POST", f"{PLUGINS}/weather/review", plugin)
    result = invoke(["review", "approve-plugin", "weather", *flag])
    assert result.exit_code == 0, result.output
    assert fake.find("POST", f"{PLUGINS}/weather/review").json == body
    assert result.stdout.strip() == (
        "Approved plugin weather: approved, listed, current version 1.0.0"
    )


def test_reject_plugin_sends_the_note_and_reports_the_state(fake: FakeApi, invoke: Invoke) -> None:
    plugin = {**plugin_item("weather", ago(days=1)), "reviewStatus": "rejected",
              "latestVersion": None}  # fmt: skip
    fake.ok("POST", f"{PLUGINS}/weather/review", plugin)
    result = invoke(["review", "reject-plugin", "weather", "--note", "spam", "--json"])
    assert result.exit_code == 0, result.output
    assert fake.find("POST", f"{PLUGINS}/weather/review").json == {
        "approved": False,
        "reviewNote": "spam",
    }
    assert stdout_json(result)["data"]["plugin"]["reviewStatus"] == "rejected"


def test_an_unknown_kind_is_a_usage_error(fake: FakeApi, invoke: Invoke) -> None:
    result = invoke(["review", "show", VID, "--kind", "themes"])
    assert result.exit_code == 2
    assert fake.requests == []


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "?"), (0, "<1m"), (59, "<1m"), (60, "1m"), (3600, "1h 0m"), (90061, "1d 1h")],
)
def test_ages_show_two_units_at_most(seconds: int | None, text: str) -> None:
    assert format_age(seconds) == text


def test_sizes_use_binary_units() -> None:
    assert [format_size(n) for n in (None, 0, 1023, 1024, 1536, 1024 * 1024)] == [
        "-", "0 B", "1023 B", "1.0 KiB", "1.5 KiB", "1.0 MiB",
    ]  # fmt: skip


def test_columns_never_cut_an_id() -> None:
    long_id = str(uuid.uuid4())
    assert columns([["A", "B"], [long_id, "x"]]) == [f"A{' ' * 35}  B", f"{long_id}  x"]
