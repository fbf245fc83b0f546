"""Shapes of CONTRACT 11's signing keys and signed records."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from marketplace.kit.schemas import OutputModel


class PublicKeyOut(OutputModel):
    key_id: str
    algorithm: Literal["ed25519"]
    public_key: str
    created_at: datetime
    retired_at: datetime | None


class PublicKeys(OutputModel):
    items: list[PublicKeyOut]


class SignedRecord(OutputModel):
    """A canonical JSON record (base64 `payload`) and the Ed25519 signature of its bytes."""

    key_id: str
    payload: str
    signature: str


class ReleaseRecord(SignedRecord):
    """A release record (CONTRACT 11) and the index of its approval in the transparency log
    (CONTRACT 15); the inclusion proof of that entry binds the two."""

    log_index: int
