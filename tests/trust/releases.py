"""Helpers for release-record tests: read a `{keyId, payload, signature}` record back."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI

from marketplace.trust.keyring import Keyring, verify
from marketplace_rules.canonical import b64decode, canonical_json

RECORD_KEYS = {"kind", "key", "version", "distribution", "sha256", "size", "approvedAt"}


def open_release(app: FastAPI, record: Any) -> dict[str, Any]:
    """The record's fields, after checking its signature with the app's keyring (any of its
    keys, retired included) and that the payload is canonical JSON with exactly the
    contract's keys, and that its logIndex (CONTRACT 15) is an index."""
    assert isinstance(record, dict)
    assert set(record) == {"keyId", "payload", "signature", "logIndex"}
    assert isinstance(record["logIndex"], int) and record["logIndex"] >= 0
    keyring: Keyring = app.state.keyring
    [key] = [k for k in keyring.keys() if k.key_id == record["keyId"]]
    payload = b64decode(record["payload"])
    assert verify(key.public_key, payload, b64decode(record["signature"]))
    fields: dict[str, Any] = json.loads(payload)
    assert set(fields) == RECORD_KEYS
    assert canonical_json(fields) == payload
    return fields
