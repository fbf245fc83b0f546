"""A plain `marketplace install KEY` installs what the update check offers a new install
(CONTRACT 16: version "0.0.0", this client's install id), so a staged rollout reaches new
installs as it reaches updates; with nothing offered, or without the update check, it
installs `latest` as before. `--version` (`latest` included) asks nothing."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from .capabilities_fakes import KEY, capabilities, entry, serve_capabilities, serve_version, tool
from .fake_api import UPDATES_PATH, FakeApi, error
from .helpers import BACKEND, Invoke

SEARCH = tool("search", "Search the web")
LATEST = ("GET", f"/api/v1/plugins/download/{KEY}/latest")


def download(version: str) -> tuple[str, str]:
    return ("GET", f"/api/v1/plugins/download/{KEY}/{version}")


def published(fake: FakeApi, *versions: str) -> None:
    """These versions of demo-plugin can be downloaded, the last one as `latest`."""
    for version in versions:
        serve_version(fake, version, current=version == versions[-1])
        serve_capabilities(fake, capabilities(version, tools=[SEARCH]))


def test_a_plain_install_asks_the_update_check_as_a_new_install(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    published(fake, "1.0.0")

    result = invoke(["install", KEY, "--dir", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert fake.update_checks() == [
        {
            "installId": (isolated_env / "install-id").read_text().strip(),
            "channel": "stable",
            "items": [{"pluginKey": KEY, "version": "0.0.0"}],
        }
    ]
    assert fake.calls()[0] == ("POST", UPDATES_PATH)


def test_a_plain_install_installs_the_version_offered_rather_than_the_current_one(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    """1.1.0 is current but rolling out, and this install is not selected: 1.0.0."""
    published(fake, "1.0.0", "1.1.0")
    fake.offer(KEY, "1.0.0", "update")

    result = invoke(["install", KEY, "--dir", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert entry(tmp_path)["version"] == "1.0.0"
    assert download("1.0.0") in fake.calls()
    assert LATEST not in fake.calls()
    assert fake.find("POST", f"/api/v1/plugins/install/{KEY}").json == {"version": "1.0.0"}
    assert result.stdout.startswith(f"Installed {KEY} 1.0.0 (config_only)")
    assert "warning" not in result.stderr


def test_the_prerelease_channel_is_asked_for_with_the_option(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    published(fake, "2.0.0-rc.1", "1.0.0")
    fake.offer(KEY, "2.0.0-rc.1", "update")

    result = invoke(["install", KEY, "--channel", "prerelease", "--dir", str(tmp_path)])

    assert result.exit_code == 0, result.output
    [body] = fake.update_checks()
    assert body["channel"] == "prerelease"
    assert entry(tmp_path)["version"] == "2.0.0-rc.1"


@pytest.mark.parametrize("reason", ["rolling_not_selected", "up_to_date"])
def test_with_nothing_offered_the_current_version_is_installed_without_a_word(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, reason: str
) -> None:
    published(fake, "1.0.0", "1.1.0")
    fake.offer(KEY, None, reason)

    result = invoke(["install", KEY, "--dir", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert entry(tmp_path)["version"] == "1.1.0"
    assert LATEST in fake.calls()
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("answer", "headline"),
    [
        (error(404, "NOT_FOUND", "Not Found"), "NOT_FOUND: Not Found (HTTP 404)"),
        (error(500, "INTERNAL_ERROR", "boom"), "INTERNAL_ERROR: boom (HTTP 500)"),
        (
            httpx.ConnectError("refused"),
            f"NETWORK_ERROR: cannot reach {BACKEND}: refused",
        ),
    ],
    ids=["older-service", "server-error", "network-error"],
)
def test_a_failed_update_check_installs_the_current_version_with_a_warning(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    answer: httpx.Response | Exception,
    headline: str,
) -> None:
    published(fake, "1.0.0", "1.1.0")
    fake.on("POST", UPDATES_PATH, answer)

    result = invoke(["install", KEY, "--dir", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert entry(tmp_path)["version"] == "1.1.0"
    assert fake.calls()[:2] == [("POST", UPDATES_PATH), LATEST]
    assert result.stderr.splitlines() == [
        f"warning: the update check failed, so the current version is installed: {headline}"
    ]


def test_a_damaged_install_id_installs_the_current_version_with_a_warning(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    published(fake, "1.1.0")
    isolated_env.mkdir()
    (isolated_env / "install-id").write_text("short\n")

    result = invoke(["install", KEY, "--dir", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert entry(tmp_path)["version"] == "1.1.0"
    assert fake.update_checks() == []
    assert result.stderr.startswith(
        "warning: the update check failed, so the current version is installed: CONFIG_UNREADABLE: "
    )
    assert (isolated_env / "install-id").read_text() == "short\n"


def test_a_plugin_not_listed_gets_the_services_answer_to_the_download(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    fake.on("GET", LATEST[1], error(404, "PLUGIN_NOT_FOUND", "Plugin not found"))

    result = invoke(["install", KEY, "--dir", str(tmp_path)])

    assert result.exit_code == 1
    [body] = fake.update_checks()
    assert body["items"] == [{"pluginKey": KEY, "version": "0.0.0"}]
    assert result.stderr.startswith(f'error: PLUGIN_NOT_FOUND: no plugin "{KEY}"')
    assert "warning" not in result.stderr


@pytest.mark.parametrize("version", ["1.1.0", "latest"])
def test_an_explicit_version_asks_no_update_check(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, version: str
) -> None:
    published(fake, "1.0.0", "1.1.0")
    fake.offer(KEY, "1.0.0", "update")

    result = invoke(["install", KEY, "--version", version, "--dir", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert entry(tmp_path)["version"] == "1.1.0"
    assert fake.update_checks() == []


def test_a_bad_key_is_refused_before_any_update_check(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    result = invoke(["install", "../etc", "--dir", str(tmp_path)])

    assert result.exit_code == 1
    assert result.stderr.startswith("error: BAD_OPTION: PLUGIN_KEY")
    assert fake.calls() == []
    assert not (isolated_env / "install-id").exists()
