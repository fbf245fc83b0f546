"""`marketplace uninstall KEY` reports the uninstall (CONTRACT 16: `POST
/api/v1/plugins/uninstall/KEY {version}`) once the files are gone, when there is a login:
best effort, so a failure is a one-line warning and the uninstall stands; without a login
nothing is sent and nothing is said."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from marketplace_client.config import CredentialStore

from .capabilities_fakes import KEY, serve_version
from .fake_api import FakeApi, envelope, error
from .helpers import BACKEND, TOKEN, Invoke, stdout_json
from .test_install import registry

UNINSTALL = f"/api/v1/plugins/uninstall/{KEY}"
SIGNAL = {"pluginId": "p-1", "version": "1.0.0", "kind": "uninstall"}


def installed(fake: FakeApi, invoke: Invoke, root: Path) -> None:
    serve_version(fake, "1.0.0")
    assert invoke(["install", KEY, "--dir", str(root)]).exit_code == 0
    fake.requests.clear()


def gone(root: Path) -> bool:
    return not (root / KEY).exists() and KEY not in registry(root)["plugins"]


@pytest.mark.parametrize("status", [201, 200], ids=["first", "repeated"])
def test_uninstall_reports_the_version_after_removing_the_files(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, status: int
) -> None:
    installed(fake, invoke, tmp_path)
    files_gone_first: list[bool] = []

    def report(request: httpx.Request) -> httpx.Response:
        files_gone_first.append(gone(tmp_path))
        return envelope(SIGNAL, status)

    fake.on("POST", UNINSTALL, report)

    result = invoke(["uninstall", KEY, "--dir", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert fake.calls() == [("POST", UNINSTALL)]
    sent = fake.find("POST", UNINSTALL)
    assert sent.json == {"version": "1.0.0"}
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"
    assert files_gone_first == [True]
    assert result.stdout.splitlines()[-1] == "Reported the uninstall."
    assert result.stderr == ""


def test_uninstall_json_says_whether_it_was_reported(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path)
    fake.ok("POST", UNINSTALL, SIGNAL, status=201)

    data = stdout_json(invoke(["uninstall", KEY, "--dir", str(tmp_path), "--json"]))["data"]

    assert data["version"] == "1.0.0"
    assert (data["reported"], data["reportError"]) == (True, None)


@pytest.mark.parametrize(
    ("answer", "headline"),
    [
        (error(500, "INTERNAL_ERROR", "boom"), "INTERNAL_ERROR: boom (HTTP 500)"),
        (error(404, "NOT_FOUND", "Not Found"), "NOT_FOUND: Not Found (HTTP 404)"),
        (httpx.ConnectError("refused"), f"NETWORK_ERROR: cannot reach {BACKEND}: refused"),
    ],
    ids=["server-error", "older-service", "network-error"],
)
def test_a_failed_report_is_a_warning_and_the_uninstall_stands(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    answer: httpx.Response | Exception,
    headline: str,
) -> None:
    installed(fake, invoke, tmp_path)
    fake.on("POST", UNINSTALL, answer)

    result = invoke(["uninstall", KEY, "--dir", str(tmp_path), "--json"])

    assert result.exit_code == 0, result.output
    assert gone(tmp_path)
    assert result.stderr.splitlines() == [
        f"warning: the uninstall could not be reported: {headline}"
    ]
    data = stdout_json(result)["data"]
    assert data["reported"] is False
    assert data["reportError"]["code"] == headline.split(":")[0]


def test_without_a_login_nothing_is_reported_or_said(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path)

    result = invoke(["uninstall", KEY, "--dir", str(tmp_path)], auth=False)

    assert result.exit_code == 0, result.output
    assert gone(tmp_path)
    assert fake.calls() == []
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        f"Uninstalled {KEY} 1.0.0: removed {tmp_path / KEY}, its registry entry and its saved "
        "configuration."
    ]


def test_the_stored_login_reports_the_uninstall(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    installed(fake, invoke, tmp_path)
    CredentialStore().save(BACKEND, "stored-access", "user@example.com")
    fake.ok("POST", UNINSTALL, SIGNAL, status=201)

    result = invoke(["uninstall", KEY, "--dir", str(tmp_path)], auth=False)

    assert result.exit_code == 0, result.output
    assert fake.find("POST", UNINSTALL).headers["authorization"] == "Bearer stored-access"


def test_a_failed_uninstall_reports_nothing(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    result = invoke(["uninstall", KEY, "--dir", str(tmp_path)])

    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: NOT_INSTALLED: {KEY} is not installed")
    assert fake.calls() == []
