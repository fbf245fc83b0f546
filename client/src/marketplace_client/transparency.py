"""The transparency log of the service's decisions (CONTRACT 15), as a client checks it.

The service appends one entry per approval, takedown and key change to an RFC 6962 Merkle
tree and signs a checkpoint (`origin`, tree size, root) with a key of `GET /api/v1/keys`.
A signed release proves the service approved a version; the log proves it said so *in
public*, in one append-only history that everyone can be shown.

- `install` and `update` (`verify_release_logged`): the checkpoint's signature (a listed key,
  pins as for releases), the approval entry at the release's `logIndex` equal to the release,
  its inclusion under the checkpoint's root, and the checkpoint consistent with the last one
  this client stored for the backend.
- `marketplace log verify` (`verify_log`): a monitor that reads every entry, recomputes the
  root in O(log n) memory and compares it with the signed checkpoint and, on the way, with
  the stored one at its size.

Checkpoints are stored per backend in `<config>/log-checkpoints.json`, only after a check
passed. `TrustError` refuses (the log or the checkpoint is not what was signed or seen);
`LogUnavailable` says the log could not be read as the protocol says, which proves nothing
either way (the monitor exits 2 then, not 1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from marketplace_client.api import ApiClient, ApiError
from marketplace_client.config import config_dir, file_lock, write_private
from marketplace_client.errors import CliError
from marketplace_client.trust import (
    KeyListInvalid,
    KeyPins,
    Release,
    TrustError,
    load_backends_file,
    signature_valid,
    trusted_key,
)
from marketplace_rules.canonical import b64decode, b64encode, canonical_json
from marketplace_rules.log_entries import ACTIONS as LOG_ACTIONS
from marketplace_rules.log_entries import ENTRY_FIELDS as LOGGED_FIELDS
from marketplace_rules.merkle import (
    HASH_SIZE,
    CompactRange,
    leaf_hash,
    root_of,
    verify_consistency,
    verify_inclusion,
)

CHECKPOINT_PATH = "/api/v1/log/checkpoint"
ENTRIES_PATH = "/api/v1/log/entries"
INCLUSION_PATH = "/api/v1/log/proof/inclusion"
CONSISTENCY_PATH = "/api/v1/log/proof/consistency"
CHECKPOINTS_FILE = "log-checkpoints.json"
PAGE_SIZE = 1000  # the most entries the service gives in one call
# Sizes and indexes past this are not a log anyone runs: refused before any arithmetic.
MAX_TREE_SIZE = 2**63 - 1
# An audit path in a tree of fewer than 2**63 leaves has at most 63 hashes, a consistency
# path at most one more; a longer list is refused before it is hashed.
MAX_PROOF_HASHES = 64
MAX_TEXT = 1024  # an origin, a keyId, a base64 signature: far shorter in practice
MAX_SHOWN = 80  # how much of a value from an answer a message quotes
ENTRY_FIELDS = frozenset({"index", *LOGGED_FIELDS})
ACTIONS = frozenset(LOG_ACTIONS)
# The approval entry carries the release record's values under these names.
RELEASE_IN_ENTRY = {
    "kind": "kind",
    "key": "key",
    "version": "version",
    "distribution": "distribution",
    "sha256": "sha256",
    "size": "size",
    "at": "approvedAt",
}
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class LogUnavailable(TrustError):
    """The log could not be read as CONTRACT 15 says (unreachable, an error answer, a
    malformed one): nothing is proven, neither that it holds nor that it does not."""


def _malformed(message: str) -> LogUnavailable:
    return LogUnavailable("LOG_ANSWER_INVALID", message)


# --- reading answers ----------------------------------------------------------------------


def _get(api: ApiClient, path: str, params: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The `data` object of a public log endpoint; any failure to get one is LogUnavailable."""
    try:
        data = api.get(path, params=params)
    except ApiError as exc:
        raise LogUnavailable(
            "LOG_UNAVAILABLE", f"cannot read {path} from {api.backend}: {exc.headline()}"
        ) from None
    if not isinstance(data, dict):
        raise _malformed(f"{path} did not answer a JSON object")
    return data


def _size(data: Mapping[str, Any], name: str, what: str) -> int:
    """A tree size or index: an integer (not a boolean) from 0 to MAX_TREE_SIZE."""
    value = data.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_TREE_SIZE:
        raise _malformed(f"{what}: `{name}` is not a tree size or index")
    return value


def _text(data: Mapping[str, Any], name: str, what: str) -> str:
    """One line of text (origin, keyId, base64): it is signed line by line and printed."""
    value = data.get(name)
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= MAX_TEXT
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)
    ):
        raise _malformed(f"{what}: `{name}` is not one line of text")
    return value


def _shown(value: Any) -> str:
    """A value from an answer, as a message may quote it: on one line, not too long."""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _hash(value: Any, what: str) -> bytes:
    """A tree hash: standard base64 of exactly 32 bytes."""
    try:
        raw = b64decode(value) if isinstance(value, str) else b""
    except ValueError:
        raw = b""
    if len(raw) != HASH_SIZE:
        raise _malformed(f"{what} is not the base64 of a 32-byte hash")
    return raw


def _hashes(data: Mapping[str, Any], what: str) -> list[bytes]:
    values = data.get("hashes")
    if not isinstance(values, list) or len(values) > MAX_PROOF_HASHES:
        raise _malformed(f"{what}: `hashes` is not a list of at most {MAX_PROOF_HASHES} hashes")
    return [_hash(value, f"{what}: hash {number}") for number, value in enumerate(values)]


def _echoes(data: Mapping[str, Any], asked: Mapping[str, int], what: str) -> None:
    """A proof must say it is the one asked for: a proof of other sizes proves nothing."""
    for name, value in asked.items():
        if _size(data, name, what) != value:
            raise _malformed(f"{what}: asked for {name} {value}, the answer is for {data[name]}")


# --- checkpoints --------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    """A signed tree head. `root_b64` and `signature` are kept as served: the signed text
    holds the base64 as written, and two spellings can decode to the same bytes."""

    origin: str
    tree_size: int
    root_b64: str
    key_id: str
    signature: str
    stored_at: str | None = None

    @property
    def root_hash(self) -> bytes:
        return b64decode(self.root_b64)

    def signed_text(self) -> bytes:
        """What the signature covers: the body of a C2SP checkpoint."""
        return f"{self.origin}\n{self.tree_size}\n{self.root_b64}\n".encode()

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "treeSize": self.tree_size,
            "rootHash": self.root_b64,
            "keyId": self.key_id,
            "signature": self.signature,
        }


def parse_checkpoint(data: Mapping[str, Any], what: str) -> Checkpoint:
    """A checkpoint's shape: text fields (the origin on one line), a size, a 32-byte root."""
    origin = _text(data, "origin", what)
    root = _text(data, "rootHash", what)
    _hash(root, f"{what}: `rootHash`")
    stored_at = data.get("storedAt")
    return Checkpoint(
        origin=origin,
        tree_size=_size(data, "treeSize", what),
        root_b64=root,
        key_id=_text(data, "keyId", what),
        signature=_text(data, "signature", what),
        stored_at=stored_at if isinstance(stored_at, str) else None,
    )


@dataclass(frozen=True)
class SignedCheckpoint:
    """A checkpoint whose signature verified, with the key that made it (to pin)."""

    checkpoint: Checkpoint
    public_key: str


def fetch_checkpoint(api: ApiClient) -> Checkpoint:
    return parse_checkpoint(_get(api, CHECKPOINT_PATH), f"the checkpoint of {api.backend}")


def verify_checkpoint(api: ApiClient, checkpoint: Checkpoint, pins: KeyPins) -> SignedCheckpoint:
    """The checkpoint is signed by a key the service lists now, every pinned key still
    listed unchanged (the same rules as a release's signature). Pins nothing: the caller
    pins with the checkpoint it stores, once every check passed."""
    try:
        public = trusted_key(api, checkpoint.key_id, pins)
    except ApiError as exc:
        raise LogUnavailable(
            "LOG_UNAVAILABLE", f"cannot read the keys of {api.backend}: {exc.headline()}"
        ) from None
    except KeyListInvalid as exc:
        raise _malformed(exc.message) from None
    if public is None:
        raise TrustError(
            "LOG_KEY_UNKNOWN",
            f"the log checkpoint of {api.backend} is signed by key {checkpoint.key_id}, "
            "which the service does not list",
        )
    try:
        signature = b64decode(checkpoint.signature)
    except ValueError:
        signature = b""
    if not signature_valid(public, checkpoint.signed_text(), signature):
        raise TrustError(
            "LOG_CHECKPOINT_INVALID",
            f"the signature of the log checkpoint of {api.backend} ({checkpoint.tree_size} "
            f"entries) does not verify with key {checkpoint.key_id}",
        )
    return SignedCheckpoint(checkpoint, public)


class CheckpointStore:
    """`log-checkpoints.json`: `{"backends": {url: {origin, treeSize, rootHash, keyId,
    signature, storedAt}}}`, the last checkpoint each backend proved, shared by `install`,
    `update` and `log verify`."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else config_dir() / CHECKPOINTS_FILE

    def _load(self) -> dict[str, Any]:
        return load_backends_file(self.path, "log checkpoints")

    def get(self, backend: str) -> Checkpoint | None:
        """The stored checkpoint; a damaged one is an error, never silently a first use."""
        entry = self._load()["backends"].get(backend)
        if entry is None:
            return None
        try:
            return parse_checkpoint(entry if isinstance(entry, dict) else {}, "stored")
        except LogUnavailable:
            raise CliError(
                "CONFIG_UNREADABLE", f"{self.path}: the checkpoint stored for {backend} is damaged"
            ) from None

    def save(self, backend: str, checkpoint: Checkpoint) -> None:
        """Store `checkpoint` unless a larger one was stored meanwhile (another install or
        monitor run at the same time): the stored checkpoint never moves backwards."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with file_lock(self.path.with_name(self.path.name + ".lock")):
            document = self._load()
            current = document["backends"].get(backend)
            if isinstance(current, dict):
                size = current.get("treeSize")
                if isinstance(size, int) and size > checkpoint.tree_size:
                    return
            now = datetime.now(UTC).strftime(TIME_FORMAT)
            document["backends"][backend] = {**checkpoint.to_json(), "storedAt": now}
            try:
                write_private(self.path, json.dumps(document, indent=2, sort_keys=True) + "\n")
            except OSError as exc:
                raise CliError("CONFIG_UNWRITABLE", f"cannot write {self.path}: {exc}") from exc


def remember(
    api: ApiClient,
    signed: SignedCheckpoint,
    *,
    pins: KeyPins | None = None,
    store: CheckpointStore | None = None,
) -> None:
    """After every check passed: pin the checkpoint's key and store the checkpoint."""
    checkpoint = signed.checkpoint
    (pins if pins is not None else KeyPins()).pin(api.backend, checkpoint.key_id, signed.public_key)
    (store if store is not None else CheckpointStore()).save(api.backend, checkpoint)


def _seen(stored: Checkpoint) -> str:
    when = f" stored {stored.stored_at}" if stored.stored_at else ""
    return f"the checkpoint of {stored.tree_size} entries{when} (root {stored.root_b64})"


def check_not_shrunk(backend: str, stored: Checkpoint | None, new: Checkpoint) -> None:
    """The same log as before (its origin), no smaller than it was."""
    if stored is not None and new.origin != stored.origin:
        raise TrustError(
            "LOG_INCONSISTENT",
            f"the log of {backend} now names itself {_shown(new.origin)}, not "
            f"{_shown(stored.origin)} as in {_seen(stored)}",
        )
    if stored is not None and new.tree_size < stored.tree_size:
        raise TrustError(
            "LOG_INCONSISTENT",
            f"the log of {backend} shrank: it now signs {new.tree_size} entries, after "
            f"{_seen(stored)}",
        )


def check_consistency(api: ApiClient, stored: Checkpoint | None, new: Checkpoint) -> None:
    """`new` extends the stored checkpoint: same size and root, or a consistency proof from
    the stored size; a smaller tree is a log that shrank. No stored one: first use."""
    if stored is None:
        return
    check_not_shrunk(api.backend, stored, new)
    if new.tree_size == stored.tree_size:
        if new.root_hash != stored.root_hash:
            raise TrustError(
                "LOG_INCONSISTENT",
                f"the log of {api.backend} forked: it signs {new.tree_size} entries with root "
                f"{new.root_b64}, not {_seen(stored)}",
            )
        return
    if stored.tree_size == 0:
        return  # every tree extends the empty one
    proof = fetch_consistency_proof(api, stored.tree_size, new.tree_size)
    if not verify_consistency(
        stored.tree_size, new.tree_size, stored.root_hash, new.root_hash, proof
    ):
        raise TrustError(
            "LOG_INCONSISTENT",
            f"the log of {api.backend} at {new.tree_size} entries does not extend "
            f"{_seen(stored)}: the consistency proof fails",
        )


# --- entries and proofs -------------------------------------------------------------------


def fetch_entries(api: ApiClient, start: int, end: int) -> list[bytes]:
    """The exact leaf bytes of entries [start, end) (at most PAGE_SIZE): exactly that many
    items, each saying its own index. A page short of an entry the signed checkpoint covers
    is a log that lost it (LOG_ENTRY_MISSING), not an answer that could not be read."""
    what = f"entries {start} to {end - 1} of the log"
    data = _get(api, ENTRIES_PATH, {"start": start, "end": end})
    items = data.get("items")
    if not isinstance(items, list) or len(items) > end - start:
        count = len(items) if isinstance(items, list) else "no"
        raise _malformed(f"{what}: asked for {end - start} entries, the answer has {count}")
    if len(items) < end - start:
        served = {_size(item, "index", what) for item in items if isinstance(item, dict)}
        missing = next(index for index in range(start, end) if index not in served)
        raise TrustError(
            "LOG_ENTRY_MISSING",
            f"{what}: entry {missing} is missing: the signed checkpoint covers it, the "
            f"service does not serve it",
        )
    return [_entry_bytes(item, expected, what) for expected, item in enumerate(items, start)]


def _entry_bytes(item: Any, index: int, what: str) -> bytes:
    if not isinstance(item, dict) or _size(item, "index", what) != index:
        raise _malformed(f"{what}: the item in the place of entry {index} is not entry {index}")
    value = item.get("entry")
    try:
        data = b64decode(value) if isinstance(value, str) else b""
    except ValueError:
        raise _malformed(f"{what}: entry {index} is not standard base64") from None
    if not data:
        raise _malformed(f"{what}: entry {index} is empty or missing")
    return data


def parse_entry(data: bytes, index: int) -> dict[str, Any]:
    """An entry's JSON: exactly the contract's fields, `index` its position, a known action."""
    try:
        entry = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise TrustError("LOG_ENTRY_INVALID", f"log entry {index} is not JSON") from None
    if not isinstance(entry, dict) or set(entry) != ENTRY_FIELDS:
        raise TrustError(
            "LOG_ENTRY_INVALID", f"log entry {index} does not have the contract's fields"
        )
    # The bytes must be the one canonical spelling: duplicate keys, spaces or another number
    # form would let two parsers read two different entries under one leaf hash.
    if canonical_json(entry) != data:
        raise TrustError("LOG_ENTRY_INVALID", f"log entry {index} is not canonical JSON")
    if not _same(entry["index"], index):
        raise TrustError(
            "LOG_ENTRY_INVALID", f"log entry {index} says it is entry {_shown(entry['index'])}"
        )
    if not isinstance(entry["action"], str) or entry["action"] not in ACTIONS:
        raise TrustError(
            "LOG_ENTRY_INVALID",
            f"log entry {index} has an unknown action {_shown(entry['action'])}",
        )
    return entry


def _same(a: Any, b: Any) -> bool:
    """Equal JSON values of the same type (True is not 1, 1.0 is not 1)."""
    return type(a) is type(b) and a == b


def fetch_inclusion_proof(api: ApiClient, index: int, tree_size: int) -> list[bytes]:
    what = f"the inclusion proof of entry {index} in {tree_size} entries"
    asked = {"index": index, "treeSize": tree_size}
    data = _get(api, INCLUSION_PATH, asked)
    _echoes(data, asked, what)
    return _hashes(data, what)


def fetch_consistency_proof(api: ApiClient, first: int, second: int) -> list[bytes]:
    what = f"the consistency proof from {first} to {second} entries"
    asked = {"first": first, "second": second}
    data = _get(api, CONSISTENCY_PATH, asked)
    _echoes(data, asked, what)
    return _hashes(data, what)


# --- install and update -------------------------------------------------------------------


def check_approval(entry: Mapping[str, Any], release: Release, what: str) -> None:
    """The approval entry says what the release says: the same version, bytes, key, time."""
    index = release.log_index
    if entry["action"] != "approve":
        raise TrustError(
            "LOG_ENTRY_MISMATCH",
            f"log entry {index}, given as the approval of {what}, is a {entry['action']!r} entry",
        )
    expected = {name: release.fields.get(field) for name, field in RELEASE_IN_ENTRY.items()}
    expected["keyId"] = release.key_id
    for name, value in expected.items():
        if not _same(entry[name], value):
            raise TrustError(
                "LOG_ENTRY_MISMATCH",
                f"log entry {index} says {name} {_shown(entry[name])}, the signed release of "
                f"{what} says {_shown(value)}",
            )


def verify_release_logged(
    api: ApiClient,
    release: Release,
    what: str,
    *,
    pins: KeyPins | None = None,
    store: CheckpointStore | None = None,
) -> SignedCheckpoint:
    """CONTRACT 15's install check, before anything is written: the signed checkpoint covers
    the release's `logIndex`; the entry there is this release's approval; it is included
    under the checkpoint's root; the checkpoint extends the one stored for this backend.
    Returns the checkpoint to `remember` once the rest of the download is proven too."""
    index = release.log_index
    if index is None:
        raise TrustError(
            "LOG_INDEX_MISSING",
            f"the release of {what} has no logIndex: the service does not say where its "
            "approval is logged",
        )
    pins = pins if pins is not None else KeyPins()
    store = store if store is not None else CheckpointStore()
    signed = verify_checkpoint(api, fetch_checkpoint(api), pins)
    checkpoint = signed.checkpoint
    if index >= checkpoint.tree_size:
        raise TrustError(
            "LOG_ENTRY_MISSING",
            f"the approval of {what} is logged at index {index}, but the signed checkpoint "
            f"covers {checkpoint.tree_size} entries",
        )
    [data] = fetch_entries(api, index, index + 1)
    check_approval(parse_entry(data, index), release, what)
    proof = fetch_inclusion_proof(api, index, checkpoint.tree_size)
    if not verify_inclusion(
        leaf_hash(data), index, checkpoint.tree_size, proof, checkpoint.root_hash
    ):
        raise TrustError(
            "LOG_INCLUSION_INVALID",
            f"the approval of {what} (entry {index}) is not proven to be in the log of "
            f"{checkpoint.tree_size} entries with root {checkpoint.root_b64}",
        )
    check_consistency(api, store.get(api.backend), checkpoint)
    return signed


# --- the monitor --------------------------------------------------------------------------


def entry_pages(api: ApiClient, tree_size: int) -> Iterator[tuple[int, list[bytes]]]:
    """(start, entries) of every page of the first `tree_size` entries, in order."""
    for start in range(0, tree_size, PAGE_SIZE):
        yield start, fetch_entries(api, start, min(start + PAGE_SIZE, tree_size))


def _prefix_differs(backend: str, stored: Checkpoint, root: bytes) -> TrustError:
    return TrustError(
        "LOG_INCONSISTENT",
        f"the first {stored.tree_size} entries of the log of {backend} have root "
        f"{b64encode(root)}, not {_seen(stored)}: an entry was changed, removed or inserted",
    )


def recompute_root(api: ApiClient, tree_size: int, stored: Checkpoint | None) -> bytes:
    """Stream every entry (checked one by one), fold the leaves into a compact range, and
    compare the root of the stored checkpoint's prefix when the stream passes its size."""
    compact = CompactRange()
    if stored is not None and stored.tree_size == 0 and root_of([]) != stored.root_hash:
        raise _prefix_differs(api.backend, stored, root_of([]))
    for start, entries in entry_pages(api, tree_size):
        for index, data in enumerate(entries, start):
            parse_entry(data, index)
            compact.append(leaf_hash(data))
            if stored is not None and compact.size == stored.tree_size:
                root = compact.root()
                if root != stored.root_hash:
                    raise _prefix_differs(api.backend, stored, root)
    return compact.root()


@dataclass(frozen=True)
class LogReport:
    backend: str
    checkpoint: Checkpoint
    previous: Checkpoint | None

    def to_json(self) -> dict[str, Any]:
        previous = self.previous
        return {
            "backend": self.backend,
            **self.checkpoint.to_json(),
            "previous": None
            if previous is None
            else {
                "treeSize": previous.tree_size,
                "rootHash": previous.root_b64,
                "storedAt": previous.stored_at,
            },
        }

    def summary(self) -> str:
        head = f"log verified: {self.checkpoint.tree_size} entries, root {self.checkpoint.root_b64}"
        if self.previous is None:
            return f"{head}; first checkpoint stored for {self.backend}"
        return f"{head}, consistent with {_seen(self.previous)}"


def verify_log(
    api: ApiClient, *, pins: KeyPins | None = None, store: CheckpointStore | None = None
) -> LogReport:
    """The monitor: the signed checkpoint, every entry, the recomputed root equal to the
    signed one and, at the stored size, to the stored one. Stores the new checkpoint (and
    pins its key) only when all of it holds."""
    pins = pins if pins is not None else KeyPins()
    store = store if store is not None else CheckpointStore()
    stored = store.get(api.backend)
    signed = verify_checkpoint(api, fetch_checkpoint(api), pins)
    checkpoint = signed.checkpoint
    check_not_shrunk(api.backend, stored, checkpoint)
    root = recompute_root(api, checkpoint.tree_size, stored)
    if root != checkpoint.root_hash:
        raise TrustError(
            "LOG_ROOT_MISMATCH",
            f"the {checkpoint.tree_size} entries of the log of {api.backend} have root "
            f"{b64encode(root)}, the signed checkpoint says {checkpoint.root_b64}",
        )
    remember(api, signed, pins=pins, store=store)
    return LogReport(api.backend, checkpoint, stored)
