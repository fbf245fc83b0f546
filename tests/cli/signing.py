"""A fake service's signing keys: `GET /api/v1/keys` and signed release records (CONTRACT 11)."""

from __future__ import annotations

import hashlib
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from marketplace.trust.keyring import key_id_of, public_raw
from marketplace_rules.canonical import b64encode, canonical_json

from .fake_api import FakeApi

KEYS = "/api/v1/keys"
APPROVED_AT = "2026-11-22T08:00:00Z"


class FakeSigner:
    """Keys oldest first; the last one signs. `listed` is what the fake lists at /keys."""

    def __init__(self) -> None:
        self.keys = [Ed25519PrivateKey.generate()]

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
