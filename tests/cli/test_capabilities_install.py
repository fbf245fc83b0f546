"""`marketplace install` shows what the version does (CONTRACT 13) and records it as
accepted; capabilities the service cannot give never stop the install."""

from __future__ import annotations

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
    tool,
)
from .fake_api import FakeApi, envelope, error
from .helpers import Invoke, stdout_json

SEARCH = tool("search", "Search the web.\nReturns at most ten results.")
FETCH = tool("fetch", None)
SUMMARY = prompt("summarize", "Summarize a page")
OBSERVED: dict[str, list[Any]] = {
    "network": [
        {"host": "api.example.com", "port": 443},
        {"host": "api.example.com", "port": None},
    ],
    "filesWritten": ["/var/tmp/cache.db"],
    "processes": ["/usr/bin/curl"],
    "sensitiveReads": ["/home/u/.ssh/id_rsa"],
}


def install(invoke: Invoke, root: Path, *extra: str) -> Any:
    return invoke(["install", KEY, "--dir", str(root), *extra])


def test_install_shows_tools_prompts_permissions_and_what_was_observed(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_version(fake, "1.0.0", permissions=["network:api.example.com"])
    serve_capabilities(
        fake,
        capabilities(
            tools=[SEARCH, FETCH],
            prompts=[SUMMARY],
            declared=["network:api.example.com"],
            observed=OBSERVED,
            undeclared=["fs.write", "process.spawn", "secrets.read"],
        ),
    )

    result = install(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = lines.index(f"Inspection of {KEY} 1.0.0: done (server demo-server 0.3.0)")
    assert lines[start + 1 :] == [
        "Tools: 2",
        "  search  Search the web.",
        "  fetch   (no description)",
        "Prompts: 1",
        "  summarize  Summarize a page",
        "Permissions declared: network:api.example.com",
        "Observed when run in the sandbox:",
        "  network: api.example.com:443, api.example.com (look-up)",
        "  files written: /var/tmp/cache.db",
        "  programs: /usr/bin/curl",
        "  sensitive reads: /home/u/.ssh/id_rsa",
        "Observed but not declared: fs.write, process.spawn, secrets.read",
    ]
    assert fake.calls()[-2:] == [
        ("GET", capabilities_path("1.0.0")),
        ("POST", f"/api/v1/plugins/install/{KEY}"),
    ]
    # The capability read is public: no token goes with it.
    assert "authorization" not in fake.find("GET", capabilities_path("1.0.0")).headers


def test_install_records_what_it_showed_as_accepted(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_version(fake, "1.0.0")
    serve_capabilities(
        fake,
        capabilities(
            tools=[SEARCH, FETCH],
            prompts=[SUMMARY],
            declared=["network:api.example.com"],
            undeclared=["fs.write"],
        ),
    )

    assert install(invoke, tmp_path).exit_code == 0

    assert accepted(tmp_path) == {
        "version": "1.0.0",
        "status": "done",
        "tools": {"fetch": FETCH["fingerprint"], "search": SEARCH["fingerprint"]},
        "prompts": {"summarize": SUMMARY["fingerprint"]},
        "permissions": ["network:api.example.com", "fs.write"],
        "descriptions": {
            "tools": {"fetch": None, "search": SEARCH["description"]},
            "prompts": {"summarize": "Summarize a page"},
        },
    }


def test_install_json_carries_the_capabilities(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_version(fake, "1.0.0")
    data = capabilities(tools=[SEARCH], declared=["fs.write"], observed=OBSERVED)
    serve_capabilities(fake, data)

    result = install(invoke, tmp_path, "--json")

    assert result.exit_code == 0, result.output
    # A service without CONTRACT 14's `warnings` (this fake): none.
    assert stdout_json(result)["data"]["capabilities"] == {**data, "warnings": [], "error": None}


@pytest.mark.parametrize(
    ("status", "line"),
    [
        ("queued", "queued: its tools and what it does when it runs are not known yet"),
        ("running", "running: its tools and what it does when it runs are not known yet"),
        ("failed", "failed: its tools and what it does when it runs are not known"),
        ("not_applicable", "not applicable (no stdio MCP server to run): it has no tools to show"),
    ],
)
def test_an_inspection_not_done_is_said_plainly_and_recorded_as_such(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, status: str, line: str
) -> None:
    serve_version(fake, "1.0.0", permissions=["fs.write"])
    serve_capabilities(fake, capabilities(status=status, declared=["fs.write"]))

    result = install(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = lines.index(f"Inspection of {KEY} 1.0.0: {line}")
    assert lines[start + 1] == "Permissions declared: fs.write"
    assert "Tools:" not in result.stdout
    record = accepted(tmp_path)
    assert (record["status"], record["tools"], record["permissions"]) == (
        status,
        {},
        ["fs.write"],
    )


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (error(404, "NOT_FOUND", "Not Found"), "NOT_FOUND: Not Found (HTTP 404)"),
        (
            error(503, "SERVICE_UNAVAILABLE", "try later"),
            "SERVICE_UNAVAILABLE: try later (HTTP 503)",
        ),
        (
            httpx.ConnectError("connection refused"),
            "NETWORK_ERROR: cannot reach http://market.test: connection refused",
        ),
        (
            envelope(capabilities("9.9.9")),
            f"BAD_RESPONSE: capabilities: the answer is about {KEY} 9.9.9, not {KEY} 1.0.0",
        ),
        (
            envelope({**capabilities(), "tools": [{"name": "x"}]}),
            "BAD_RESPONSE: capabilities: an entry of `tools` has no name or fingerprint",
        ),
        (
            envelope({**capabilities(), "status": "maybe"}),
            "BAD_RESPONSE: capabilities: unknown inspection status maybe",
        ),
        (httpx.Response(200, text="<html>"), "BAD_RESPONSE: the service answered without its"),
    ],
    ids=[
        "no-route",
        "unavailable",
        "unreachable",
        "other-version",
        "bad-tool",
        "bad-status",
        "html",
    ],
)
def test_capabilities_the_service_cannot_give_leave_the_install_standing(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    answer: httpx.Response | Exception,
    reason: str,
) -> None:
    serve_version(fake, "1.0.0")
    fake.on("GET", capabilities_path("1.0.0"), answer)

    result = install(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert f"Installed {KEY} 1.0.0 (config_only)" in result.stdout
    [line] = [x for x in result.stdout.splitlines() if x.startswith("Capabilities of")]
    assert line.startswith(
        f"Capabilities of {KEY} 1.0.0: unknown (the service did not say: {reason}"
    )
    assert ("POST", f"/api/v1/plugins/install/{KEY}") in fake.calls()
    assert entry(tmp_path)["version"] == "1.0.0"
    assert accepted(tmp_path) == {
        "version": "1.0.0",
        "status": "unknown",
        "tools": {},
        "prompts": {},
        "permissions": [],
        "descriptions": {"tools": {}, "prompts": {}},
    }


def test_unknown_capabilities_in_json_say_why(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_version(fake, "1.0.0")
    fake.on("GET", capabilities_path("1.0.0"), error(403, "PLUGIN_VERSION_NOT_APPROVED", "no"))

    result = install(invoke, tmp_path, "--json")

    assert result.exit_code == 0, result.output
    shown = stdout_json(result)["data"]["capabilities"]
    assert (shown["status"], shown["observed"], shown["tools"]) == ("unknown", None, [])
    assert shown["error"] == {
        "code": "PLUGIN_VERSION_NOT_APPROVED",
        "message": "no",
        "details": {},
        "status": 403,
    }


def test_a_rate_limited_read_is_not_waited_for(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    serve_version(fake, "1.0.0")
    limited = httpx.Response(
        429,
        headers={"Retry-After": "30"},
        json={"success": False, "error": {"code": "RATE_LIMIT_EXCEEDED", "message": "slow"}},
    )
    fake.on("GET", capabilities_path("1.0.0"), limited)

    result = install(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert fake.calls().count(("GET", capabilities_path("1.0.0"))) == 1
    assert "unknown (the service did not say: RATE_LIMIT_EXCEEDED" in result.stdout


def test_text_from_the_plugin_is_printed_escaped(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    hostile = tool("ev\x1b[2Jil", "First\u202e line\x07\nsecond line")
    serve_version(fake, "1.0.0")
    serve_capabilities(
        fake,
        capabilities(
            tools=[hostile],
            observed={"network": [{"host": "::1\x1b]0;x", "port": 80}]},
            declared=["network:\x1b[31mred"],
        ),
    )

    result = install(invoke, tmp_path)

    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout
    assert "\u202e" not in result.stdout
    assert "  ev\\u001b[2Jil  First\\u202e line\\u0007" in result.stdout.splitlines()
    assert "second line" not in result.stdout
    assert "  network: [::1\\u001b]0;x]:80" in result.stdout.splitlines()
    assert "Permissions declared: network:\\u001b[31mred" in result.stdout.splitlines()
