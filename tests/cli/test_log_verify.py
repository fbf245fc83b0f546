"""`marketplace log verify`: the monitor of the transparency log (CONTRACT 15) against the
fake service's log.

Exit 0 and one summary line when the log holds; 1 and the first inconsistency when it does
not (an entry changed, removed or inserted, a fork, a log that shrank, a bad signature or an
unknown key); 2 when it could not check. Nothing is stored on 1 or 2.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import Result

from marketplace_client.transparency import CHECKPOINT_PATH, ENTRIES_PATH
from marketplace_rules.canonical import b64encode
from marketplace_rules.merkle import leaf_hash, root_of

from .fake_api import FakeApi, envelope, error
from .helpers import BACKEND, Invoke, stdout_json
from .signing import KEYS, FakeSigner, log_entry

INCONSISTENT = 1
UNCHECKED = 2


@pytest.fixture
def signer(fake: FakeApi) -> FakeSigner:
    """A service whose log holds a key entry and three approvals."""
    service = FakeSigner()
    key_id = service.key_id(service.keys[0])
    service.log.append("key-add", keyId=key_id, at="2026-11-01T00:00:00Z")
    for version in ("1.0.0", "1.1.0", "2.0.0"):
        approve(service, version)
    service.serve_keys(fake)
    service.serve_log(fake)
    return service


@pytest.fixture
def checkpoints(isolated_env: Path) -> Path:
    return isolated_env / "log-checkpoints.json"


def approve(signer: FakeSigner, version: str, key: str = "demo-plugin") -> None:
    signer.log.append(
        "approve",
        kind="plugin",
        key=key,
        version=version,
        distribution="tarball",
        sha256=version.replace(".", "") * 8,
        size=100,
        keyId=signer.key_id(signer.keys[-1]),
        at="2026-11-22T08:00:00Z",
    )


def verify(invoke: Invoke, *extra: str) -> Result:
    return invoke(["log", "verify", "--backend", BACKEND, *extra], auth=False)


def stored(checkpoints: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(checkpoints.read_text())["backends"][BACKEND]
    return document


def verified_once(invoke: Invoke, fake: FakeApi, checkpoints: Path) -> bytes:
    result = verify(invoke)
    assert result.exit_code == 0, result.output
    fake.requests.clear()
    return checkpoints.read_bytes()


def saved_files(checkpoints: Path) -> dict[str, bytes]:
    """The monitor's configuration folder, file by file (what exits 1 and 2 must not touch)."""
    folder = checkpoints.parent
    if not folder.exists():
        return {}
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def assert_failed(
    result: Result,
    exit_code: int,
    code: str,
    message: str | None,
    checkpoints: Path,
    before: dict[str, bytes],
) -> None:
    """Failed with one line on stderr, nothing on stdout, and the configuration untouched."""
    assert result.exit_code == exit_code, result.output
    assert result.stdout == ""
    if message is None:
        assert result.stderr.startswith(f"error: {code}: "), result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
    else:
        assert result.stderr == f"error: {code}: {message}\n"
    assert saved_files(checkpoints) == before


def root_b64(entries: list[bytes]) -> str:
    return b64encode(root_of(leaf_hash(entry) for entry in entries))


def renumbered(entries: list[bytes]) -> list[bytes]:
    """The entries with their indexes rewritten to their positions (a careful forger)."""
    fixed = []
    for position, data in enumerate(entries):
        entry = json.loads(data)
        entry["index"] = position
        fixed.append(log_entry(**entry))
    return fixed


# --- the log holds ---------------------------------------------------------------------------


def test_a_first_run_verifies_every_entry_and_stores_the_checkpoint(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    result = verify(invoke)
    assert result.exit_code == 0, result.output
    served = signer.checkpoint()
    assert result.stdout == (
        f"log verified: 4 entries, root {served['rootHash']}; first checkpoint stored for "
        f"{BACKEND}\n"
    )
    assert result.stderr == ""
    document = stored(checkpoints)
    assert document == {**served, "storedAt": document["storedAt"]}
    assert fake.find("GET", ENTRIES_PATH).params == {"start": "0", "end": "4"}
    pins = json.loads((checkpoints.parent / "trusted-keys.json").read_text())
    assert set(pins["backends"][BACKEND]) == {signer.key_id(signer.keys[0])}
    assert all("authorization" not in r.headers for r in fake.requests)


def test_a_later_run_checks_the_stored_prefix_and_stores_the_bigger_checkpoint(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    verified_once(invoke, fake, checkpoints)
    first = stored(checkpoints)
    approve(signer, "3.0.0")
    result = verify(invoke)
    assert result.exit_code == 0, result.output
    served = signer.checkpoint()
    assert result.stdout == (
        f"log verified: 5 entries, root {served['rootHash']}, consistent with the checkpoint "
        f"of 4 entries stored {first['storedAt']} (root {first['rootHash']})\n"
    )
    assert stored(checkpoints)["treeSize"] == 5
    assert stored(checkpoints)["rootHash"] == served["rootHash"]


def test_the_log_is_read_in_pages_of_a_thousand(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    for number in range(2496):
        approve(signer, f"0.0.{number}", key=f"plugin-{number % 7}")
    result = verify(invoke)
    assert result.exit_code == 0, result.output
    pages = [r.params for r in fake.requests if r.path == ENTRIES_PATH]
    assert pages == [
        {"start": "0", "end": "1000"},
        {"start": "1000", "end": "2000"},
        {"start": "2000", "end": "2500"},
    ]
    assert stored(checkpoints)["treeSize"] == 2500


def test_json_prints_the_checkpoint_and_the_one_it_was_compared_with(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    verified_once(invoke, fake, checkpoints)
    first = stored(checkpoints)
    approve(signer, "3.0.0")
    result = verify(invoke, "--json")
    assert result.exit_code == 0, result.output
    served = signer.checkpoint()
    assert stdout_json(result) == {
        "success": True,
        "data": {
            "backend": BACKEND,
            **served,
            "previous": {
                "treeSize": 4,
                "rootHash": first["rootHash"],
                "storedAt": first["storedAt"],
            },
        },
    }


def test_an_empty_log_verifies(fake: FakeApi, invoke: Invoke, checkpoints: Path) -> None:
    service = FakeSigner()
    service.serve_keys(fake)
    service.serve_log(fake)
    result = verify(invoke)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("log verified: 0 entries, root ")
    assert ("GET", ENTRIES_PATH) not in fake.calls()
    assert stored(checkpoints)["treeSize"] == 0


# --- the log does not hold: exit 1 -----------------------------------------------------------


def test_a_rewritten_entry_is_found_at_the_stored_size(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    verified_once(invoke, fake, checkpoints)
    first = stored(checkpoints)
    before = saved_files(checkpoints)
    entry = json.loads(signer.log.entries[2])
    entry["sha256"] = "0" * 64  # another package approved, as the service now tells it
    signer.log.entries[2] = log_entry(**entry)
    approve(signer, "3.0.0")  # and a checkpoint signed over the rewritten history
    result = verify(invoke)
    message = (
        f"the first 4 entries of the log of {BACKEND} have root "
        f"{root_b64(signer.log.entries[:4])}, not the checkpoint of 4 entries stored "
        f"{first['storedAt']} (root {first['rootHash']}): an entry was changed, removed or "
        "inserted"
    )
    assert_failed(result, INCONSISTENT, "LOG_INCONSISTENT", message, checkpoints, before)


@pytest.mark.parametrize("change", ["removed", "inserted"])
def test_a_removed_or_inserted_entry_renumbered_to_fit_is_found(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path, change: str
) -> None:
    verified_once(invoke, fake, checkpoints)
    before = saved_files(checkpoints)
    entries = list(signer.log.entries)
    if change == "removed":
        del entries[1]
        approve_into = 2  # two more, so the tree is bigger than the stored one again
    else:
        entries.insert(1, log_entry(1, "takedown", kind="plugin", key="demo-plugin"))
        approve_into = 0
    signer.log.entries = renumbered(entries)
    for number in range(approve_into):
        approve(signer, f"9.0.{number}")
    result = verify(invoke)
    assert_failed(result, INCONSISTENT, "LOG_INCONSISTENT", None, checkpoints, before)
    assert "an entry was changed, removed or inserted" in result.stderr


def test_a_removed_entry_leaves_a_gap_in_the_indexes(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    before = saved_files(checkpoints)
    del signer.log.entries[1]
    result = verify(invoke)
    message = "log entry 1 says it is entry 2"
    assert_failed(result, INCONSISTENT, "LOG_ENTRY_INVALID", message, checkpoints, before)


def test_a_page_short_of_an_entry_the_checkpoint_covers_is_found(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    """A row deleted from the service's table without renumbering: the page lacks it."""
    items = [{"index": i, "entry": b64encode(e)} for i, e in enumerate(signer.log.entries)]
    del items[2]
    fake.ok("GET", ENTRIES_PATH, {"items": items})
    result = verify(invoke)
    message = (
        "entries 0 to 3 of the log: entry 2 is missing: the signed checkpoint covers it, "
        "the service does not serve it"
    )
    assert_failed(result, INCONSISTENT, "LOG_ENTRY_MISSING", message, checkpoints, {})


def test_a_fork_of_the_stored_size_is_found(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    verified_once(invoke, fake, checkpoints)
    first = stored(checkpoints)
    before = saved_files(checkpoints)
    entry = json.loads(signer.log.entries[3])
    entry["version"] = "2.0.1"
    signer.log.entries[3] = log_entry(**entry)  # same size, another root, signed
    result = verify(invoke)
    assert signer.checkpoint()["treeSize"] == first["treeSize"]
    message = (
        f"the first 4 entries of the log of {BACKEND} have root {signer.checkpoint()['rootHash']}"
        f", not the checkpoint of 4 entries stored {first['storedAt']} (root "
        f"{first['rootHash']}): an entry was changed, removed or inserted"
    )
    assert_failed(result, INCONSISTENT, "LOG_INCONSISTENT", message, checkpoints, before)


def test_a_log_that_shrank_is_found_before_reading_it(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    verified_once(invoke, fake, checkpoints)
    first = stored(checkpoints)
    before = saved_files(checkpoints)
    del signer.log.entries[3:]
    result = verify(invoke)
    message = (
        f"the log of {BACKEND} shrank: it now signs 3 entries, after the checkpoint of 4 "
        f"entries stored {first['storedAt']} (root {first['rootHash']})"
    )
    assert_failed(result, INCONSISTENT, "LOG_INCONSISTENT", message, checkpoints, before)
    assert ("GET", ENTRIES_PATH) not in fake.calls()


def test_entries_that_do_not_make_the_signed_root_are_found(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    verified_once(invoke, fake, checkpoints)
    before = saved_files(checkpoints)
    approve(signer, "3.0.0")
    signed = signer.checkpoint()
    fake.ok("GET", CHECKPOINT_PATH, signed)
    entry = json.loads(signer.log.entries[4])
    entry["sha256"] = "f" * 64  # served after the checkpoint that covers it was signed
    signer.log.entries[4] = log_entry(**entry)
    result = verify(invoke)
    message = (
        f"the 5 entries of the log of {BACKEND} have root {root_b64(signer.log.entries)}, "
        f"the signed checkpoint says {signed['rootHash']}"
    )
    assert_failed(result, INCONSISTENT, "LOG_ROOT_MISMATCH", message, checkpoints, before)


def test_a_checkpoint_signed_by_a_key_the_service_does_not_list_is_found(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    before = saved_files(checkpoints)
    stranger = FakeSigner()
    stranger.log = signer.log
    fake.ok("GET", CHECKPOINT_PATH, stranger.checkpoint())
    result = verify(invoke)
    message = (
        f"the log checkpoint of {BACKEND} is signed by key {stranger.key_id(stranger.keys[0])}, "
        "which the service does not list"
    )
    assert_failed(result, INCONSISTENT, "LOG_KEY_UNKNOWN", message, checkpoints, before)
    assert before == {}  # nothing pinned either


def test_a_checkpoint_whose_signature_does_not_verify_is_found(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    verified_once(invoke, fake, checkpoints)
    before = saved_files(checkpoints)
    approve(signer, "3.0.0")
    checkpoint = signer.checkpoint()
    raw = bytearray(base64.b64decode(checkpoint["signature"]))
    raw[10] ^= 0x40
    checkpoint["signature"] = b64encode(bytes(raw))
    fake.ok("GET", CHECKPOINT_PATH, checkpoint)
    result = verify(invoke)
    message = (
        f"the signature of the log checkpoint of {BACKEND} (5 entries) does not verify with "
        f"key {signer.key_id(signer.keys[0])}"
    )
    assert_failed(result, INCONSISTENT, "LOG_CHECKPOINT_INVALID", message, checkpoints, before)


def test_a_pinned_key_the_service_stops_listing_is_found(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    verified_once(invoke, fake, checkpoints)
    before = saved_files(checkpoints)
    pinned = signer.key_id(signer.keys[0])
    signer.rotate()
    fake.ok("GET", KEYS, signer.listing([signer.keys[1]]))
    result = verify(invoke, "--json")
    assert result.exit_code == INCONSISTENT
    assert stdout_json(result)["error"]["code"] == "KEY_WITHDRAWN"
    assert f"key {pinned}, trusted earlier for {BACKEND}, is no longer listed" in result.stderr
    assert saved_files(checkpoints) == before


def test_an_entry_that_is_not_a_contract_entry_is_found(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    signer.log.entries[2] = b'{"index":2,"action":"approve"}'
    result = verify(invoke)
    message = "log entry 2 does not have the contract's fields"
    assert_failed(result, INCONSISTENT, "LOG_ENTRY_INVALID", message, checkpoints, {})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        # An unhashable action: refused in one line, never a traceback.
        (
            log_entry(2, "approve").replace(b'"action":"approve"', b'"action":["approve"]'),
            "log entry 2 has an unknown action ['approve']",
        ),
        # Two spellings of one entry: a duplicate key, which parsers read differently.
        (
            log_entry(2, "takedown").replace(b"{", b'{"action":"approve",', 1),
            "log entry 2 is not canonical JSON",
        ),
        (log_entry(2, "approve").replace(b",", b", ", 1), "log entry 2 is not canonical JSON"),
    ],
    ids=["list-action", "duplicate-key", "spaced"],
)
def test_an_entry_spelled_otherwise_than_canonically_is_found(
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    checkpoints: Path,
    entry: bytes,
    message: str,
) -> None:
    signer.log.entries[2] = entry
    result = verify(invoke)
    assert_failed(result, INCONSISTENT, "LOG_ENTRY_INVALID", message, checkpoints, {})


def test_a_log_that_changes_its_origin_is_found(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    verified_once(invoke, fake, checkpoints)
    before = saved_files(checkpoints)
    served = signer.checkpoint()
    fake.ok("GET", CHECKPOINT_PATH, signer.checkpoint(origin="elsewhere.test/log"))
    result = verify(invoke)
    assert_failed(result, INCONSISTENT, "LOG_INCONSISTENT", None, checkpoints, before)
    assert "now names itself 'elsewhere.test/log', not" in result.stderr
    assert served["origin"] != "elsewhere.test/log"


# --- could not check: exit 2 ------------------------------------------------------------------


def test_an_unreachable_service_is_exit_2(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    verified_once(invoke, fake, checkpoints)
    before = saved_files(checkpoints)
    fake.on("GET", CHECKPOINT_PATH, httpx.ConnectError("connection refused"))
    result = verify(invoke)
    message = (
        f"cannot read {CHECKPOINT_PATH} from {BACKEND}: NETWORK_ERROR: cannot reach {BACKEND}: "
        "connection refused"
    )
    assert_failed(result, UNCHECKED, "LOG_UNAVAILABLE", message, checkpoints, before)


@pytest.mark.parametrize(
    ("path", "answer", "code", "shown"),
    [
        (
            CHECKPOINT_PATH,
            httpx.Response(200, content=b"<html>"),
            "LOG_UNAVAILABLE",
            "BAD_RESPONSE",
        ),
        (CHECKPOINT_PATH, error(500, "INTERNAL_ERROR", "boom"), "LOG_UNAVAILABLE", "HTTP 500"),
        (KEYS, error(503, "UNAVAILABLE", "later"), "LOG_UNAVAILABLE", "HTTP 503"),
        (KEYS, envelope({"items": "none"}), "LOG_ANSWER_INVALID", "did not answer a key list"),
        (ENTRIES_PATH, error(400, "VALIDATION_FAILED", "past"), "LOG_UNAVAILABLE", "HTTP 400"),
        (ENTRIES_PATH, envelope({"items": None}), "LOG_ANSWER_INVALID", "the answer has no"),
        (CHECKPOINT_PATH, envelope({"treeSize": -4}), "LOG_ANSWER_INVALID", "`origin` is not"),
        (
            CHECKPOINT_PATH,
            httpx.Response(200, content=b"[" * 100_000 + b"]" * 100_000),
            "LOG_UNAVAILABLE",
            "BAD_RESPONSE",
        ),
    ],
    ids=[
        "not-json",
        "500",
        "keys-503",
        "keys-garbage",
        "entries-400",
        "no-page",
        "not-a-checkpoint",
        "nested-past-the-stack",
    ],
)
def test_an_answer_that_cannot_be_checked_is_exit_2_and_stores_nothing(
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    checkpoints: Path,
    path: str,
    answer: httpx.Response,
    code: str,
    shown: str,
) -> None:
    verified_once(invoke, fake, checkpoints)
    before = saved_files(checkpoints)
    approve(signer, "3.0.0")
    fake.on("GET", path, answer)
    result = verify(invoke)
    assert_failed(result, UNCHECKED, code, None, checkpoints, before)
    assert shown in result.stderr


def test_a_page_with_an_item_out_of_place_is_exit_2(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    items = [{"index": i, "entry": b64encode(e)} for i, e in enumerate(signer.log.entries)]
    items[1], items[2] = items[2], items[1]
    fake.ok("GET", ENTRIES_PATH, {"items": items})
    result = verify(invoke)
    message = "entries 0 to 3 of the log: the item in the place of entry 1 is not entry 1"
    assert_failed(result, UNCHECKED, "LOG_ANSWER_INVALID", message, checkpoints, {})


def test_an_unreadable_stored_checkpoint_is_exit_2(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    checkpoints.parent.mkdir(parents=True)
    checkpoints.write_text("{not json")
    before = saved_files(checkpoints)
    result = verify(invoke)
    assert_failed(result, UNCHECKED, "CONFIG_UNREADABLE", None, checkpoints, before)
    assert fake.calls() == []
