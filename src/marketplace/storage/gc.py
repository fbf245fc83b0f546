"""Remove blobs that no row references (what a crash between blob and row leaves)."""

from __future__ import annotations

from collections.abc import Set
from datetime import UTC, datetime, timedelta

from marketplace.storage.base import BlobStore

DEFAULT_MIN_AGE_SECONDS = 3600


async def collect_garbage(
    store: BlobStore,
    referenced: Set[str],
    *,
    min_age_seconds: int = DEFAULT_MIN_AGE_SECONDS,
    dry_run: bool = False,
    now: datetime | None = None,
) -> list[str]:
    """Delete unreferenced blobs older than `min_age_seconds`; return their keys, sorted.

    Read `referenced` (every blob key a row points at) just before calling. Young blobs are
    kept because an upload writes its blob before its row commits; a re-upload of the same
    bytes renews the blob's age (see `BlobStore.put_file`). Leftover temporary files and
    unfinished multipart uploads older than the same age are removed too.
    """
    if min_age_seconds < 0:
        raise ValueError("min_age_seconds must not be negative")
    now = now or datetime.now(UTC)
    cutoff = now - timedelta(seconds=min_age_seconds)
    candidates = [
        info.key
        async for info in store.iter_blobs()
        if info.key not in referenced and info.modified_at <= cutoff
    ]
    removed: list[str] = []
    for key in sorted(candidates):
        # Look again just before deleting: an upload may have renewed the blob meanwhile.
        info = await store.stat(key)
        if info is None or info.modified_at > cutoff:
            continue
        if not dry_run:
            await store.delete(key)
        removed.append(key)
    if not dry_run:
        await store.remove_partial_uploads(older_than_seconds=min_age_seconds)
    return removed
