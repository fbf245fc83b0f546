"""`marketplace update` follows the update check (CONTRACT 16): one request with every
plugin it updates and this client's install id, then the version offered is installed,
lower ones included (a halted rollout, a version taken down); a plugin with nothing
offered, or no longer listed, is left as it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from marketplace_client import offers
from marketplace_client.api import ApiClient
from marketplace_client.offers import Channel, check_updates

from .capabilities_fakes import (
    KEY,
    capabilities,
    entry,
    serve_capabilities,
    serve_version,
    state,
    tool,
)
from .fake_api import UPDATES_PATH, FakeApi, error
from .helpers import BACKEND, Invoke, file_mode, stdout_json

SEARCH = tool("search", "Search the web")
REPORT = ("POST", f"/api/v1/plugins/install/{KEY}")


def published(fake: FakeApi, *versions: str) -> None:
    """These versions of demo-plugin can be installed, the last one current; all show the
    same capabilities, so no update needs consent."""
    for version in versions:
        serve_version(fake, version, current=version == versions[-1])
        serve_capabilities(fake, capabilities(version, tools=[SEARCH]))


def installed(fake: FakeApi, invoke: Invoke, root: Path, *versions: str) -> None:
    """demo-plugin installed at the last of `versions` (all of them published)."""
    published(fake, *versions)
    result = invoke(["install", KEY, "--dir", str(root)])
    assert result.exit_code == 0, result.output
    assert entry(root)["version"] == versions[-1]
    fake.requests.clear()


def also_installed(root: Path, *keys_and_versions: tuple[str, str]) -> None:
    """More plugins in the registry, as copies of demo-plugin's record."""
    document = json.loads((root / "registry.json").read_text())
    for key, version in keys_and_versions:
        document["plugins"][key] = dict(document["plugins"][KEY], version=version)
    (root / "registry.json").write_text(json.dumps(document))


def update(invoke: Invoke, root: Path, *args: str) -> Any:
    return invoke(["update", *(args or (KEY,)), "--dir", str(root)])


def test_update_sends_the_installed_version_with_an_install_id(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")

    result = update(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    [body] = fake.update_checks()
    assert body["channel"] == "stable"
    assert body["items"] == [{"pluginKey": KEY, "version": "1.0.0"}]
    assert 8 <= len(body["installId"]) <= 128
    assert set(body) == {"installId", "channel", "items"}


def test_the_install_id_is_kept_in_the_config_folder_and_sent_on_every_run(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")

    for _ in range(3):
        assert update(invoke, tmp_path).exit_code == 0

    ids = {body["installId"] for body in fake.update_checks()}
    path = isolated_env / "install-id"
    assert ids == {path.read_text().strip()}
    assert file_mode(path) == 0o600
    assert sorted(p.name for p in isolated_env.iterdir() if "install-id" in p.name) == [
        "install-id"
    ]


def test_an_install_id_already_in_the_config_folder_is_used(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")
    (isolated_env / "install-id").write_text("kept-from-an-earlier-run\n")

    assert update(invoke, tmp_path).exit_code == 0

    [body] = fake.update_checks()
    assert body["installId"] == "kept-from-an-earlier-run"
    assert (isolated_env / "install-id").read_text() == "kept-from-an-earlier-run\n"


def test_a_damaged_install_id_stops_the_update_and_is_not_replaced(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")
    (isolated_env / "install-id").write_text("short\n")

    result = update(invoke, tmp_path)

    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"error: CONFIG_UNREADABLE: {isolated_env / 'install-id'} does not hold an install id"
    )
    assert (isolated_env / "install-id").read_text() == "short\n"
    assert fake.update_checks() == []


def test_update_all_asks_about_every_installed_plugin_in_one_check(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")
    also_installed(tmp_path, ("zeta-tool", "0.3.0"), ("alpha-tool", "2.1.0-beta.1"))
    fake.offer("zeta-tool", None, "up_to_date")
    fake.offer("alpha-tool", None, "up_to_date")

    result = update(invoke, tmp_path, "--all")

    assert result.exit_code == 0, result.output
    [body] = fake.update_checks()
    assert body["items"] == [
        {"pluginKey": "alpha-tool", "version": "2.1.0-beta.1"},
        {"pluginKey": KEY, "version": "1.0.0"},
        {"pluginKey": "zeta-tool", "version": "0.3.0"},
    ]
    assert fake.calls()[0] == ("POST", UPDATES_PATH)


def test_update_of_one_plugin_asks_about_that_plugin(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")
    also_installed(tmp_path, ("zeta-tool", "0.3.0"))

    assert update(invoke, tmp_path).exit_code == 0

    [body] = fake.update_checks()
    assert body["items"] == [{"pluginKey": KEY, "version": "1.0.0"}]


def test_more_installs_than_a_check_takes_go_in_several_checks(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")
    also_installed(tmp_path, ("alpha-tool", "1.0.0"), ("beta-tool", "1.0.0"))
    monkeypatch.setattr(offers, "BATCH_SIZE", 2)
    fake.offer("alpha-tool", None, "up_to_date")
    fake.offer("beta-tool", None, "up_to_date")

    result = update(invoke, tmp_path, "--all", "--json")

    assert result.exit_code == 0, result.output
    checks = fake.update_checks()
    assert [[item["pluginKey"] for item in body["items"]] for body in checks] == [
        ["alpha-tool", "beta-tool"],
        [KEY],
    ]
    assert len({body["installId"] for body in checks}) == 1
    reasons = {item["pluginKey"]: item["reason"] for item in stdout_json(result)["data"]["items"]}
    assert reasons == {"alpha-tool": "up_to_date", "beta-tool": "up_to_date", KEY: "up_to_date"}


def test_a_check_holds_at_most_500_plugins(fake: FakeApi) -> None:
    fake.offer_latest("unused", "1.0.0")
    installs = {f"plugin-{n:04d}": "1.0.0" for n in range(1001)}

    with ApiClient(BACKEND, transport=fake.transport) as api:
        found = check_updates(api, installs, Channel.stable, "install-0001")

    assert [len(body["items"]) for body in fake.update_checks()] == [500, 500, 1]
    sent = [item["pluginKey"] for body in fake.update_checks() for item in body["items"]]
    assert sent == sorted(installs)
    assert {offer.reason for offer in found.values()} == {"not_listed"}
    assert len(found) == 1001


@pytest.mark.parametrize("reason", ["update", "rolling_not_selected"])
def test_an_offered_newer_version_is_installed(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, reason: str
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")
    # 1.2.0 may be rolling out to others: the service offers this install 1.1.0.
    published(fake, "1.1.0", "1.2.0")
    fake.offer(KEY, "1.1.0", reason)

    result = update(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert entry(tmp_path)["version"] == "1.1.0"
    assert sorted(p.name for p in (tmp_path / KEY).iterdir()) == ["1.1.0"]
    assert fake.find(*REPORT).json == {"version": "1.1.0"}
    assert f"Updated {KEY} 1.0.0 -> 1.1.0" in result.stdout


@pytest.mark.parametrize(
    ("reason", "why"),
    [("halted_rollback", "the rollout of 1.1.0 was halted"), ("revoked", "1.1.0 was taken down")],
)
def test_an_offered_older_version_is_rolled_back_to(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, reason: str, why: str
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0", "1.1.0")
    fake.offer(KEY, "1.0.0", reason)

    result = update(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert entry(tmp_path)["version"] == "1.0.0"
    assert sorted(p.name for p in (tmp_path / KEY).iterdir()) == ["1.0.0"]
    assert fake.find(*REPORT).json == {"version": "1.0.0"}
    assert f"Rolled back {KEY} 1.1.0 -> 1.0.0 ({why})." in result.stdout.splitlines()


def test_a_rollback_in_json(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    installed(fake, invoke, tmp_path, "1.0.0", "1.1.0")
    fake.offer(KEY, "1.0.0", "revoked")

    result = update(invoke, tmp_path, KEY, "--json")

    assert result.exit_code == 0, result.output
    data = stdout_json(result)["data"]
    [item] = data["items"]
    assert (item["from"], item["to"], item["reason"], item["rollback"], item["updated"]) == (
        "1.1.0",
        "1.0.0",
        "revoked",
        True,
        True,
    )
    assert data["channel"] == "stable"


@pytest.mark.parametrize(
    ("offered", "reason", "line"),
    [
        (None, "up_to_date", f"{KEY} is up to date (1.0.0)."),
        (
            None,
            "not_listed",
            f"{KEY} 1.0.0 is no longer listed on the service: it is left as it is.",
        ),
        (
            None,
            "rolling_not_selected",
            f"{KEY} is up to date (1.0.0): a newer version is rolling out and is not offered "
            "to this install yet.",
        ),
        (
            None,
            "halted_rollback",
            f"{KEY} 1.0.0 stays installed: the rollout of 1.0.0 was halted and no other "
            "version is offered.",
        ),
        (
            None,
            "revoked",
            f"{KEY} 1.0.0 stays installed: 1.0.0 was taken down and no other version is "
            f"offered. `marketplace uninstall {KEY}` removes it.",
        ),
        ("1.0.0", "update", f"{KEY} is up to date (1.0.0)."),
    ],
    ids=[
        "up-to-date",
        "not-listed",
        "rolling",
        "halted-nothing-older",
        "revoked-nothing-older",
        "same-version",
    ],
)
def test_nothing_offered_leaves_the_install_as_it_is(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, offered: str | None, reason: str, line: str
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")
    published(fake, "1.0.0", "1.1.0")  # a newer one exists: only the offer counts
    fake.offer(KEY, offered, reason)
    before = state(tmp_path)

    result = update(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [line]
    assert state(tmp_path) == before
    assert fake.calls() == [("POST", UPDATES_PATH)]


def test_prerelease_channel_is_asked_for_with_the_option(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")
    published(fake, "2.0.0-beta.1")
    fake.offer(KEY, "2.0.0-beta.1", "update")

    result = invoke(["update", KEY, "--channel", "prerelease", "--dir", str(tmp_path)])

    assert result.exit_code == 0, result.output
    [body] = fake.update_checks()
    assert body["channel"] == "prerelease"
    assert entry(tmp_path)["version"] == "2.0.0-beta.1"


def test_a_failed_update_check_changes_nothing(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")
    fake.on("POST", UPDATES_PATH, error(500, "INTERNAL_ERROR", "boom"))
    before = state(tmp_path)

    result = update(invoke, tmp_path)

    assert result.exit_code == 1
    assert result.stderr.startswith("error: INTERNAL_ERROR: boom (HTTP 500)")
    assert state(tmp_path) == before
    assert fake.calls() == [("POST", UPDATES_PATH)]


def test_an_answer_offering_no_version_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")
    fake.offer(KEY, "../../etc", "update")
    before = state(tmp_path)

    result = update(invoke, tmp_path)

    assert result.exit_code == 1
    assert "BAD_RESPONSE: update check: demo-plugin: offered '../../etc' is not a version" in (
        result.stderr
    )
    assert state(tmp_path) == before


def test_a_registry_entry_without_a_valid_version_is_not_sent_and_fails_alone(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path, "1.0.0")
    published(fake, "1.0.0", "1.1.0")
    also_installed(tmp_path, ("broken-tool", "latest"))

    result = update(invoke, tmp_path, "--all")

    assert result.exit_code == 1
    [body] = fake.update_checks()
    assert body["items"] == [{"pluginKey": KEY, "version": "1.0.0"}]
    assert entry(tmp_path)["version"] == "1.1.0"
    assert (
        "error: broken-tool: REGISTRY_UNREADABLE: the registry records no valid version of "
        "broken-tool ('latest')"
    ) in result.stderr


def test_the_update_check_is_answered_with_what_the_contract_allows(fake: FakeApi) -> None:
    """Guards the fake: it refuses what the service refuses."""
    fake.offer_latest(KEY, "1.0.0")
    bodies: list[Any] = [
        {"installId": "short", "items": []},
        {"installId": "x" * 129, "items": []},
        {"installId": "install-0001", "channel": "beta", "items": []},
        {"installId": "install-0001", "items": [], "extra": 1},
        {"installId": "install-0001", "items": [{"pluginKey": KEY}]},
    ]
    with httpx.Client(base_url=BACKEND, transport=fake.transport) as client:
        codes = [client.post(UPDATES_PATH, json=body).status_code for body in bodies]
    assert codes == [400] * len(bodies)
