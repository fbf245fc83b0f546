"""A fake service's signing keys: `GET /api/v1/keys`, signed release records (CONTRACT 11)
and the transparency log their approvals are appended to (CONTRACT 15)."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from marketplace.trust.keyring import key_id_of, public_raw
from marketplace_client.transparency import (
    CHECKPOINT_PATH,
    CONSISTENCY_PATH,
    ENTRIES_PATH,
    INCLUSION_PATH,
    PAGE_SIZE,
)
from marketplace_rules.canonical import b64encode, canonical_json
from marketplace_rules.merkle import consistency_ranges, inclusion_ranges, leaf_hash, root_of

from .fake_api import FakeApi, envelope, error

KEYS = "/api/v1/keys"
APPROVED_AT = "2026-11-22T08:00:00Z"
ORIGIN = "market.test/log"
# The calls of the install's log check when this client has no checkpoint stored yet.
FIRST_LOG_CHECK = [
    ("GET", CHECKPOINT_PATH),
    ("GET", KEYS),
    ("GET", ENTRIES_PATH),
    ("GET", INCLUSION_PATH),
]


def log_entry(index: int, action: str, **fields: Any) -> bytes:
    """An entry's exact bytes: the contract's fields (absent ones null), canonical JSON."""
    names = ("kind", "key", "version", "distribution", "sha256", "size", "keyId", "at")
    return canonical_json({"index": index, "action": action} | {n: fields.get(n) for n in names})


def approval_entry(index: int, fields: dict[str, Any], key_id: str) -> bytes:
    """The approval entry of a release record's fields, signed by `key_id`."""
    copied = {n: fields[n] for n in ("kind", "key", "version", "distribution", "sha256", "size")}
    return log_entry(index, "approve", **copied, keyId=key_id, at=fields["approvedAt"])


class FakeLog:
    """The service's transparency log in memory: `entries` are the exact leaf bytes, and
    tests may change, remove or insert them to play a service that rewrites its history.
    Checkpoints and proofs are computed from `entries` as they are when asked for."""

    def __init__(self) -> None:
        self.entries: list[bytes] = []

    def append(self, action: str, **fields: Any) -> int:
        index = len(self.entries)
        self.entries.append(log_entry(index, action, **fields))
        return index

    def range_hash(self, start: int, end: int) -> bytes:
        return root_of(leaf_hash(entry) for entry in self.entries[start:end])

    def root(self, size: int | None = None) -> bytes:
        return self.range_hash(0, len(self.entries) if size is None else size)

    def inclusion(self, index: int, size: int) -> list[str]:
        return [b64encode(self.range_hash(*span)) for span in inclusion_ranges(index, size)]

    def consistency(self, first: int, second: int) -> list[str]:
        return [b64encode(self.range_hash(*span)) for span in consistency_ranges(first, second)]


def _query(request: httpx.Request, *names: str) -> list[int] | None:
    try:
        return [int(request.url.params[name]) for name in names]
    except (KeyError, ValueError):
        return None


class FakeSigner:
    """Keys oldest first; the last one signs. `listed` is what the fake lists at /keys.
    `release` signs a release record and appends its approval to `log`."""

    def __init__(self) -> None:
        self.keys = [Ed25519PrivateKey.generate()]
        self.log = FakeLog()

    @staticmethod
    def key_id(key: Ed25519PrivateKey) -> str:
        return key_id_of(public_raw(key.public_key()))

    def rotate(self) -> None:
        self.keys.append(Ed25519PrivateKey.generate())

    def listing(self, keys: list[Ed25519PrivateKey] | None = None) -> dict[str, Any]:
        return {
            "items": [
                {
                    "keyId": self.key_id(key),
                    "algorithm": "ed25519",
                    "publicKey": b64encode(public_raw(key.public_key())),
                    "createdAt": APPROVED_AT,
                    "retiredAt": None,
                }
                for key in (self.keys if keys is None else keys)
            ]
        }

    def serve_keys(self, fake: FakeApi) -> None:
        fake.ok("GET", KEYS, self.listing())

    def sign(self, fields: dict[str, Any], key: Ed25519PrivateKey | None = None) -> dict[str, str]:
        signer = key or self.keys[-1]
        payload = canonical_json(fields)
        return {
            "keyId": self.key_id(signer),
            "payload": b64encode(payload),
            "signature": b64encode(signer.sign(payload)),
        }

    def release(
        self, fields: dict[str, Any], key: Ed25519PrivateKey | None = None
    ) -> dict[str, Any]:
        """A signed release record whose approval is appended to the log (with `logIndex`)."""
        record: dict[str, Any] = self.sign(fields, key)
        index = len(self.log.entries)
        self.log.entries.append(approval_entry(index, fields, record["keyId"]))
        return {**record, "logIndex": index}

    # --- the log's endpoints ----------------------------------------------------------

    def checkpoint(
        self,
        size: int | None = None,
        key: Ed25519PrivateKey | None = None,
        origin: str = ORIGIN,
    ) -> dict[str, Any]:
        """The checkpoint of the log's first `size` entries (all), signed by `key` (the
        signing key), naming `origin`."""
        signer = key or self.keys[-1]
        tree_size = len(self.log.entries) if size is None else size
        root = b64encode(self.log.root(tree_size))
        body = f"{origin}\n{tree_size}\n{root}\n".encode()
        return {
            "origin": origin,
            "treeSize": tree_size,
            "rootHash": root,
            "keyId": self.key_id(signer),
            "signature": b64encode(signer.sign(body)),
        }

    def serve_log(self, fake: FakeApi) -> None:
        """The four public log endpoints, answered from the log as it is at each request."""
        fake.on("GET", CHECKPOINT_PATH, lambda _request: envelope(self.checkpoint()))
        fake.on("GET", ENTRIES_PATH, self._entries)
        fake.on("GET", INCLUSION_PATH, self._inclusion)
        fake.on("GET", CONSISTENCY_PATH, self._consistency)

    def _entries(self, request: httpx.Request) -> httpx.Response:
        span = _query(request, "start", "end")
        size = len(self.log.entries)
        if span is None or not 0 <= span[0] < span[1] <= size or span[1] - span[0] > PAGE_SIZE:
            return error(400, "VALIDATION_FAILED", f"bad range {span} for {size} entries")
        start, end = span
        items = [
            {"index": index, "entry": b64encode(self.log.entries[index])}
            for index in range(start, end)
        ]
        return envelope({"items": items})

    def _inclusion(self, request: httpx.Request) -> httpx.Response:
        asked = _query(request, "index", "treeSize")
        if asked is None or not 0 <= asked[0] < asked[1] <= len(self.log.entries):
            return error(400, "VALIDATION_FAILED", f"bad inclusion query {asked}")
        index, size = asked
        hashes = self.log.inclusion(index, size)
        return envelope({"index": index, "treeSize": size, "hashes": hashes})

    def _consistency(self, request: httpx.Request) -> httpx.Response:
        asked = _query(request, "first", "second")
        if asked is None or not 0 <= asked[0] <= asked[1] <= len(self.log.entries):
            return error(400, "VALIDATION_FAILED", f"bad consistency query {asked}")
        first, second = asked
        hashes = self.log.consistency(first, second)
        return envelope({"first": first, "second": second, "hashes": hashes})


def release_fields(
    *,
    version: str,
    distribution: str,
    sha256: str | None,
    size: int | None,
    key: str = "demo-plugin",
    kind: str = "plugin",
) -> dict[str, Any]:
    return {
        "kind": kind,
        "key": key,
        "version": version,
        "distribution": distribution,
        "sha256": sha256,
        "size": size,
        "approvedAt": APPROVED_AT,
    }


def manifest_digest(manifest: dict[str, Any]) -> tuple[str, int]:
    data = canonical_json(manifest)
    return hashlib.sha256(data).hexdigest(), len(data)
