"""`marketplace status [PLUGIN_KEY]`: the caller's plugins, their reviews and rollout."""

from __future__ import annotations

from typing import Any

from .fake_api import FakeApi, error
from .helpers import BACKEND, Invoke, stdout_json

DEV = "/api/v1/developer/plugins"


def version(number: str, status: str, note: str | None = None, **more: Any) -> dict[str, Any]:
    return {
        "id": f"v-{number}",
        "version": number,
        "reviewStatus": status,
        "reviewNote": note,
        "isLatest": status == "approved",
        "createdAt": "2026-11-20T08:30:00Z",
        **more,
    }


def detail(key: str, status: str, versions: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    approved = [v["version"] for v in versions if v["reviewStatus"] == "approved"]
    return {
        "id": f"id-{key}",
        "pluginKey": key,
        "name": key.title(),
        "reviewStatus": status,
        "reviewNote": None,
        "enabled": status == "approved",
        "latestVersion": approved[0] if approved else None,
        "versions": versions,
        **more,
    }


def serve(fake: FakeApi, *details: dict[str, Any]) -> None:
    summaries = [{k: v for k, v in d.items() if k != "versions"} for d in details]
    fake.ok("GET", DEV, {"items": summaries, "total": len(details), "page": 1, "pageSize": 100})
    for item in details:
        fake.ok("GET", f"{DEV}/{item['id']}", item)
        fake.ok("GET", f"{DEV}/{item['pluginKey']}", item)


def test_status_lists_every_plugin_with_its_newest_version_and_note(
    fake: FakeApi, invoke: Invoke
) -> None:
    serve(
        fake,
        detail("weather", "approved", [version("1.1.0", "pending"), version("1.0.0", "approved")]),
        detail(
            "notes",
            "rejected",
            [version("0.1.0", "rejected", "main names a file\nthat is missing")],
            reviewNote="No description",
        ),
    )
    result = invoke(["status"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "PLUGIN   STATUS    LISTED  CURRENT  NEWEST VERSION    ROLLOUT  NOTE",
        "weather  approved  yes     1.0.0    1.1.0 (pending)   -        -",
        "notes    rejected  no      -        0.1.0 (rejected)  -        main names a file that is missing",
    ]  # fmt: skip
    assert fake.find("GET", DEV).params == {"page": "1", "pageSize": "100"}
    assert "marketplace status PLUGIN_KEY" in result.stderr


def test_status_of_one_plugin_prints_every_version(fake: FakeApi, invoke: Invoke) -> None:
    rollout = {"percent": 25, "state": "rolling", "haltedReason": None, "updatedAt": None}
    serve(
        fake,
        detail(
            "weather",
            "approved",
            [version("1.1.0", "pending", rollout=rollout), version("1.0.0", "approved", "Fine")],
            reviewNote="Welcome",
        ),
    )
    result = invoke(["status", "weather"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "weather (Weather): approved, listed, current version 1.0.0",
        "Reviewer's note: Welcome",
        "VERSION  STATUS    CURRENT  ROLLOUT      CREATED           NOTE",
        "1.1.0    pending            25% rolling  2026-11-20 08:30  -",
        "1.0.0    approved  yes      -            2026-11-20 08:30  Fine",
    ]
    assert ("GET", DEV) not in fake.calls()


def test_status_shows_each_versions_rollout_state(fake: FakeApi, invoke: Invoke) -> None:
    def rollout(percent: int, state: str, reason: str | None = None) -> dict[str, Any]:
        return {"percent": percent, "state": state, "haltedReason": reason, "updatedAt": None}

    serve(
        fake,
        detail(
            "weather",
            "approved",
            [
                version("1.2.0", "approved", rollout=rollout(10, "rolling")),
                version(
                    "1.1.0",
                    "approved",
                    rollout=rollout(30, "halted", "automatic: crashes"),
                    isLatest=False,
                ),
                version("1.0.0", "approved", rollout=rollout(100, "full"), isLatest=False),
            ],
        ),
    )
    result = invoke(["status", "weather"])
    assert result.exit_code == 0, result.output
    assert [line.split("  2026")[0].rstrip() for line in result.stdout.splitlines()[3:]] == [
        "1.2.0    approved  yes      10% rolling",
        "1.1.0    approved           halted at 30%: automatic: crashes",
        "1.0.0    approved           full",
    ]


def test_status_json_gives_plugins_with_versions(fake: FakeApi, invoke: Invoke) -> None:
    serve(fake, detail("weather", "pending", [version("1.0.0", "pending")]))
    data = stdout_json(invoke(["status", "--json"]))["data"]
    assert data["backend"] == BACKEND
    [item] = data["items"]
    assert item["pluginKey"] == "weather"
    assert item["listed"] is False
    assert item["versions"] == [
        {
            "version": "1.0.0",
            "reviewStatus": "pending",
            "reviewNote": None,
            "isLatest": False,
            "createdAt": "2026-11-20T08:30:00Z",
            "rollout": None,
        }
    ]


def test_status_with_no_plugins_says_how_to_publish(fake: FakeApi, invoke: Invoke) -> None:
    serve(fake)
    result = invoke(["status"])
    assert result.exit_code == 0
    assert result.stdout.strip() == (
        f"No plugins of yours on {BACKEND} yet; marketplace publish DIR sends one."
    )


def test_status_of_another_developers_plugin_names_it(fake: FakeApi, invoke: Invoke) -> None:
    fake.on("GET", f"{DEV}/theirs", error(403, "PLUGIN_NOT_OWNED", "Not your plugin"))
    result = invoke(["status", "theirs"])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        'error: PLUGIN_NOT_OWNED: plugin "theirs" belongs to another developer;'
    )


def test_status_needs_a_login(fake: FakeApi, invoke: Invoke) -> None:
    result = invoke(["status", "--backend", BACKEND], auth=False)
    assert result.exit_code == 1
    assert "NOT_LOGGED_IN" in result.stderr
    assert fake.calls() == []


def test_status_names_the_organization_a_plugin_belongs_to(fake: FakeApi, invoke: Invoke) -> None:
    serve(
        fake,
        detail(
            "weather",
            "approved",
            [version("1.0.0", "approved")],
            org={"slug": "acme-tools", "name": "Acme Tools"},
        ),
    )
    result = invoke(["status", "weather"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:2] == [
        "weather (Weather): approved, listed, current version 1.0.0",
        "Organization: acme-tools",
    ]
    (item,) = stdout_json(invoke(["status", "weather", "--json"]))["data"]["items"]
    assert item["org"] == "acme-tools"
