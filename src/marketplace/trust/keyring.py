"""The service's Ed25519 signing keys.

Where they come from:
- `MARKETPLACE_SIGNING_KEYS` (the keyring's JSON, for scale-out: every host gets the same keys
  from the deployment's secret store);
- else `MARKETPLACE_SIGNING_KEYS_FILE`, else `<data folder>/signing-keys.json`, created with one
  key on first use (mode 0600), like `secret.key`.

The newest key that is not retired signs. Retired keys stay in the keyring and in
`GET /api/v1/keys`, so releases signed before a rotation still verify. A file keyring is
re-read when it changes on disk, so `marketplace keys rotate` reaches running workers without a
restart.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from marketplace.config import Settings
from marketplace_rules.canonical import b64decode, b64encode

ALGORITHM = "ed25519"
KEYRING_FILE = "signing-keys.json"


class KeyringError(Exception):
    """The keyring cannot be read or has no key that may sign."""


def key_id_of(public_raw: bytes) -> str:
    """A short, stable name derived from the public key itself, so it cannot be mislabelled."""
    return hashlib.sha256(public_raw).hexdigest()[:16]


def public_raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw)


@dataclass(frozen=True)
class SigningKey:
    key_id: str
    private: Ed25519PrivateKey
    created_at: datetime
    retired_at: datetime | None

    @property
    def public_key(self) -> bytes:
        return public_raw(self.private.public_key())

    def listing(self) -> dict[str, Any]:
        """The public part, as `GET /api/v1/keys` lists it."""
        return {
            "keyId": self.key_id,
            "algorithm": ALGORITHM,
            "publicKey": b64encode(self.public_key),
            "createdAt": self.created_at,
            "retiredAt": self.retired_at,
        }


@dataclass(frozen=True)
class Signature:
    key_id: str
    signature: str  # base64


def new_key(now: datetime) -> SigningKey:
    private = Ed25519PrivateKey.generate()
    return SigningKey(key_id_of(public_raw(private.public_key())), private, now, None)


def _parse_time(value: Any, field: str) -> datetime:
    if not isinstance(value, str):
        raise KeyringError(f"{field} must be an ISO 8601 time")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise KeyringError(f"{field} must be an ISO 8601 time") from exc
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _parse_key(entry: Any) -> SigningKey:
    if not isinstance(entry, dict):
        raise KeyringError("each key must be an object")
    try:
        raw = b64decode(str(entry.get("privateKey", "")))
        private = Ed25519PrivateKey.from_private_bytes(raw)
    except ValueError as exc:
        raise KeyringError("privateKey must be the base64 of 32 raw Ed25519 bytes") from exc
    key_id = key_id_of(public_raw(private.public_key()))
    if entry.get("keyId", key_id) != key_id:
        raise KeyringError(f"keyId {entry.get('keyId')!r} does not match its private key")
    retired = entry.get("retiredAt")
    return SigningKey(
        key_id,
        private,
        _parse_time(entry.get("createdAt"), "createdAt"),
        None if retired is None else _parse_time(retired, "retiredAt"),
    )


def parse_keyring(text: str) -> list[SigningKey]:
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise KeyringError("the keyring is not JSON") from exc
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise KeyringError('the keyring must be {"keys": [...]} with at least one key')
    keys = [_parse_key(entry) for entry in entries]
    if len({key.key_id for key in keys}) != len(keys):
        raise KeyringError("the keyring lists a key twice")
    return keys


def dump_keyring(keys: list[SigningKey]) -> str:
    entries = [
        {
            "keyId": key.key_id,
            "algorithm": ALGORITHM,
            "privateKey": b64encode(
                key.private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
            ),
            "createdAt": key.created_at.isoformat(),
            "retiredAt": None if key.retired_at is None else key.retired_at.isoformat(),
        }
        for key in keys
    ]
    return json.dumps({"keys": entries}, indent=2) + "\n"


def _write_private(path: Path, text: str, *, exclusive: bool) -> None:
    """Write a file only its owner can read; atomically (rename), or only if absent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if exclusive:
        # O_EXCL on a temporary name then link(): two workers starting together agree on one
        # keyring, and no reader ever sees a half-written file.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        _write_new(tmp, text)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    _write_new(tmp, text)
    os.replace(tmp, path)


def _write_new(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


class Keyring:
    """The keys, from a setting (fixed) or a file (re-read when it changes)."""

    def __init__(self, *, inline: str | None = None, path: Path | None = None) -> None:
        if (inline is None) == (path is None):
            raise ValueError("a keyring comes from inline JSON or from a file")
        self._path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._keys: list[SigningKey] = []
        if inline is not None:
            self._keys = parse_keyring(inline)
            _signing_key(self._keys)

    @classmethod
    def from_settings(cls, settings: Settings) -> Keyring:
        if settings.signing_keys is not None:
            return cls(inline=settings.signing_keys.get_secret_value())
        return cls(path=keyring_path(settings))

    @property
    def path(self) -> Path | None:
        return self._path

    def keys(self) -> list[SigningKey]:
        """Every key, oldest first; a file keyring is created on first use."""
        if self._path is None:
            return self._keys
        with self._lock:
            self._refresh(self._path)
            return self._keys

    def _refresh(self, path: Path) -> None:
        try:
            stat = path.stat()
        except FileNotFoundError:
            _write_private(path, dump_keyring([new_key(_now())]), exclusive=True)
            stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            keys = parse_keyring(path.read_text(encoding="utf-8"))
            _signing_key(keys)
            self._keys, self._stamp = keys, stamp

    def loaded_keys(self) -> list[SigningKey]:
        """The keys as last read, without touching the file (for a caller on the event loop
        that has just signed, so they are fresh); read once if they never were."""
        if self._path is not None and self._stamp is None:
            return self.keys()
        return self._keys

    def signing_key(self) -> SigningKey:
        return _signing_key(self.keys())

    def sign(self, payload: bytes) -> Signature:
        key = self.signing_key()
        return Signature(key.key_id, b64encode(key.private.sign(payload)))

    def listing(self) -> list[dict[str, Any]]:
        return [key.listing() for key in self.keys()]


def _signing_key(keys: list[SigningKey]) -> SigningKey:
    active = [key for key in keys if key.retired_at is None]
    if not active:
        raise KeyringError("every key in the keyring is retired: rotate to add one")
    return max(active, key=lambda key: key.created_at)


def keyring_path(settings: Settings) -> Path:
    return settings.signing_keys_file or settings.data_dir / KEYRING_FILE


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """One rotation at a time on this host (fcntl lock beside the keyring)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def rotate_file(path: Path) -> tuple[SigningKey, list[SigningKey]]:
    """Add a new signing key and retire the ones that signed until now.

    Returns the new key and the keys it retired.
    """
    with _exclusive(path):
        keyring = Keyring(path=path)
        keys = keyring.keys()
        now = _now()
        retired = [key for key in keys if key.retired_at is None]
        updated = [key if key.retired_at else replace(key, retired_at=now) for key in keys]
        fresh = new_key(now)
        _write_private(path, dump_keyring([*updated, fresh]), exclusive=False)
    return fresh, retired


def rotate_inline(text: str) -> tuple[str, SigningKey]:
    """For a keyring held in a setting: the rotated keyring's JSON, to store back by hand."""
    keys = parse_keyring(text)
    now = _now()
    updated = [key if key.retired_at else replace(key, retired_at=now) for key in keys]
    fresh = new_key(now)
    return dump_keyring([*updated, fresh]), fresh


def verify(public_key: bytes, payload: bytes, signature: bytes) -> bool:
    """Whether `signature` is `public_key`'s Ed25519 signature of `payload`."""
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, payload)
    except (InvalidSignature, ValueError):
        return False
    return True
