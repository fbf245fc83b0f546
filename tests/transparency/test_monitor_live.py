"""`marketplace log verify` against a live service (CONTRACT 15, issue 27): the monitor
passes the service's real log, and finds its history rewritten behind the service's back in
the database (an entry rewritten, removed or inserted, the tree recomputed to fit), a fork
shown to it by a proxy (another log of the same size, signed with the service's own key) and
a checkpoint signed by a key the service does not list. Each time: exit 1, one line naming
the problem, the checkpoint it stored before unchanged. (A row merely deleted leaves a gap
the service serves as it is: the monitor names the missing entry.)

Runs on the run's database: SQLite (embedded) or PostgreSQL (the scaled-out topology).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pymerkle import InmemoryTree
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from marketplace.trust.keyring import new_key
from marketplace_rules.canonical import b64decode, b64encode, canonical_json
from marketplace_rules.merkle import CompactRange
from tests.e2e.market import Market
from tests.migrations import run_now
from tests.transparency.live_log import (
    CHECKPOINT,
    ENTRIES,
    Call,
    ForgedLog,
    LogProxy,
    LogRow,
    consistent_tables,
    envelope,
    log_market,
    log_proxy,
    monitor,
    publish,
    read_log,
    rewrite_log,
    served_checkpoint,
    served_entries,
    service_signing_key,
    stored_checkpoint,
    stored_checkpoints,
    tampered_log,
    write_rows,
)

pytestmark = pytest.mark.e2e

INCONSISTENT = 1
UNCHECKED = 2
CHANGED = "an entry was changed, removed or inserted"


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Market]:
    """A live service whose log holds a key, four approvals and a takedown."""
    root = tmp_path_factory.mktemp("monitor-market")
    with log_market(root) as live:
        for key, version in [
            ("watched", "1.0.0"),
            ("watched", "1.1.0"),
            ("watched-too", "1.0.0"),
            ("watched", "1.2.0"),
        ]:
            publish(live, root / "src", key, version)
        take_down(live, live.version("watched", "1.1.0")["id"])
        yield live


@pytest.fixture
def proxy(market: Market) -> Iterator[LogProxy]:
    with log_proxy(market.url) as running:
        yield running


def take_down(market: Market, version_id: str) -> None:
    market.request(
        "POST",
        f"/api/v1/admin/plugins/versions/{version_id}/takedown",
        json={"reason": "withdrawn for the monitor's tests"},
    )


def passed(result: subprocess.CompletedProcess[str]) -> str:
    """The one summary line of a run that verified the log."""
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    [line] = result.stdout.splitlines()
    return line


def assert_found(
    result: subprocess.CompletedProcess[str],
    code: str,
    message: str,
    config: Path,
    before: bytes | None,
    exit_code: int = INCONSISTENT,
) -> None:
    """Exit 1 (or `exit_code`), the one line `error: CODE: message`, nothing printed on
    stdout and the stored checkpoint as it was."""
    assert result.returncode == exit_code, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr == f"error: {code}: {message}\n"
    assert stored_checkpoints(config) == before


def verified_once(market: Market, backend: str, config: Path) -> dict[str, Any]:
    """A monitor's first run: it stores the checkpoint it verified; that checkpoint."""
    passed(monitor(market, backend, config))
    return stored_checkpoint(config, backend)


def seen(stored: dict[str, Any]) -> str:
    """How a message names the checkpoint a monitor stored."""
    return (
        f"the checkpoint of {stored['treeSize']} entries stored {stored['storedAt']} "
        f"(root {stored['rootHash']})"
    )


def root_of_rows(rows: list[LogRow]) -> str:
    size, compact = consistent_tables(rows).head
    return b64encode(CompactRange.from_bytes(size, compact).root())


def approval(key: str, version: str, key_id: str, *, at: str, sha256: str) -> LogRow:
    """An approval entry for a version no reviewer approved (its `index` set by its place)."""
    entry = {
        "action": "approve",
        "kind": "plugin",
        "key": key,
        "version": version,
        "distribution": "tarball",
        "sha256": sha256,
        "size": 276,
        "keyId": key_id,
        "at": at,
    }
    return LogRow("approve", f"forged-{key}-{version}", entry)


# --- the log holds ------------------------------------------------------------------------


def test_the_monitor_verifies_the_live_log_and_later_its_growth(
    market: Market, tmp_path: Path
) -> None:
    config = tmp_path / "monitor"
    served = served_checkpoint(market.url)

    first = passed(monitor(market, market.url, config))

    assert first == (
        f"log verified: {served['treeSize']} entries, root {served['rootHash']}; "
        f"first checkpoint stored for {market.url}"
    )
    stored = stored_checkpoint(config, market.url)
    assert stored == {**served, "storedAt": stored["storedAt"]}

    version_id = publish(market, tmp_path / "src", "watched-later", "1.0.0")
    take_down(market, version_id)
    grown = served_checkpoint(market.url)
    assert grown["treeSize"] == served["treeSize"] + 2

    again = passed(monitor(market, market.url, config))

    assert again == (
        f"log verified: {grown['treeSize']} entries, root {grown['rootHash']}, "
        f"consistent with {seen(stored)}"
    )
    later = stored_checkpoint(config, market.url)
    assert later == {**grown, "storedAt": later["storedAt"]}


def test_the_root_the_monitor_recomputes_is_pymerkles(market: Market, tmp_path: Path) -> None:
    """An independent RFC 6962 implementation over the entries the service serves gives the
    root of its signed checkpoint, the one the monitor reports and stores."""
    served = served_checkpoint(market.url)
    tree = InmemoryTree(algorithm="sha256")
    for entry in served_entries(market.url, served["treeSize"]):
        tree.append_entry(entry)

    assert tree.get_size() == served["treeSize"] >= 6
    assert tree.get_root() == b64decode(served["rootHash"])
    line = passed(monitor(market, market.url, tmp_path / "monitor"))
    assert f" root {b64encode(tree.get_root())};" in line
    assert stored_checkpoint(tmp_path / "monitor", market.url)["rootHash"] == served["rootHash"]


def test_the_log_tables_refuse_changes_while_their_triggers_stand(market: Market) -> None:
    """Why the attacks below disable the triggers first."""
    before = read_log(market.database_url)
    for statement in (
        "UPDATE log_entries SET subject = 'changed' WHERE log_index = 1",
        "DELETE FROM log_entries WHERE log_index = 1",
        "UPDATE log_nodes SET hash = hash WHERE node_id = 0",
        "DELETE FROM log_nodes WHERE node_id = 0",
    ):

        def change(connection: Connection, statement: str = statement) -> None:
            connection.execute(text(statement))

        with pytest.raises(DBAPIError, match="append-only"):
            run_now(market.database_url, change)
    assert read_log(market.database_url) == before


# --- the history rewritten in the database ---------------------------------------------------


@pytest.mark.parametrize("tree", ["recomputed", "left as it was"])
def test_a_rewritten_entry_is_found(market: Market, tmp_path: Path, tree: str) -> None:
    """An approval made to name other bytes. With the tree recomputed the service signs the
    rewritten history (a checkpoint consistent in itself); only the stored one shows it."""
    config = tmp_path / "monitor"
    stored = verified_once(market, market.url, config)
    before = stored_checkpoints(config)
    with tampered_log(market) as tables:
        rows = tables.rows()
        assert rows[1].entry["action"] == "approve"
        rows[1].entry["sha256"] = "0" * 64
        if tree == "recomputed":
            rewrite_log(market.database_url, rows)
            assert served_checkpoint(market.url)["rootHash"] == root_of_rows(rows)
        else:
            leaf = consistent_tables(rows).entries[1][3]
            write_rows(
                market.database_url,
                "UPDATE log_entries SET leaf = :leaf WHERE log_index = 1",
                leaf=leaf,
            )
            assert served_checkpoint(market.url)["rootHash"] == stored["rootHash"]

        result = monitor(market, market.url, config)

    message = (
        f"the first {stored['treeSize']} entries of the log of {market.url} have root "
        f"{root_of_rows(rows)}, not {seen(stored)}: {CHANGED}"
    )
    assert_found(result, "LOG_INCONSISTENT", message, config, before)
    passed(monitor(market, market.url, config))  # the log put back: it holds again


def test_a_removed_entry_renumbered_to_fit_is_found_as_a_log_that_shrank(
    market: Market, tmp_path: Path
) -> None:
    config = tmp_path / "monitor"
    stored = verified_once(market, market.url, config)
    before = stored_checkpoints(config)
    with tampered_log(market) as tables:
        rows = tables.rows()
        del rows[2]
        rewrite_log(market.database_url, rows)
        assert served_checkpoint(market.url)["treeSize"] == stored["treeSize"] - 1

        result = monitor(market, market.url, config)

    message = (
        f"the log of {market.url} shrank: it now signs {stored['treeSize'] - 1} entries, "
        f"after {seen(stored)}"
    )
    assert_found(result, "LOG_INCONSISTENT", message, config, before)


def test_a_removed_entry_whose_place_a_later_entry_made_up_is_found(
    market: Market, tmp_path: Path
) -> None:
    """The takedown removed and the history renumbered, then one more decision: the tree
    has the stored size again, and a different first part."""
    config = tmp_path / "monitor"
    stored = verified_once(market, market.url, config)
    before = stored_checkpoints(config)
    key_id = service_signing_key(market).key_id
    with tampered_log(market) as tables:
        rows = tables.rows()
        takedown = next(i for i, row in enumerate(rows) if row.action == "takedown")
        del rows[takedown]
        rows.append(
            approval("watched", "1.3.0", key_id, at="2026-11-27T23:00:00Z", sha256="ab" * 32)
        )
        rewrite_log(market.database_url, rows)
        assert served_checkpoint(market.url)["treeSize"] == stored["treeSize"]

        result = monitor(market, market.url, config)

    message = (
        f"the first {stored['treeSize']} entries of the log of {market.url} have root "
        f"{root_of_rows(rows)}, not {seen(stored)}: {CHANGED}"
    )
    assert_found(result, "LOG_INCONSISTENT", message, config, before)


def test_an_inserted_entry_renumbered_to_fit_is_found(market: Market, tmp_path: Path) -> None:
    """A backdated approval slipped in after the key's entry: the tree grew by one, a
    checkpoint signed over it, and the stored size's first part changed."""
    config = tmp_path / "monitor"
    stored = verified_once(market, market.url, config)
    before = stored_checkpoints(config)
    key_id = service_signing_key(market).key_id
    with tampered_log(market) as tables:
        rows = tables.rows()
        rows.insert(
            1, approval("watched", "0.9.0", key_id, at="2026-01-01T00:00:00Z", sha256="cd" * 32)
        )
        rewrite_log(market.database_url, rows)
        assert served_checkpoint(market.url)["treeSize"] == stored["treeSize"] + 1

        result = monitor(market, market.url, config)

    message = (
        f"the first {stored['treeSize']} entries of the log of {market.url} have root "
        f"{root_of_rows(rows[: stored['treeSize']])}, not {seen(stored)}: {CHANGED}"
    )
    assert_found(result, "LOG_INCONSISTENT", message, config, before)


def test_an_entry_deleted_without_renumbering_is_found_missing(
    market: Market, tmp_path: Path
) -> None:
    """A row simply deleted leaves a gap: the service serves the page as its table holds
    it, and the monitor names the entry the signed checkpoint covers but nobody serves."""
    config = tmp_path / "monitor"
    verified_once(market, market.url, config)
    before = stored_checkpoints(config)
    with tampered_log(market):
        write_rows(market.database_url, "DELETE FROM log_entries WHERE log_index = 2")

        result = monitor(market, market.url, config)

    size = served_checkpoint(market.url)["treeSize"]
    last = min(size, 1000) - 1
    message = (
        f"entries 0 to {last} of the log: entry 2 is missing: the signed checkpoint covers "
        "it, the service does not serve it"
    )
    assert_found(result, "LOG_ENTRY_MISSING", message, config, before)


# --- another log shown through a proxy ------------------------------------------------------


def forked_log(market: Market) -> ForgedLog:
    """The service's log of now with another approval in the place of entry 2, signed with
    the service's own key: same size, another root."""
    served = served_checkpoint(market.url)
    entries = served_entries(market.url, served["treeSize"])
    changed = json.loads(entries[2])
    assert changed["action"] == "approve"
    changed["sha256"] = "ef" * 32
    entries[2] = canonical_json(changed)
    return ForgedLog(served["origin"], entries, service_signing_key(market))


def test_a_fork_of_the_stored_size_is_found(
    market: Market, proxy: LogProxy, tmp_path: Path
) -> None:
    """Monitor A saw the real log through the proxy; then the proxy shows it another tree of
    the same size, correctly signed by the service's key. A refuses. Monitor B, shown only
    the fork, cannot tell (first use): its checkpoint and A's, of one size and two roots,
    both signed by the service, are the proof of a split view once compared, and B refuses
    the real log when it is shown it."""
    config_a, config_b = tmp_path / "monitor-a", tmp_path / "monitor-b"
    stored_a = verified_once(market, proxy.url, config_a)
    before_a = stored_checkpoints(config_a)
    fork = forked_log(market)
    forked = fork.checkpoint()
    assert forked["treeSize"] == stored_a["treeSize"]
    proxy.answer = fork.answer

    result = monitor(market, proxy.url, config_a)

    message = (
        f"the first {stored_a['treeSize']} entries of the log of {proxy.url} have root "
        f"{forked['rootHash']}, not {seen(stored_a)}: {CHANGED}"
    )
    assert_found(result, "LOG_INCONSISTENT", message, config_a, before_a)
    assert ("GET", ENTRIES) in proxy.seen

    stored_b = verified_once(market, proxy.url, config_b)
    assert stored_b == {**forked, "storedAt": stored_b["storedAt"]}
    assert stored_b["keyId"] == stored_a["keyId"] == service_signing_key(market).key_id
    assert stored_b["treeSize"] == stored_a["treeSize"]
    assert stored_b["rootHash"] != stored_a["rootHash"]

    proxy.answer = None
    before_b = stored_checkpoints(config_b)
    result = monitor(market, proxy.url, config_b)

    message = (
        f"the first {stored_b['treeSize']} entries of the log of {proxy.url} have root "
        f"{stored_a['rootHash']}, not {seen(stored_b)}: {CHANGED}"
    )
    assert_found(result, "LOG_INCONSISTENT", message, config_b, before_b)


@pytest.mark.parametrize("key_id", ["its own", "the service's"])
def test_a_checkpoint_signed_by_another_key_is_found(
    market: Market, proxy: LogProxy, tmp_path: Path, key_id: str
) -> None:
    """The real checkpoint re-signed by a fresh key: under that key's id (a key the service
    does not list), or under the service's key id (a signature that does not verify)."""
    config = tmp_path / "monitor"
    stored = verified_once(market, proxy.url, config)
    before = stored_checkpoints(config)
    fresh = new_key(service_signing_key(market).created_at)
    served = served_checkpoint(market.url)
    service_key = served["keyId"]
    claimed = fresh.key_id if key_id == "its own" else service_key
    resigned = ForgedLog(
        served["origin"], served_entries(market.url, served["treeSize"]), fresh
    ).checkpoint(claimed)
    assert {k: resigned[k] for k in ("treeSize", "rootHash")} == {
        k: stored[k] for k in ("treeSize", "rootHash")
    }

    def answer(call: Call) -> httpx.Response | None:
        return envelope(resigned) if call.path == CHECKPOINT else None

    proxy.answer = answer

    result = monitor(market, proxy.url, config)

    if key_id == "its own":
        code = "LOG_KEY_UNKNOWN"
        message = (
            f"the log checkpoint of {proxy.url} is signed by key {fresh.key_id}, which the "
            "service does not list"
        )
    else:
        code = "LOG_CHECKPOINT_INVALID"
        message = (
            f"the signature of the log checkpoint of {proxy.url} ({served['treeSize']} "
            f"entries) does not verify with key {service_key}"
        )
    assert_found(result, code, message, config, before)
