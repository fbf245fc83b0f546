from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi import FastAPI


class FakeBlobStore:
    """The presigned_url part of marketplace.storage's BlobStore, recording its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    async def presigned_url(
        self, key: str, *, filename: str, expires_in: int
    ) -> tuple[str, datetime]:
        self.calls.append((key, filename, expires_in))
        expires = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=expires_in)
        return f"https://blobs.test/{key}?filename={filename}&signature=x", expires

    async def aclose(self) -> None:
        return None


@pytest.fixture
def blob_store(app: FastAPI) -> FakeBlobStore:
    store = FakeBlobStore()
    app.state.blob_store = store
    return store
