"""`marketplace list` shows what the update check offers each install (CONTRACT 16), from one
request for all of them; without the service it still lists, with the offers unknown."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from marketplace_client.audit import REVOCATIONS

from .capabilities_fakes import KEY
from .fake_api import UPDATES_PATH, FakeApi, error
from .helpers import BACKEND, Invoke, stdout_json
from .test_install import SIGNER

INSTALLS = {
    "alpha-tool": "1.0.0",
    "beta-tool": "1.1.0",
    "gamma-tool": "2.0.0",
    "delta-tool": "0.5.0",
}


def registry_of(root: Path, installs: dict[str, str]) -> None:
    """A registry recording these installs (list reads nothing else of them)."""
    plugins = {
        key: {"version": version, "path": str(root / key / version)}
        for key, version in installs.items()
    }
    document = {"version": 2, "mcpServers": {}, "plugins": plugins}
    root.mkdir(parents=True, exist_ok=True)
    (root / "registry.json").write_text(json.dumps(document))


def serve_revocations(fake: FakeApi, *items: dict[str, Any]) -> None:
    issued = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    SIGNER.serve_keys(fake)
    fake.ok("GET", REVOCATIONS, SIGNER.sign({"issuedAt": issued, "items": list(items)}))


def revocation(key: str, version: str, reason: str) -> dict[str, Any]:
    return {
        "kind": "plugin",
        "key": key,
        "version": version,
        "sha256": None,
        "reason": reason,
        "revokedAt": "2026-11-20T08:00:00Z",
    }


def listing(invoke: Invoke, root: Path, *extra: str) -> Any:
    return invoke(["list", "--dir", str(root), "--backend", BACKEND, *extra], auth=False)


def offered_four(fake: FakeApi) -> None:
    fake.offer("alpha-tool", "1.2.0", "update")
    fake.offer("beta-tool", "1.0.0", "halted_rollback")
    fake.offer("gamma-tool", None, "up_to_date")
    # delta-tool: the fake lists no such plugin.


def test_list_shows_what_is_offered_from_one_check(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    registry_of(tmp_path, INSTALLS)
    serve_revocations(fake)
    offered_four(fake)

    result = listing(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "PLUGIN      VERSION  STATUS",
        "alpha-tool  1.0.0    update available: 1.2.0",
        "beta-tool   1.1.0    rollback offered: 1.0.0 (the rollout of 1.1.0 was halted)",
        "delta-tool  0.5.0    no longer listed",
        "gamma-tool  2.0.0    up to date",
    ]
    [body] = fake.update_checks()
    assert body["channel"] == "stable"
    assert body["items"] == [
        {"pluginKey": key, "version": INSTALLS[key]} for key in sorted(INSTALLS)
    ]
    assert not any("/detail/" in path for _, path in fake.calls())


def test_list_json_carries_the_offers(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    registry_of(tmp_path, INSTALLS)
    serve_revocations(fake)
    offered_four(fake)

    result = listing(invoke, tmp_path, "--json")

    assert result.exit_code == 0, result.output
    data = stdout_json(result)["data"]
    assert data["channel"] == "stable"
    shown = {
        item["pluginKey"]: (
            item["offered"],
            item["offerReason"],
            item["rollback"],
            item["updateAvailable"],
        )
        for item in data["items"]
    }
    assert shown == {
        "alpha-tool": ("1.2.0", "update", False, True),
        "beta-tool": ("1.0.0", "halted_rollback", True, True),
        "delta-tool": (None, "not_listed", False, False),
        "gamma-tool": (None, "up_to_date", False, False),
    }


def test_list_and_update_send_the_same_install_id(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    registry_of(tmp_path, {"gamma-tool": "2.0.0"})
    serve_revocations(fake)
    fake.offer("gamma-tool", None, "up_to_date")

    assert listing(invoke, tmp_path).exit_code == 0
    assert invoke(["update", "--all", "--dir", str(tmp_path)]).exit_code == 0

    ids = [body["installId"] for body in fake.update_checks()]
    assert len(ids) == 2
    assert ids[0] == ids[1] == (isolated_env / "install-id").read_text().strip()


def test_list_asks_for_prereleases_with_the_option(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    registry_of(tmp_path, {"alpha-tool": "1.0.0"})
    serve_revocations(fake)
    fake.offer("alpha-tool", "2.0.0-rc.1", "update")

    result = listing(invoke, tmp_path, "--channel", "prerelease")

    assert result.exit_code == 0, result.output
    [body] = fake.update_checks()
    assert body["channel"] == "prerelease"
    assert result.stdout.splitlines()[1] == "alpha-tool  1.0.0    update available: 2.0.0-rc.1"


def test_a_revoked_install_shows_the_reason_and_what_is_offered(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    registry_of(tmp_path, {KEY: "1.1.0"})
    serve_revocations(fake, revocation(KEY, "1.1.0", "leaks data"))
    fake.offer(KEY, "1.0.0", "revoked")

    result = listing(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert (
        result.stdout.splitlines()[1]
        == f"{KEY}  1.1.0    REVOKED: leaks data; rollback offered: 1.0.0"
    )


def test_list_without_the_service_still_lists_with_offers_unknown(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    registry_of(tmp_path, {"alpha-tool": "1.0.0", "beta-tool": "1.1.0"})
    fake.on("GET", REVOCATIONS, httpx.ConnectError("refused"))

    result = listing(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "PLUGIN      VERSION  STATUS",
        "alpha-tool  1.0.0    offers unknown",
        "beta-tool   1.1.0    offers unknown",
    ]
    assert result.stderr.strip() == (
        "warning: the service could not be reached, so what is offered and what is revoked "
        f"are unknown: NETWORK_ERROR: cannot reach {BACKEND}: refused"
    )
    # Nothing more is tried once the service is not reached.
    assert fake.calls() == [("GET", REVOCATIONS)]


def test_list_without_the_update_check_keeps_the_revocations(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    """A service without the update check (404), or one failing only there."""
    registry_of(tmp_path, {KEY: "1.1.0", "alpha-tool": "1.0.0"})
    serve_revocations(fake, revocation(KEY, "1.1.0", "leaks data"))
    fake.on("POST", UPDATES_PATH, error(404, "NOT_FOUND", "Not Found"))

    result = listing(invoke, tmp_path, "--json")

    assert result.exit_code == 0, result.output
    items = {item["pluginKey"]: item for item in stdout_json(result)["data"]["items"]}
    assert items[KEY]["status"] == "REVOKED: leaks data"
    assert items["alpha-tool"]["status"] == "offers unknown"
    assert items["alpha-tool"]["offerReason"] is None
    assert "warning: the update check failed, so what is offered is unknown: NOT_FOUND" in (
        result.stderr
    )


def test_list_offline_sends_no_update_check_and_makes_no_install_id(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    registry_of(tmp_path, {"alpha-tool": "1.0.0"})

    result = listing(invoke, tmp_path, "--offline")

    assert result.exit_code == 0, result.output
    assert fake.calls() == []
    assert not (isolated_env / "install-id").exists()
