"""A file opened for upload that reports how far the upload has read it."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path


class ProgressFile(io.FileIO):
    """Binary file whose reads call `on_progress(position)`; httpx streams it in chunks.

    The position (not an increment) is reported, so a body rendered twice (httpx seeks
    back to 0 first) does not count twice.
    """

    def __init__(self, path: Path, on_progress: Callable[[int], None]) -> None:
        super().__init__(path, "rb")
        self._on_progress = on_progress

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size) or b""
        self._on_progress(self.tell())
        return chunk
