"""`marketplace review` against a live server: the queue, show, diff, approve and reject,
each checked by reading the server's state back."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.market import Market, write_plugin
from tests.helpers import ok

pytestmark = pytest.mark.e2e

SCENARIO_PUBLISH = "/api/v1/marketplace/developer/publish"


def data_of(result: Any) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["data"]


def queue(market: Market, search: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = data_of(
        market.as_admin("review", "list", "--search", search, "--json")
    )["items"]
    return items


def test_a_new_plugin_is_listed_approved_then_its_next_version_diffed_and_rejected(
    market: Market, tmp_path: Path
) -> None:
    key = "review-flow"
    first = write_plugin(
        tmp_path / "v1", key, permissions=["network"], files={"index.js": "one\n", "old.js": "x\n"}
    )
    assert market.as_developer("publish", str(first)).returncode == 0

    rows = queue(market, key)
    assert [(r["type"], r["key"], r["version"]) for r in rows] == [
        ("plugin", key, None),
        ("plugin-version", key, "1.0.0"),
    ]  # oldest first: the plugin record is created before its version
    assert {r["developer"]["name"] for r in rows} == {"Dev"}
    assert rows[1]["findings"] == 1  # a first version lists the permissions it requests

    approved = market.as_admin("review", "approve-plugin", key)
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == (
        f"Approved plugin {key}: approved, listed, current version 1.0.0"
    )
    assert market.plugin(key)["reviewStatus"] == "approved"
    assert market.version(key, "1.0.0")["isLatest"] is True
    assert queue(market, key) == []

    second = write_plugin(
        tmp_path / "v2",
        key,
        version="1.1.0",
        permissions=["network", "clipboard"],
        files={"index.js": "one\ntwo\n", "new.js": "y\n"},
    )
    assert market.as_developer("publish", str(second)).returncode == 0
    version_id = market.version(key, "1.1.0")["id"]
    assert [(f["code"], f["path"]) for f in market.version(key, "1.1.0")["findings"]] == [
        ("permission-added", "permissions[1]")
    ]

    diff = market.as_admin("review", "diff", version_id)
    assert diff.returncode == 0, diff.stderr
    lines = diff.stdout.splitlines()
    base_id = market.version(key, "1.0.0")["id"]
    assert lines[0] == f"Against version 1.0.0 ({base_id}), the last approved"
    assert "  + new.js (2 B)" in lines and "  - old.js (2 B)" in lines
    assert "  ~ index.js (4 B -> 8 B)" in lines
    assert '  ~ version: "1.0.0" -> "1.1.0"' in lines
    assert lines[-1] == "New permissions: clipboard"
    # --json carries the service's diff as it is.
    as_json = data_of(market.as_admin("review", "diff", version_id, "--json"))
    api = market.request("GET", f"/api/v1/admin/plugins/versions/{version_id}/diff")
    assert as_json == {"kind": "plugins", "versionId": version_id, "diff": api}

    refused = market.as_admin("review", "reject", version_id)
    assert refused.returncode == 2
    assert "NOTE_REQUIRED" in refused.stderr and "Traceback" not in refused.stderr
    assert market.version(key, "1.1.0")["reviewStatus"] == "pending"

    rejected = market.as_admin("review", "reject", version_id, "--note", "Clipboard: why?")
    assert rejected.returncode == 0, rejected.stderr
    assert rejected.stdout.strip() == f"Rejected plugin version 1.1.0 of {key}"
    version = market.version(key, "1.1.0")
    assert (version["reviewStatus"], version["reviewNote"]) == ("rejected", "Clipboard: why?")

    again = market.as_admin("review", "approve", version_id)
    assert again.returncode == 1
    assert "INVALID_STATE" in again.stderr and "(HTTP 409)" in again.stderr
    assert "Traceback" not in again.stderr


def test_a_scenario_version_is_found_by_id_shown_and_approved(market: Market) -> None:
    scenario_id = f"review-scen-{uuid.uuid4().hex[:6]}"
    body = {
        "id": scenario_id,
        "version": "1.0.0",
        "name": "Triage",
        "type": "programmatic",
        "category": "utility",
        "permissions": ["fs:read"],
    }
    headers = {"Authorization": f"Bearer {market.developer_token}"}
    ok(httpx.post(market.url + SCENARIO_PUBLISH, json=body, headers=headers), 201)
    [row] = queue(market, scenario_id)
    assert (row["type"], row["key"], row["developer"]["name"]) == (
        "scenario-version",
        scenario_id,
        "Dev",
    )

    shown = market.as_admin("review", "show", row["id"])  # no --kind: plugins tried first
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == f"Scenario version 1.0.0 of {scenario_id} (Triage)"
    assert "Findings (1):" in shown.stdout.splitlines()
    assert (
        "  info    permissions-requested  permissions: no version was approved before; this "
        'one requests 1 permission: "fs:read"'
    ) in shown.stdout.splitlines()

    first = data_of(market.as_admin("review", "diff", row["id"], "--json"))["diff"]
    assert first["base"] is None and first["newPermissions"] == ["fs:read"]

    approved = market.as_admin("review", "approve", row["id"], "--note", "ok")
    assert approved.returncode == 0, approved.stderr
    versions = market.request("GET", f"/api/v1/admin/scenarios/{scenario_id}/versions")["items"]
    assert [(v["reviewStatus"], v["isLatest"], v["reviewNote"]) for v in versions] == [
        ("approved", True, "ok")
    ]


def test_a_developer_token_is_refused_and_an_unknown_id_is_not_found(market: Market) -> None:
    refused = market.as_developer("review", "list")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: FORBIDDEN:")
    unknown = str(uuid.uuid4())
    missing = market.as_admin("review", "show", unknown, "--json")
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["error"]["code"] == "VERSION_NOT_FOUND"
    assert "Traceback" not in missing.stderr + refused.stderr


def _pending_identity(market: Market, name: str) -> str:
    """A user who became a developer and submitted an identity that waits for review."""
    token = market.new_user(name)
    mine = {"Authorization": f"Bearer {token}"}
    ok(
        httpx.post(
            f"{market.url}/api/v1/developer/register", json={"displayName": name}, headers=mine
        )
    )
    ok(
        httpx.post(
            f"{market.url}/api/v1/developer/identity",
            json={"realName": f"{name} Real"},
            headers=mine,
        )
    )
    user_id: str = ok(httpx.get(f"{market.url}/api/v1/auth/me", headers=mine))["user"]["id"]
    return user_id


def _identity_status(market: Market, email: str) -> str:
    developers = market.request("GET", "/api/v1/admin/developers", params={"search": email})
    [developer] = [d for d in developers["items"] if d["email"] == email]
    status: str = developer["identityStatus"]
    return status


def test_identities_are_listed_approved_and_rejected_from_the_terminal(market: Market) -> None:
    name = f"ident-{uuid.uuid4().hex[:6]}"
    user_id = _pending_identity(market, name)
    email = f"{name}@example.com"

    rows = data_of(
        market.as_admin("review", "list", "--kind", "identities", "--search", name, "--json")
    )["items"]
    assert [(r["type"], r["id"], r["key"], r["name"]) for r in rows] == [
        ("identity", user_id, email, f"{name} Real")
    ]
    assert rows[0]["developer"]["id"] == user_id
    assert rows[0]["findings"] is None

    refused = market.as_admin("review", "reject-identity", user_id)
    assert refused.returncode == 2
    assert _identity_status(market, email) == "pending"  # nothing was sent

    approved = market.as_admin("review", "approve-identity", user_id, "--json")
    assert data_of(approved)["identity"]["status"] == "verified"
    assert _identity_status(market, email) == "verified"
    assert queue(market, name) == []

    # Rejecting later revokes the verification, with the note the developer reads.
    rejected = market.as_admin(
        "review", "reject-identity", user_id, "--note", "The organization does not match"
    )
    assert rejected.returncode == 0, rejected.stderr
    assert rejected.stdout.strip() == f"Identity of developer {user_id}: rejected"
    assert _identity_status(market, email) == "rejected"
