"""`marketplace list` marks an install whose version now shows more than the user accepted
(its inspection ended after the install, or an older client installed it); a read that
fails, or --offline, gives no mark and no failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from marketplace_client import lifecycle

from .capabilities_fakes import (
    KEY,
    capabilities,
    capabilities_path,
    serve_capabilities,
    serve_revocations,
    serve_version,
    tool,
)
from .fake_api import FakeApi, error
from .helpers import BACKEND, Invoke, stdout_json

SEARCH = tool("search", "Search the web")
FETCH = tool("fetch", "Fetch a page")


def install_while(fake: FakeApi, invoke: Invoke, root: Path, status: str, **shown: Any) -> bytes:
    """demo-plugin 1.0.0 installed while its capabilities showed this; the registry's bytes."""
    serve_version(fake, "1.0.0", permissions=shown.get("declared"))
    serve_capabilities(fake, capabilities("1.0.0", status=status, **shown))
    result = invoke(["install", KEY, "--dir", str(root)])
    assert result.exit_code == 0, result.output
    fake.requests.clear()
    serve_revocations(fake)
    return (root / "registry.json").read_bytes()


def listing(invoke: Invoke, root: Path, *extra: str) -> Any:
    """`list` reads public endpoints only: no token."""
    return invoke(["list", "--dir", str(root), "--backend", BACKEND, *extra], auth=False)


def test_tools_found_after_the_install_are_marked(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    before = install_while(fake, invoke, tmp_path, "queued", declared=["fs.write"])
    serve_capabilities(fake, capabilities("1.0.0", tools=[SEARCH, FETCH], declared=["fs.write"]))

    result = listing(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "PLUGIN       VERSION  STATUS",
        f"{KEY}  1.0.0    up to date; has more than you accepted (adds tools search, fetch)",
    ]
    assert result.stderr.strip() == (
        f"{KEY} 1.0.0 has tools or permissions you did not accept (its inspection ended "
        f"after you installed it, or an older client installed it): `marketplace install {KEY} "
        f"--version 1.0.0` shows them and records them as accepted; `marketplace uninstall "
        f"{KEY}` removes it"
    )
    assert ("GET", capabilities_path("1.0.0")) in fake.calls()
    # list reads: the registry is as the install left it.
    assert (tmp_path / "registry.json").read_bytes() == before


def test_the_mark_in_json(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    install_while(fake, invoke, tmp_path, "running")
    serve_capabilities(
        fake, capabilities("1.0.0", tools=[SEARCH], undeclared=["network:tracker.example"])
    )

    result = listing(invoke, tmp_path, "--json")

    assert result.exit_code == 0, result.output
    [item] = stdout_json(result)["data"]["items"]
    assert item["inspection"] == "done"
    assert item["beyondAccepted"] == {
        "nothingRecorded": False,
        "toolsAdded": [SEARCH],
        "toolsChanged": [],
        "promptsChanged": [],
        "permissions": ["network:tracker.example"],
        "summary": "adds tool search; asks for permission network:tracker.example",
    }
    assert item["status"] == (
        "up to date; has more than you accepted (adds tool search; asks for permission "
        "network:tracker.example)"
    )


def test_what_was_accepted_is_not_marked(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    install_while(fake, invoke, tmp_path, "done", tools=[SEARCH], declared=["network:*"])
    serve_capabilities(
        fake, capabilities("1.0.0", tools=[SEARCH], declared=["network:api.example.com"])
    )

    result = listing(invoke, tmp_path, "--json")

    assert result.exit_code == 0, result.output
    [item] = stdout_json(result)["data"]["items"]
    assert (item["status"], item["beyondAccepted"], item["inspection"]) == (
        "up to date",
        None,
        "done",
    )
    assert result.stderr == ""


def test_an_install_by_an_older_client_is_marked_once_it_shows_anything(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    install_while(fake, invoke, tmp_path, "done", tools=[SEARCH])
    document = json.loads((tmp_path / "registry.json").read_text())
    del document["plugins"][KEY]["accepted"]
    (tmp_path / "registry.json").write_text(json.dumps(document))

    result = listing(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1] == (
        f"{KEY}  1.0.0    up to date; has more than you accepted (nothing recorded as "
        "accepted; adds tool search)"
    )


@pytest.mark.parametrize(
    "answer",
    [
        error(404, "NOT_FOUND", "Not Found"),
        error(403, "PLUGIN_VERSION_NOT_APPROVED", "taken down"),
        error(500, "INTERNAL_ERROR", "boom"),
        httpx.ConnectError("refused"),
    ],
    ids=["no-route", "taken-down", "server-error", "unreachable"],
)
def test_a_failed_read_gives_no_mark_and_no_failure(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, answer: httpx.Response | Exception
) -> None:
    before = install_while(fake, invoke, tmp_path, "queued")
    fake.on("GET", capabilities_path("1.0.0"), answer)

    result = listing(invoke, tmp_path, "--json")

    assert result.exit_code == 0, result.output
    [item] = stdout_json(result)["data"]["items"]
    assert (item["status"], item["inspection"], item["beyondAccepted"]) == (
        "up to date",
        "unknown",
        None,
    )
    assert (tmp_path / "registry.json").read_bytes() == before


def test_offline_reads_no_capabilities(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    install_while(fake, invoke, tmp_path, "queued")

    result = listing(invoke, tmp_path, "--offline", "--json")

    assert result.exit_code == 0, result.output
    assert fake.calls() == []
    [item] = stdout_json(result)["data"]["items"]
    assert (item["inspection"], item["beyondAccepted"]) == (None, None)


def test_reads_stop_when_their_time_is_spent(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_while(fake, invoke, tmp_path, "queued")
    serve_capabilities(fake, capabilities("1.0.0", tools=[SEARCH]))
    monkeypatch.setattr(lifecycle, "LIST_CAPABILITIES_BUDGET", 0.0)

    result = listing(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert ("GET", capabilities_path("1.0.0")) not in fake.calls()
    assert result.stdout.splitlines()[1] == f"{KEY}  1.0.0    up to date"
    assert result.stderr.strip() == (
        "warning: what 1 plugin(s) do now was not compared with what you accepted: the "
        "service took longer than 0 s"
    )


def test_one_read_per_installed_plugin(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    install_while(fake, invoke, tmp_path, "done", tools=[SEARCH])
    document = json.loads((tmp_path / "registry.json").read_text())
    for key in ("alpha", "beta"):
        document["plugins"][key] = dict(document["plugins"][KEY], version="3.0.0")
        fake.ok("GET", f"/api/v1/plugins/detail/{key}", {"latestVersion": "3.0.0"})
    (tmp_path / "registry.json").write_text(json.dumps(document))
    serve_capabilities(fake, capabilities("1.0.0", tools=[SEARCH]))

    result = listing(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    reads = [path for method, path in fake.calls() if "/capabilities/" in path]
    assert reads == [
        "/api/v1/plugins/capabilities/alpha/3.0.0",
        "/api/v1/plugins/capabilities/beta/3.0.0",
        capabilities_path("1.0.0"),
    ]
