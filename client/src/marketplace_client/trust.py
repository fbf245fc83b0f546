"""Client-side trust: signed records checked against the service's keys, pinned on first use.

`verify_signed_record(api, record)` checks any `{keyId, payload, signature}` record the
service signs (the revocation list; `verify_release` for release records, which add
`logIndex`) and returns the payload's bytes:

1. the signing key is listed by the service now (`GET /api/v1/keys`);
2. every key pinned for this backend is still listed, with the same public key: a key list
   that lost or changed a key someone already trusted means the list was rewritten;
3. the Ed25519 signature of the payload bytes verifies;
4. the signing key is pinned (trust on first use) in `<config>/trusted-keys.json`, per backend.

Every refusal is a `TrustError` (exit code 3) with its own code and one line saying why.
`release_payload` / `check_release` then compare a release record with the download info.
`trusted_key` and `signature_valid` are the same checks for other signed things (the
transparency log's checkpoint, `transparency.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from marketplace_client.api import ApiClient
from marketplace_client.config import config_dir, write_private
from marketplace_client.errors import CliError
from marketplace_rules.canonical import b64decode

PINS_FILE = "trusted-keys.json"
KEYS_PATH = "/api/v1/keys"
TRUST_EXIT = 3  # every trust refusal; 1 stays for other failures
RECORD_FIELDS = frozenset({"keyId", "payload", "signature"})
# CONTRACT 15: a release record also says where its approval is in the transparency log.
RELEASE_RECORD_FIELDS = RECORD_FIELDS | {"logIndex"}
RELEASE_FIELDS = frozenset(
    {"kind", "key", "version", "distribution", "sha256", "size", "approvedAt"}
)


class TrustError(CliError):
    """The service's answer cannot be proven to be what it signed: nothing is installed."""

    exit_code = TRUST_EXIT


class KeyListInvalid(TrustError):
    """`GET /api/v1/keys` did not answer a key list (a malformed answer, not a bad key)."""


# --- pins -------------------------------------------------------------------------------


def load_backends_file(path: Path, kind: str) -> dict[str, Any]:
    """A client file of `{"backends": {url: ...}}` (pins, log checkpoints): empty when absent,
    CONFIG_UNREADABLE when it cannot be read or is not such a file (never silently empty)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"backends": {}}
    except (OSError, ValueError) as exc:
        raise CliError("CONFIG_UNREADABLE", f"cannot read {path}: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("backends"), dict):
        raise CliError("CONFIG_UNREADABLE", f"{path} is not a {kind} file")
    return document


class KeyPins:
    """`trusted-keys.json`: `{"backends": {url: {keyId: {publicKey, pinnedAt}}}}`."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else config_dir() / PINS_FILE

    def _load(self) -> dict[str, Any]:
        return load_backends_file(self.path, "trusted-keys")

    def pinned(self, backend: str) -> dict[str, str]:
        """keyId → base64 public key, for one backend."""
        entries = self._load()["backends"].get(backend)
        if not isinstance(entries, dict):
            return {}
        return {
            key_id: entry["publicKey"]
            for key_id, entry in entries.items()
            if isinstance(entry, dict) and isinstance(entry.get("publicKey"), str)
        }

    def pin(self, backend: str, key_id: str, public_key: str) -> None:
        document = self._load()
        entries = document["backends"].setdefault(backend, {})
        if key_id in entries:
            return
        entries[key_id] = {
            "publicKey": public_key,
            "pinnedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        try:
            write_private(self.path, json.dumps(document, indent=2, sort_keys=True) + "\n")
        except OSError as exc:
            raise CliError("CONFIG_UNWRITABLE", f"cannot write {self.path}: {exc}") from exc


# --- signed records ---------------------------------------------------------------------


@dataclass(frozen=True)
class SignedRecord:
    key_id: str
    payload: bytes
    signature: bytes
    log_index: int | None = None  # release records only (CONTRACT 15)


def _log_index(record: Mapping[str, Any], what: str) -> int | None:
    value = record.get("logIndex")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TrustError(
            "RECORD_INVALID", f"the signed record for {what} has a logIndex that is not an index"
        )
    return value


def parse_record(record: Any, what: str, *, release: bool = False) -> SignedRecord:
    """The record's shape: three strings, payload and signature in strict base64; a release
    record (`release=True`) may add `logIndex`, a non-negative integer (whether it must is
    the transparency check's call, which names the refusal)."""
    if record is None:
        raise TrustError("RELEASE_MISSING", f"the service sent no signed record for {what}")
    shapes = (RECORD_FIELDS, RELEASE_RECORD_FIELDS) if release else (RECORD_FIELDS,)
    if not isinstance(record, Mapping) or frozenset(record) not in shapes:
        shape = (
            "{keyId, payload, signature, logIndex}" if release else "{keyId, payload, signature}"
        )
        raise TrustError("RECORD_INVALID", f"the signed record for {what} is not {shape}")
    if not all(isinstance(record[name], str) for name in RECORD_FIELDS):
        raise TrustError("RECORD_INVALID", f"the signed record for {what} has non-text fields")
    log_index = _log_index(record, what)
    try:
        return SignedRecord(
            record["keyId"],
            b64decode(record["payload"]),
            b64decode(record["signature"]),
            log_index,
        )
    except ValueError:
        raise TrustError(
            "RECORD_INVALID", f"the signed record for {what} is not standard base64"
        ) from None


def listed_keys(api: ApiClient) -> dict[str, str]:
    """keyId → base64 public key, as the service lists them now (retired keys included)."""
    data = api.get(KEYS_PATH)
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise KeyListInvalid("RECORD_INVALID", f"{KEYS_PATH} did not answer a key list")
    keys: dict[str, str] = {}
    for item in items:
        if isinstance(item, dict) and item.get("algorithm") == "ed25519":
            key_id, public = item.get("keyId"), item.get("publicKey")
            if isinstance(key_id, str) and isinstance(public, str):
                keys[key_id] = public
    return keys


def _check_pins(backend: str, listed: Mapping[str, str], pins: KeyPins) -> None:
    for key_id, public in sorted(pins.pinned(backend).items()):
        if key_id not in listed:
            raise TrustError(
                "KEY_WITHDRAWN",
                f"key {key_id}, trusted earlier for {backend}, is no longer listed by the "
                f"service; refusing (remove it from {pins.path} only if you know why)",
            )
        if listed[key_id] != public:
            raise TrustError(
                "KEY_CHANGED",
                f"key {key_id} listed by {backend} is not the public key trusted earlier; "
                f"refusing (remove it from {pins.path} only if you know why)",
            )


def signature_valid(public_b64: str, message: bytes, signature: bytes) -> bool:
    """Whether `signature` is the Ed25519 signature of `message` by the base64 public key."""
    try:
        Ed25519PublicKey.from_public_bytes(b64decode(public_b64)).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def trusted_key(api: ApiClient, key_id: str, pins: KeyPins) -> str | None:
    """The base64 public key of `key_id` as the service lists it now, None when it is not
    listed. Every key pinned earlier for this backend must still be listed unchanged first
    (`KEY_WITHDRAWN`, `KEY_CHANGED`): whatever signed the thing checked, a rewritten key
    list is a refusal of its own."""
    listed = listed_keys(api)
    _check_pins(api.backend, listed, pins)
    return listed.get(key_id)


def _verify(api: ApiClient, signed: SignedRecord, what: str, pins: KeyPins) -> None:
    """The record's signature by a listed key, pins holding; pins the key on success."""
    public = trusted_key(api, signed.key_id, pins)
    if public is None:
        raise TrustError(
            "KEY_UNKNOWN",
            f"{what} is signed by key {signed.key_id}, which {api.backend} does not list",
        )
    if not signature_valid(public, signed.payload, signed.signature):
        raise TrustError(
            "SIGNATURE_INVALID",
            f"the signature of {what} does not verify with key {signed.key_id}",
        )
    pins.pin(api.backend, signed.key_id, public)


def verify_signed_record(
    api: ApiClient, record: Any, *, what: str, pins: KeyPins | None = None
) -> bytes:
    """The payload bytes of a `{keyId, payload, signature}` record the service signed.

    `what` names the record in messages ("weather 1.2.0", "the revocation list").
    Raises `TrustError` unless the signature verifies with a key the service lists now and
    every key pinned earlier for this backend is still listed unchanged. Pins the signing
    key on success.
    """
    signed = parse_record(record, what)
    _verify(api, signed, what, pins if pins is not None else KeyPins())
    return signed.payload


@dataclass(frozen=True)
class Release:
    """A release record whose signature verified: its fields, who signed it and where its
    approval is logged (None when the service did not say)."""

    fields: dict[str, Any]
    key_id: str
    log_index: int | None


def verify_release(
    api: ApiClient, record: Any, *, what: str, pins: KeyPins | None = None
) -> Release:
    """A release record (`{keyId, payload, signature, logIndex}`) checked as
    `verify_signed_record` checks any record, its payload read as CONTRACT 11's fields."""
    signed = parse_record(record, what, release=True)
    _verify(api, signed, what, pins if pins is not None else KeyPins())
    return Release(release_payload(signed.payload, what), signed.key_id, signed.log_index)


# --- release records --------------------------------------------------------------------


def release_payload(payload: bytes, what: str) -> dict[str, Any]:
    """The release record's fields: exactly CONTRACT 11's, as JSON."""
    try:
        fields = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise TrustError("RECORD_INVALID", f"the release record of {what} is not JSON") from None
    if not isinstance(fields, dict) or set(fields) != RELEASE_FIELDS:
        raise TrustError(
            "RECORD_INVALID", f"the release record of {what} does not have the contract's fields"
        )
    return fields


def check_release(release: Mapping[str, Any], expected: Mapping[str, Any], what: str) -> None:
    """Each expected field equals the signed one (the first difference is named)."""
    for name, value in expected.items():
        if release.get(name) != value:
            raise TrustError(
                "RELEASE_MISMATCH",
                f"the signed release of {what} says {name} {release.get(name)!r}, "
                f"the download information says {value!r}",
            )


def check_bytes(release: Mapping[str, Any], sha256: str, size: int, what: str) -> None:
    """What was received (package bytes, or the manifest's canonical JSON) is what was signed."""
    if release.get("size") != size:
        raise TrustError(
            "SIZE_MISMATCH",
            f"{what} is {size} bytes, its signed release says {release.get('size')}",
        )
    if release.get("sha256") != sha256:
        raise TrustError(
            "CHECKSUM_MISMATCH",
            f"SHA256 of {what} is {sha256}, its signed release says {release.get('sha256')}",
        )
