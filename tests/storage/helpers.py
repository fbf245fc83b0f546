"""Plain helpers of the blob store tests: a controllable clock and hashed blobs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from marketplace.storage.base import BlobStore

TEST_SECRET = "test-secret-key-for-download-links"
PUBLIC_URL = "http://testserver"
START_TIME = 1_800_000_000.0


class FakeClock:
    def __init__(self, now: float = START_TIME) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class Blob:
    key: str
    sha256: str
    path: Path
    data: bytes


BlobMaker = Callable[[bytes], Blob]
BlobPutter = Callable[[BlobStore, bytes], Awaitable[Blob]]
