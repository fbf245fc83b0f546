"""Blob storage: content-addressed package files behind one small interface.

`make_blob_store` (in `factory`) picks the implementation from `MARKETPLACE_STORAGE_URL`;
the S3 module is imported only when an `s3://` URL is configured.
"""

from marketplace.storage.base import (
    BlobInfo,
    BlobNotFound,
    BlobStore,
    InvalidBlobKey,
    blob_key,
    check_blob_key,
    is_blob_key,
    sha256_of_key,
)

__all__ = [
    "BlobInfo",
    "BlobNotFound",
    "BlobStore",
    "InvalidBlobKey",
    "blob_key",
    "check_blob_key",
    "is_blob_key",
    "sha256_of_key",
]
