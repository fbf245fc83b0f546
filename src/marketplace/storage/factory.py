"""Choose the blob store from MARKETPLACE_STORAGE_URL."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from marketplace.config import Settings
from marketplace.storage.base import BlobStore
from marketplace.storage.local import LocalBlobStore


def make_blob_store(settings: Settings) -> BlobStore:
    """`file://<folder>` → LocalBlobStore, `s3://bucket?...` → S3BlobStore."""
    url = settings.storage_url
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"storage URL needs a scheme (file:// or s3://): {url!r}")
    if scheme == "file":
        return LocalBlobStore(
            _file_url_path(rest), secret=settings.secret(), public_url=settings.public_url
        )
    if scheme == "s3":
        # Imported here so the default local setup never loads boto3.
        from marketplace.storage.s3 import S3BlobStore, parse_s3_url

        return S3BlobStore(
            parse_s3_url(url),
            connect_timeout=settings.storage_connect_timeout_seconds,
            read_timeout=settings.storage_read_timeout_seconds,
            write_deadline=settings.storage_write_deadline_seconds,
        )
    raise ValueError(f"unsupported storage URL scheme {scheme!r}; use file:// or s3://")


def _file_url_path(rest: str) -> Path:
    # `file:///srv/blobs` and `file://localhost/srv/blobs` are absolute; `file://./blobs`
    # is accepted as a relative folder for convenience.
    if rest.startswith("localhost/"):
        rest = rest[len("localhost") :]
    path = unquote(rest)
    if not path:
        raise ValueError("file:// storage URL needs a folder")
    return Path(path)
