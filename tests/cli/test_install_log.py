"""`marketplace install` and `update` check the version's approval in the transparency log
(CONTRACT 15) before writing anything.

Each refusal: exit code 3, one line `error: CODE: ...; nothing was installed`, nothing
installed, nothing reported, and the checkpoint this client stored for the backend unchanged.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import Result

from marketplace_client.transparency import (
    CHECKPOINT_PATH,
    CONSISTENCY_PATH,
    ENTRIES_PATH,
    INCLUSION_PATH,
)
from marketplace_rules.canonical import b64encode, canonical_json

from .capabilities_fakes import KEY, capabilities, serve_capabilities, serve_version, state
from .capabilities_fakes import SIGNER as SHARED_SIGNER
from .fake_api import FakeApi, envelope, error
from .helpers import BACKEND, Invoke, stdout_json
from .signing import KEYS, ORIGIN, FakeSigner, approval_entry, log_entry, release_fields
from .test_install import BLOB_PATH, BLOB_URL, DOWNLOAD, REPORT, package

TRUST_EXIT = 3
CONTENT = package()
SHA256 = hashlib.sha256(CONTENT).hexdigest()


@pytest.fixture
def signer() -> FakeSigner:
    """A service of this test's own: its log starts empty."""
    return FakeSigner()


@pytest.fixture
def checkpoints(isolated_env: Path) -> Path:
    return isolated_env / "log-checkpoints.json"


def release(signer: FakeSigner, **overrides: Any) -> dict[str, Any]:
    """demo-plugin 1.0.0 (the tarball CONTENT), signed, its approval appended to the log."""
    fields = release_fields(
        version="1.0.0", distribution="tarball", sha256=SHA256, size=len(CONTENT)
    )
    fields.update(overrides)
    return signer.release(fields)


def serve(fake: FakeApi, signer: FakeSigner, record: dict[str, Any] | None) -> None:
    """Keys, the log, the download info carrying `record`, the package and the report."""
    signer.serve_keys(fake)
    signer.serve_log(fake)
    info = {
        "distribution": "tarball",
        "url": BLOB_URL,
        "sha256": SHA256,
        "size": len(CONTENT),
        "expiresAt": "2026-11-22T08:15:00Z",
        "release": record,
    }
    fake.ok("GET", DOWNLOAD, info)
    fake.on("GET", BLOB_PATH, httpx.Response(200, content=CONTENT))
    fake.ok("POST", REPORT, {"pluginId": "p-1", "version": "1.0.0"}, status=201)


def install(invoke: Invoke, root: Path, *extra: str) -> Result:
    return invoke(["install", "demo-plugin", "--dir", str(root), *extra])


def installed_once(
    fake: FakeApi, invoke: Invoke, signer: FakeSigner, tmp_path: Path, checkpoints: Path
) -> bytes:
    """A first install stored a checkpoint; its bytes (what a refusal must leave)."""
    serve(fake, signer, release(signer))
    result = install(invoke, tmp_path / "first")
    assert result.exit_code == 0, result.output
    fake.requests.clear()
    return checkpoints.read_bytes()


def assert_refused(
    result: Result,
    fake: FakeApi,
    root: Path,
    checkpoints: Path,
    before: bytes | None,
    code: str,
    message: str | None = None,
) -> None:
    assert result.exit_code == TRUST_EXIT, result.output
    if message is not None:
        assert result.stderr == f"error: {code}: {message}; nothing was installed\n"
    else:
        assert result.stderr.startswith(f"error: {code}: "), result.stderr
        assert result.stderr.endswith("; nothing was installed\n"), result.stderr
        assert result.stderr.count("\n") == 1
    assert not root.exists()
    assert ("GET", BLOB_PATH) not in fake.calls()
    assert ("POST", REPORT) not in fake.calls()
    if before is None:
        assert not checkpoints.exists()
    else:
        assert checkpoints.read_bytes() == before


def stored(checkpoints: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(checkpoints.read_text())["backends"][BACKEND]
    return document


def flip(text: str) -> str:
    """The base64 of the same bytes with the first one changed."""
    raw = bytearray(base64.b64decode(text))
    raw[0] ^= 1
    return b64encode(bytes(raw))


def rewrite(signer: FakeSigner, position: int, **changes: Any) -> None:
    """The service rewrites the entry at `position` of its history in place."""
    entry = json.loads(signer.log.entries[position])
    entry.update(changes)
    signer.log.entries[position] = log_entry(**entry)


# --- what holds -----------------------------------------------------------------------------


def test_a_logged_release_installs_and_its_checkpoint_is_stored(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    signer.log.append("key-add", keyId=signer.key_id(signer.keys[0]), at="2026-11-01T00:00:00Z")
    record = release(signer)
    assert record["logIndex"] == 1
    serve(fake, signer, record)
    result = install(invoke, tmp_path / "plugins")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "plugins" / "demo-plugin" / "1.0.0" / "manifest.json").is_file()
    entries = fake.find("GET", ENTRIES_PATH)
    assert entries.params == {"start": "1", "end": "2"}
    assert fake.find("GET", INCLUSION_PATH).params == {"index": "1", "treeSize": "2"}
    assert ("GET", CONSISTENCY_PATH) not in fake.calls()  # first use: nothing to extend
    served = signer.checkpoint()
    document = stored(checkpoints)
    assert document == {**served, "storedAt": document["storedAt"]}
    assert document["treeSize"] == 2 and document["origin"] == ORIGIN
    assert checkpoints.stat().st_mode & 0o777 == 0o600


def test_a_later_install_proves_the_log_grew_from_the_stored_checkpoint_and_stores_the_new_one(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    installed_once(fake, invoke, signer, tmp_path, checkpoints)
    assert stored(checkpoints)["treeSize"] == 1
    for version in ("2.0.0", "3.0.0"):
        release(signer, version=version)
    record = release(signer)  # 1.0.0 approved again, at index 3
    serve(fake, signer, record)
    result = install(invoke, tmp_path / "second")
    assert result.exit_code == 0, result.output
    assert fake.find("GET", CONSISTENCY_PATH).params == {"first": "1", "second": "4"}
    assert stored(checkpoints)["treeSize"] == 4
    assert stored(checkpoints)["rootHash"] == signer.checkpoint()["rootHash"]


def test_the_same_checkpoint_again_needs_no_consistency_proof(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    installed_once(fake, invoke, signer, tmp_path, checkpoints)
    result = install(invoke, tmp_path / "again")
    assert result.exit_code == 0, result.output
    assert ("GET", CONSISTENCY_PATH) not in fake.calls()
    assert stored(checkpoints)["treeSize"] == 1


def test_a_release_signed_by_an_old_key_is_logged_under_a_checkpoint_of_the_new_key(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    record = release(signer)
    signer.rotate()
    serve(fake, signer, record)
    result = install(invoke, tmp_path / "plugins")
    assert result.exit_code == 0, result.output
    assert stored(checkpoints)["keyId"] == signer.key_id(signer.keys[1])
    pins = json.loads((checkpoints.parent / "trusted-keys.json").read_text())
    assert set(pins["backends"][BACKEND]) == {signer.key_id(key) for key in signer.keys}


# --- the checkpoint -------------------------------------------------------------------------


def test_a_checkpoint_signed_by_a_key_the_service_does_not_list_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    before = installed_once(fake, invoke, signer, tmp_path, checkpoints)
    stranger = FakeSigner()
    stranger.log = signer.log
    fake.ok("GET", CHECKPOINT_PATH, stranger.checkpoint())
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = (
        f"the log checkpoint of {BACKEND} is signed by key {stranger.key_id(stranger.keys[0])}, "
        "which the service does not list"
    )
    assert_refused(result, fake, root, checkpoints, before, "LOG_KEY_UNKNOWN", message)


@pytest.mark.parametrize("tamper", ["signature", "treeSize", "rootHash", "origin"])
def test_a_checkpoint_whose_signature_does_not_verify_is_refused(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    checkpoints: Path,
    tamper: str,
) -> None:
    before = installed_once(fake, invoke, signer, tmp_path, checkpoints)
    release(signer, version="2.0.0")
    checkpoint = signer.checkpoint()
    changed = {
        "signature": flip(checkpoint["signature"]),
        "treeSize": checkpoint["treeSize"] - 1,  # a smaller tree the service never signed
        "rootHash": flip(checkpoint["rootHash"]),
        "origin": "elsewhere.test/log",
    }
    checkpoint[tamper] = changed[tamper]
    fake.ok("GET", CHECKPOINT_PATH, checkpoint)
    root = tmp_path / "plugins"
    result = install(invoke, root, "--json")
    key_id = signer.key_id(signer.keys[0])
    message = (
        f"the signature of the log checkpoint of {BACKEND} ({checkpoint['treeSize']} entries) "
        f"does not verify with key {key_id}"
    )
    assert_refused(result, fake, root, checkpoints, before, "LOG_CHECKPOINT_INVALID", message)
    assert stdout_json(result)["error"]["code"] == "LOG_CHECKPOINT_INVALID"


def test_a_checkpoint_key_withdrawn_from_the_key_list_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    before = installed_once(fake, invoke, signer, tmp_path, checkpoints)
    first_key = signer.keys[0]
    signer.rotate()
    record = release(signer)  # signed by the new key
    serve(fake, signer, record)
    # The release's key is listed, so it verifies; the log check sees the pinned key gone.
    fake.on(
        "GET",
        KEYS,
        envelope(signer.listing()),
        envelope(signer.listing([signer.keys[1]])),
    )
    root = tmp_path / "plugins"
    result = install(invoke, root)
    assert_refused(result, fake, root, checkpoints, before, "KEY_WITHDRAWN")
    assert signer.key_id(first_key) in result.stderr


# --- the entry ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "shown", "signed"),
    [
        ("sha256", "0" * 64, repr("0" * 64), repr(SHA256)),
        ("version", "1.0.1", "'1.0.1'", "'1.0.0'"),
        ("key", "other-plugin", "'other-plugin'", "'demo-plugin'"),
        ("kind", "scenario", "'scenario'", "'plugin'"),
        ("distribution", "inline", "'inline'", "'tarball'"),
        ("size", len(CONTENT) + 1, str(len(CONTENT) + 1), str(len(CONTENT))),
        ("size", str(len(CONTENT)), repr(str(len(CONTENT))), str(len(CONTENT))),
        ("at", "2030-01-01T00:00:00Z", "'2030-01-01T00:00:00Z'", "'2026-11-22T08:00:00Z'"),
    ],
    ids=["sha256", "version", "key", "kind", "distribution", "size", "size-as-text", "at"],
)
def test_an_approval_entry_differing_from_the_release_is_refused(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    checkpoints: Path,
    field: str,
    value: Any,
    shown: str,
    signed: str,
) -> None:
    before = installed_once(fake, invoke, signer, tmp_path, checkpoints)
    record = release(signer)
    rewrite(signer, record["logIndex"], **{field: value})  # logged as something else
    serve(fake, signer, record)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = (
        f"log entry 1 says {field} {shown}, the signed release of demo-plugin latest says {signed}"
    )
    assert_refused(result, fake, root, checkpoints, before, "LOG_ENTRY_MISMATCH", message)


def test_an_approval_logged_under_another_key_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    record = release(signer)
    rewrite(signer, 0, keyId="another-key")
    serve(fake, signer, record)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = (
        f"log entry 0 says keyId 'another-key', the signed release of demo-plugin latest says "
        f"{record['keyId']!r}"
    )
    assert_refused(result, fake, root, checkpoints, None, "LOG_ENTRY_MISMATCH", message)


def test_a_log_index_pointing_at_a_takedown_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    record = release(signer)
    signer.log.append("takedown", kind="plugin", key="demo-plugin", version="1.0.0")
    serve(fake, signer, {**record, "logIndex": 1})
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = "log entry 1, given as the approval of demo-plugin latest, is a 'takedown' entry"
    assert_refused(result, fake, root, checkpoints, None, "LOG_ENTRY_MISMATCH", message)


def test_an_entry_that_says_another_index_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    record = release(signer)
    rewrite(signer, 0, index=7)
    serve(fake, signer, record)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = "log entry 0 says it is entry 7"
    assert_refused(result, fake, root, checkpoints, None, "LOG_ENTRY_INVALID", message)


def test_a_release_without_log_index_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    record = release(signer)
    del record["logIndex"]
    serve(fake, signer, record)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = (
        "the release of demo-plugin latest has no logIndex: the service does not say where "
        "its approval is logged"
    )
    assert_refused(result, fake, root, checkpoints, None, "LOG_INDEX_MISSING", message)
    assert ("GET", CHECKPOINT_PATH) not in fake.calls()


@pytest.mark.parametrize("value", [-1, True, 1.0, "0"])
def test_a_log_index_that_is_not_an_index_is_refused(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    checkpoints: Path,
    value: Any,
) -> None:
    serve(fake, signer, {**release(signer), "logIndex": value})
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = "the signed record for demo-plugin latest has a logIndex that is not an index"
    assert_refused(result, fake, root, checkpoints, None, "RECORD_INVALID", message)


@pytest.mark.parametrize("past", [0, 5])
def test_a_log_index_the_checkpoint_does_not_cover_is_refused(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    checkpoints: Path,
    past: int,
) -> None:
    before = installed_once(fake, invoke, signer, tmp_path, checkpoints)
    record = {**release(signer), "logIndex": 2 + past}  # the tree has 2 entries
    serve(fake, signer, record)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = (
        f"the approval of demo-plugin latest is logged at index {2 + past}, but the signed "
        "checkpoint covers 2 entries"
    )
    assert_refused(result, fake, root, checkpoints, before, "LOG_ENTRY_MISSING", message)
    assert ("GET", ENTRIES_PATH) not in fake.calls()


# --- the inclusion proof --------------------------------------------------------------------


def forged_inclusion(signer: FakeSigner, change: str) -> Any:
    def answer(request: httpx.Request) -> httpx.Response:
        index, size = int(request.url.params["index"]), int(request.url.params["treeSize"])
        hashes = signer.log.inclusion(index, size)
        if change == "flip":
            hashes[0] = flip(hashes[0])
        elif change == "drop":
            hashes = hashes[:-1]
        elif change == "extra":
            hashes.append(b64encode(bytes(32)))
        return envelope({"index": index, "treeSize": size, "hashes": hashes})

    return answer


@pytest.mark.parametrize("change", ["flip", "drop", "extra"])
def test_a_forged_inclusion_proof_is_refused(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    checkpoints: Path,
    change: str,
) -> None:
    before = installed_once(fake, invoke, signer, tmp_path, checkpoints)
    release(signer, version="2.0.0")
    record = release(signer)
    serve(fake, signer, record)
    fake.on("GET", INCLUSION_PATH, forged_inclusion(signer, change))
    root = tmp_path / "plugins"
    result = install(invoke, root)
    root_hash = signer.checkpoint()["rootHash"]
    message = (
        "the approval of demo-plugin latest (entry 2) is not proven to be in the log of "
        f"3 entries with root {root_hash}"
    )
    assert_refused(result, fake, root, checkpoints, before, "LOG_INCLUSION_INVALID", message)


def test_an_entry_the_checkpoint_does_not_hold_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    """The entry served is the release's, but the signed tree holds another one there."""
    record = release(signer)
    honest = signer.log.entries[0]
    rewrite(signer, 0, sha256="0" * 64)
    signed_checkpoint = signer.checkpoint()
    signer.log.entries[0] = honest
    serve(fake, signer, record)
    fake.ok("GET", CHECKPOINT_PATH, signed_checkpoint)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    assert_refused(result, fake, root, checkpoints, None, "LOG_INCLUSION_INVALID")


# --- consistency with the stored checkpoint -------------------------------------------------


def test_a_fork_of_the_same_size_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    release(signer, version="0.9.0")
    before = installed_once(fake, invoke, signer, tmp_path, checkpoints)
    old_root = stored(checkpoints)["rootHash"]
    rewrite(signer, 0, sha256="0" * 64)  # another history of the same size
    root = tmp_path / "plugins"
    result = install(invoke, root)
    new_root = signer.checkpoint()["rootHash"]
    message = (
        f"the log of {BACKEND} forked: it signs 2 entries with root {new_root}, not the "
        f"checkpoint of 2 entries stored {stored(checkpoints)['storedAt']} (root {old_root})"
    )
    assert_refused(result, fake, root, checkpoints, before, "LOG_INCONSISTENT", message)
    assert ("GET", CONSISTENCY_PATH) not in fake.calls()


def test_a_bigger_tree_that_does_not_extend_the_stored_one_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    release(signer, version="0.9.0")
    before = installed_once(fake, invoke, signer, tmp_path, checkpoints)
    rewrite(signer, 0, sha256="0" * 64)
    record = release(signer)  # logged after the rewrite: its own proof holds
    serve(fake, signer, record)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    document = stored(checkpoints)
    message = (
        f"the log of {BACKEND} at 3 entries does not extend the checkpoint of 2 entries stored "
        f"{document['storedAt']} (root {document['rootHash']}): the consistency proof fails"
    )
    assert_refused(result, fake, root, checkpoints, before, "LOG_INCONSISTENT", message)
    assert fake.find("GET", CONSISTENCY_PATH).params == {"first": "2", "second": "3"}


def test_a_consistency_proof_for_other_sizes_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    release(signer, version="0.9.0")
    before = installed_once(fake, invoke, signer, tmp_path, checkpoints)
    record = release(signer)
    serve(fake, signer, record)
    fake.ok("GET", CONSISTENCY_PATH, {"first": 1, "second": 3, "hashes": []})
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = "the consistency proof from 2 to 3 entries: asked for first 2, the answer is for 1"
    assert_refused(result, fake, root, checkpoints, before, "LOG_ANSWER_INVALID", message)


def test_a_log_that_shrank_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    record = release(signer)
    release(signer, version="2.0.0")
    release(signer, version="3.0.0")
    serve(fake, signer, record)
    assert install(invoke, tmp_path / "first").exit_code == 0
    before = checkpoints.read_bytes()
    document = stored(checkpoints)
    fake.requests.clear()
    del signer.log.entries[1:]  # only the release's approval is left
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = (
        f"the log of {BACKEND} shrank: it now signs 1 entries, after the checkpoint of 3 "
        f"entries stored {document['storedAt']} (root {document['rootHash']})"
    )
    assert_refused(result, fake, root, checkpoints, before, "LOG_INCONSISTENT", message)


def test_a_damaged_stored_checkpoint_stops_the_install(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    checkpoints.parent.mkdir(parents=True, exist_ok=True)
    checkpoints.write_text(json.dumps({"backends": {BACKEND: {"treeSize": -1}}}))
    serve(fake, signer, release(signer))
    root = tmp_path / "plugins"
    result = install(invoke, root)
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: CONFIG_UNREADABLE: {checkpoints}: the checkpoint stored for {BACKEND} is damaged\n"
    )
    assert not root.exists()


# --- the service cannot show its log, or answers garbage ------------------------------------


def test_a_service_without_the_log_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, checkpoints: Path
) -> None:
    serve(fake, signer, release(signer))
    fake.on("GET", CHECKPOINT_PATH, error(404, "NOT_FOUND", "Not found"))
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = f"cannot read {CHECKPOINT_PATH} from {BACKEND}: NOT_FOUND: Not found (HTTP 404)"
    assert_refused(result, fake, root, checkpoints, None, "LOG_UNAVAILABLE", message)


def checkpoint_with(signer: FakeSigner, **changes: Any) -> dict[str, Any]:
    checkpoint = signer.checkpoint()
    checkpoint.update(changes)
    return {k: v for k, v in checkpoint.items() if v is not None}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([], f"{CHECKPOINT_PATH} did not answer a JSON object"),
        ({"treeSize": -1}, f"the checkpoint of {BACKEND}: `treeSize` is not a tree size or index"),
        ({"treeSize": "1"}, f"the checkpoint of {BACKEND}: `treeSize` is not a tree size or index"),
        (
            {"treeSize": True},
            f"the checkpoint of {BACKEND}: `treeSize` is not a tree size or index",
        ),
        (
            {"treeSize": 2**64},
            f"the checkpoint of {BACKEND}: `treeSize` is not a tree size or index",
        ),
        ({"treeSize": 1.0}, f"the checkpoint of {BACKEND}: `treeSize` is not a tree size or index"),
        (
            {"rootHash": "not base64!"},
            f"the checkpoint of {BACKEND}: `rootHash` is not the base64 of a 32-byte hash",
        ),
        (
            {"rootHash": b64encode(bytes(31))},
            f"the checkpoint of {BACKEND}: `rootHash` is not the base64 of a 32-byte hash",
        ),
        ({"origin": "a\nb"}, f"the checkpoint of {BACKEND}: `origin` is not one line of text"),
        ({"keyId": None}, f"the checkpoint of {BACKEND}: `keyId` is not one line of text"),
        ({"signature": 5}, f"the checkpoint of {BACKEND}: `signature` is not one line of text"),
    ],
)
def test_a_malformed_checkpoint_is_refused_in_one_line(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    checkpoints: Path,
    answer: Any,
    message: str,
) -> None:
    serve(fake, signer, release(signer))
    data = answer if isinstance(answer, list) else checkpoint_with(signer, **answer)
    fake.ok("GET", CHECKPOINT_PATH, data)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    assert_refused(result, fake, root, checkpoints, None, "LOG_ANSWER_INVALID", message)


ENTRY_WHAT = "entries 0 to 0 of the log"


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (None, f"{ENTRY_WHAT}: asked for 1 entries, the answer has no"),
        ("two", f"{ENTRY_WHAT}: asked for 1 entries, the answer has 2"),
        (
            [{"index": 1, "entry": "e30="}],
            f"{ENTRY_WHAT}: the item in the place of entry 0 is not entry 0",
        ),
        ([{"index": "0", "entry": "e30="}], f"{ENTRY_WHAT}: `index` is not a tree size or index"),
        (["e30="], f"{ENTRY_WHAT}: the item in the place of entry 0 is not entry 0"),
        ([{"index": 0, "entry": "e30"}], f"{ENTRY_WHAT}: entry 0 is not standard base64"),
        ([{"index": 0, "entry": ""}], f"{ENTRY_WHAT}: entry 0 is empty or missing"),
        ([{"index": 0}], f"{ENTRY_WHAT}: entry 0 is empty or missing"),
    ],
)
def test_a_malformed_entries_page_is_refused_in_one_line(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    checkpoints: Path,
    items: Any,
    message: str,
) -> None:
    record = release(signer)
    serve(fake, signer, record)
    if items == "two":
        entry = b64encode(signer.log.entries[0])
        items = [{"index": 0, "entry": entry}, {"index": 1, "entry": entry}]
    fake.ok("GET", ENTRIES_PATH, {"items": items})
    root = tmp_path / "plugins"
    result = install(invoke, root)
    assert_refused(result, fake, root, checkpoints, None, "LOG_ANSWER_INVALID", message)


@pytest.mark.parametrize(
    ("entry", "code", "message"),
    [
        (b"not json", "LOG_ENTRY_INVALID", "log entry 0 is not JSON"),
        (b"[" * 100_000, "LOG_ENTRY_INVALID", "log entry 0 is not JSON"),
        (b"\xff\xfe", "LOG_ENTRY_INVALID", "log entry 0 is not JSON"),
        (b'{"index":0}', "LOG_ENTRY_INVALID", "log entry 0 does not have the contract's fields"),
        (
            canonical_json({**json.loads(log_entry(0, "approve")), "note": "x"}),
            "LOG_ENTRY_INVALID",
            "log entry 0 does not have the contract's fields",
        ),
        (
            log_entry(0, "promote"),
            "LOG_ENTRY_INVALID",
            "log entry 0 has an unknown action 'promote'",
        ),
        (
            log_entry(0, "approve").replace(b'"index":0', b'"index":0.0'),
            "LOG_ENTRY_INVALID",
            "log entry 0 says it is entry 0.0",
        ),
    ],
)
def test_an_entry_that_is_not_a_contract_entry_is_refused(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    checkpoints: Path,
    entry: bytes,
    code: str,
    message: str,
) -> None:
    record = release(signer)
    signer.log.entries[0] = entry  # logged that way: the proofs hold, the entry does not
    serve(fake, signer, record)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    assert_refused(result, fake, root, checkpoints, None, code, message)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"index": 0, "treeSize": 2, "hashes": []}, "asked for treeSize 1, the answer is for 2"),
        (
            {"index": 0, "treeSize": 1, "hashes": "AAAA"},
            "`hashes` is not a list of at most 64 hashes",
        ),
        (
            {"index": 0, "treeSize": 1, "hashes": [b64encode(bytes(32))] * 65},
            "`hashes` is not a list of at most 64 hashes",
        ),
        (
            {"index": 0, "treeSize": 1, "hashes": ["AAAA"]},
            "hash 0 is not the base64 of a 32-byte hash",
        ),
        ({"index": 0, "hashes": []}, "`treeSize` is not a tree size or index"),
    ],
)
def test_a_malformed_inclusion_proof_is_refused_in_one_line(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    checkpoints: Path,
    answer: dict[str, Any],
    message: str,
) -> None:
    serve(fake, signer, release(signer))
    fake.ok("GET", INCLUSION_PATH, answer)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    what = "the inclusion proof of entry 0 in 1 entries"
    assert_refused(
        result, fake, root, checkpoints, None, "LOG_ANSWER_INVALID", f"{what}: {message}"
    )


# --- update goes through the same check -----------------------------------------------------


def test_an_update_whose_approval_is_not_proven_is_refused_and_the_install_stays(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    root = tmp_path / "plugins"
    serve_version(fake, "1.0.0")
    serve_capabilities(fake, capabilities("1.0.0"))
    assert invoke(["install", KEY, "--dir", str(root)]).exit_code == 0
    before = (state(root), (isolated_env / "log-checkpoints.json").read_bytes())
    serve_version(fake, "1.1.0")
    serve_capabilities(fake, capabilities("1.1.0"))
    fake.on("GET", INCLUSION_PATH, forged_inclusion(SHARED_SIGNER, "flip"))
    fake.requests.clear()
    result = invoke(["update", KEY, "--dir", str(root)])
    assert result.exit_code == TRUST_EXIT, result.output
    assert "error: demo-plugin: LOG_INCLUSION_INVALID: the approval of demo-plugin 1.1.0" in (
        result.stderr
    )
    assert "(demo-plugin 1.0.0 stays installed)" in result.stderr
    assert (state(root), (isolated_env / "log-checkpoints.json").read_bytes()) == before
    assert ("POST", f"/api/v1/plugins/install/{KEY}") not in fake.calls()


def test_an_approval_entry_built_from_a_release_matches_it() -> None:
    """The fake's own approval entries are what the check accepts (guards the fake)."""
    fields = release_fields(version="1.0.0", distribution="tarball", sha256=SHA256, size=1)
    entry = json.loads(approval_entry(4, fields, "k1"))
    assert entry == {
        "index": 4,
        "action": "approve",
        "kind": "plugin",
        "key": "demo-plugin",
        "version": "1.0.0",
        "distribution": "tarball",
        "sha256": SHA256,
        "size": 1,
        "keyId": "k1",
        "at": fields["approvedAt"],
    }
