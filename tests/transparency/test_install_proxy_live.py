"""`marketplace install` against a live service through a proxy that lies about the
transparency log (CONTRACT 15, issue 27): an inclusion proof forged, an approval entry that
is not the release's, a log forked from the one the client saw. Each is refused before
anything is written: exit 3, one line, no plugin folder, the registry and the stored
checkpoint as they were, no install reported. The same install through no proxy, and
through the proxy when it changes nothing, succeeds.

Runs on the run's database: SQLite (embedded) or PostgreSQL (the scaled-out topology).
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from marketplace_rules.canonical import b64encode, canonical_json
from tests.e2e.market import Market
from tests.transparency.live_log import (
    ENTRIES,
    INCLUSION,
    Call,
    ForgedLog,
    LogProxy,
    client_env,
    envelope,
    log_market,
    log_proxy,
    publish,
    served_checkpoint,
    served_entries,
    service_signing_key,
    stored_checkpoint,
    stored_checkpoints,
)

pytestmark = pytest.mark.e2e

TRUST_EXIT = 3
KEY = "proxied"
OLD, NEW = "1.0.0", "2.0.0"
DOWNLOAD = f"/api/v1/plugins/download/{KEY}/{NEW}"
REPORT = f"/api/v1/plugins/install/{KEY}"
WHAT = f"{KEY} {NEW}"


@dataclass(frozen=True)
class Logged:
    """Where the approvals of the two versions are in the live log."""

    old: int
    new: int


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Market]:
    root = tmp_path_factory.mktemp("install-proxy-market")
    with log_market(root) as live:
        for version in (OLD, NEW):
            publish(live, root / "src", KEY, version)
        yield live


@pytest.fixture(scope="module")
def logged(market: Market) -> Logged:
    def index(version: str) -> int:
        release = market.download_info(market.version(KEY, version)["id"])["release"]
        log_index: int = release["logIndex"]
        return log_index

    return Logged(old=index(OLD), new=index(NEW))


@pytest.fixture(scope="module")
def token(market: Market) -> str:
    return market.new_user("proxied-user")


@pytest.fixture
def proxy(market: Market) -> Iterator[LogProxy]:
    with log_proxy(market.url) as running:
        yield running


def install(
    market: Market, backend: str, token: str, target: Path, config: Path, version: str = NEW
) -> subprocess.CompletedProcess[str]:
    return market.cli(
        "install", KEY, "--version", version, "--dir", str(target),
        "--backend", backend, "--token", token,
        env=client_env(market, config),
    )  # fmt: skip


def registry(target: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((target / "registry.json").read_text())
    return document


def assert_installed(
    result: subprocess.CompletedProcess[str], target: Path, version: str = NEW
) -> None:
    assert result.returncode == 0, result.stderr
    assert (target / KEY / version / "manifest.json").is_file()
    assert registry(target)["plugins"][KEY]["version"] == version


@dataclass(frozen=True)
class Before:
    """A client that installed the old version through the proxy while it changed nothing:
    its install folder, its configuration folder, and what a refusal must leave as is."""

    target: Path
    config: Path
    registry: bytes
    checkpoints: bytes


@pytest.fixture
def before(market: Market, proxy: LogProxy, token: str, tmp_path: Path) -> Before:
    target, config = tmp_path / "plugins", tmp_path / "config"
    assert_installed(install(market, proxy.url, token, target, config, OLD), target, OLD)
    checkpoints = stored_checkpoints(config)
    assert checkpoints is not None
    proxy.seen.clear()
    return Before(target, config, (target / "registry.json").read_bytes(), checkpoints)


def assert_refused(
    result: subprocess.CompletedProcess[str],
    code: str,
    message: str,
    before: Before,
    proxy: LogProxy,
) -> None:
    """Exit 3, one line naming the problem, and nothing written or reported: the old
    version installed as it was, the registry and the stored checkpoint unchanged."""
    assert result.returncode == TRUST_EXIT, (result.stdout, result.stderr)
    assert result.stderr == f"error: {code}: {message}; nothing was installed\n"
    assert not (before.target / KEY / NEW).exists()
    assert sorted(p.name for p in (before.target / KEY).iterdir()) == [OLD]
    assert (before.target / "registry.json").read_bytes() == before.registry
    assert stored_checkpoints(before.config) == before.checkpoints
    assert ("POST", REPORT) not in proxy.seen


def flip(value: str) -> str:
    """The base64 of the same bytes with the first one changed."""
    raw = bytearray(base64.b64decode(value))
    raw[0] ^= 1
    return b64encode(bytes(raw))


def not_proven(market: Market, logged: Logged) -> str:
    served = served_checkpoint(market.url)
    return (
        f"the approval of {WHAT} (entry {logged.new}) is not proven to be in the log of "
        f"{served['treeSize']} entries with root {served['rootHash']}"
    )


# --- what holds -----------------------------------------------------------------------------


def test_the_install_through_no_proxy_succeeds_and_stores_the_checkpoint(
    market: Market, token: str, tmp_path: Path
) -> None:
    target, config = tmp_path / "plugins", tmp_path / "config"

    assert_installed(install(market, market.url, token, target, config), target)

    stored = stored_checkpoint(config, market.url)
    assert stored == {**served_checkpoint(market.url), "storedAt": stored["storedAt"]}


def test_the_install_through_a_proxy_that_changes_nothing_succeeds(
    market: Market, proxy: LogProxy, token: str, before: Before
) -> None:
    """The proxy itself is sound: what is refused below is refused for the lie."""
    result = install(market, proxy.url, token, before.target, before.config)

    assert_installed(result, before.target)
    for path in (DOWNLOAD, ENTRIES, INCLUSION, REPORT):
        assert any(seen == path for _, seen in proxy.seen), path


# --- the inclusion proof --------------------------------------------------------------------


def test_an_inclusion_proof_with_a_hash_flipped_is_refused(
    market: Market, proxy: LogProxy, token: str, before: Before, logged: Logged
) -> None:
    def answer(call: Call) -> httpx.Response | None:
        if call.path != INCLUSION:
            return None
        proof = call.forwarded_data()
        proof["hashes"][0] = flip(proof["hashes"][0])
        return envelope(proof)

    proxy.answer = answer

    result = install(market, proxy.url, token, before.target, before.config)

    assert ("GET", INCLUSION) in proxy.seen
    assert_refused(result, "LOG_INCLUSION_INVALID", not_proven(market, logged), before, proxy)


def test_the_inclusion_proof_of_another_entry_is_refused(
    market: Market, proxy: LogProxy, token: str, before: Before, logged: Logged
) -> None:
    """The real proof of the old version's approval, given as the new one's."""

    def answer(call: Call) -> httpx.Response | None:
        if call.path != INCLUSION:
            return None
        assert call.params["index"] == str(logged.new)
        other = httpx.get(
            market.url + INCLUSION,
            params={"index": logged.old, "treeSize": call.params["treeSize"]},
        )
        return envelope({**other.json()["data"], "index": logged.new})

    proxy.answer = answer

    result = install(market, proxy.url, token, before.target, before.config)

    assert ("GET", INCLUSION) in proxy.seen
    assert_refused(result, "LOG_INCLUSION_INVALID", not_proven(market, logged), before, proxy)


def test_an_inclusion_proof_answered_for_another_index_is_refused(
    market: Market, proxy: LogProxy, token: str, before: Before, logged: Logged
) -> None:
    """The real proof of another entry, saying so: not the proof asked for."""
    size = served_checkpoint(market.url)["treeSize"]

    def answer(call: Call) -> httpx.Response | None:
        if call.path != INCLUSION:
            return None
        other = httpx.get(market.url + INCLUSION, params={"index": logged.old, "treeSize": size})
        return httpx.Response(
            200, content=other.content, headers={"content-type": "application/json"}
        )

    proxy.answer = answer

    result = install(market, proxy.url, token, before.target, before.config)

    message = (
        f"the inclusion proof of entry {logged.new} in {size} entries: asked for index "
        f"{logged.new}, the answer is for {logged.old}"
    )
    assert_refused(result, "LOG_ANSWER_INVALID", message, before, proxy)


# --- the approval entry ---------------------------------------------------------------------


def test_a_log_index_pointing_at_another_versions_approval_is_refused(
    market: Market, proxy: LogProxy, token: str, before: Before, logged: Logged
) -> None:
    """The download info's logIndex (not signed: the proof binds it) moved to the old
    version's approval: a real entry, in the log, with a valid proof, that is not this
    release."""

    def answer(call: Call) -> httpx.Response | None:
        if call.path != DOWNLOAD:
            return None
        info = call.forwarded_data()
        info["release"]["logIndex"] = logged.old
        return envelope(info)

    proxy.answer = answer

    result = install(market, proxy.url, token, before.target, before.config)

    message = (
        f"log entry {logged.old} says version '{OLD}', the signed release of {WHAT} says '{NEW}'"
    )
    assert_refused(result, "LOG_ENTRY_MISMATCH", message, before, proxy)


def test_a_log_index_pointing_at_a_key_entry_is_refused(
    market: Market, proxy: LogProxy, token: str, before: Before
) -> None:
    def answer(call: Call) -> httpx.Response | None:
        if call.path != DOWNLOAD:
            return None
        info = call.forwarded_data()
        info["release"]["logIndex"] = 0
        return envelope(info)

    proxy.answer = answer

    result = install(market, proxy.url, token, before.target, before.config)

    message = f"log entry 0, given as the approval of {WHAT}, is a 'key-add' entry"
    assert_refused(result, "LOG_ENTRY_MISMATCH", message, before, proxy)


def test_another_versions_entry_served_in_place_of_the_approval_is_refused(
    market: Market, proxy: LogProxy, token: str, before: Before, logged: Logged
) -> None:
    size = served_checkpoint(market.url)["treeSize"]
    old_entry = b64encode(served_entries(market.url, size)[logged.old])

    def answer(call: Call) -> httpx.Response | None:
        if call.path != ENTRIES or call.params["start"] != str(logged.new):
            return None
        return envelope({"items": [{"index": logged.new, "entry": old_entry}]})

    proxy.answer = answer

    result = install(market, proxy.url, token, before.target, before.config)

    assert ("GET", ENTRIES) in proxy.seen
    message = f"log entry {logged.new} says it is entry {logged.old}"
    assert_refused(result, "LOG_ENTRY_INVALID", message, before, proxy)


# --- a log forked from the one the client saw -------------------------------------------------


def test_a_fork_of_the_stored_size_is_refused(
    market: Market, proxy: LogProxy, token: str, before: Before, logged: Logged
) -> None:
    """Another tree of the size this client stored, signed with the service's key, in which
    the new version's approval is really included: only the stored checkpoint shows it."""
    stored = stored_checkpoint(before.config, proxy.url)
    entries = served_entries(market.url, stored["treeSize"])
    changed = json.loads(entries[logged.old])
    changed["sha256"] = "ef" * 32
    entries[logged.old] = canonical_json(changed)
    fork = ForgedLog(stored["origin"], entries, service_signing_key(market))
    forked = fork.checkpoint()
    assert forked["treeSize"] == stored["treeSize"] and forked["rootHash"] != stored["rootHash"]
    proxy.answer = fork.answer

    result = install(market, proxy.url, token, before.target, before.config)

    message = (
        f"the log of {proxy.url} forked: it signs {forked['treeSize']} entries with root "
        f"{forked['rootHash']}, not the checkpoint of {stored['treeSize']} entries stored "
        f"{stored['storedAt']} (root {stored['rootHash']})"
    )
    assert ("GET", INCLUSION) in proxy.seen  # the proof in the forked tree was checked first
    assert_refused(result, "LOG_INCONSISTENT", message, before, proxy)
