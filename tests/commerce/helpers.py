"""A blob store double for download tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


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
