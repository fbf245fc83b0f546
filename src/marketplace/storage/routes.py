"""Serve local blobs through their signed, expiring links (the S3 store needs no route)."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Path, Query, Request, Response
from fastapi.responses import StreamingResponse

from marketplace.errors import AppError, Forbidden, NotFound
from marketplace.kit.error_codes import raises
from marketplace.kit.routing import api_router
from marketplace.storage.base import (
    PACKAGE_CONTENT_TYPE,
    content_disposition,
    is_blob_key,
    sha256_of_key,
)
from marketplace.storage.deps import BlobStoreDep
from marketplace.storage.local import BLOB_ROUTE, LocalBlobStore
from marketplace.storage.signing import EXPIRES_PATTERN, SIG_PATTERN

router = api_router(tags=["storage"])

_RANGE_RE = re.compile(r"bytes=(\d*)-(\d*)", re.IGNORECASE)


class RangeNotSatisfiable(AppError):
    status_code = 416
    code = "RANGE_NOT_SATISFIABLE"
    message = "Requested range is outside the file"


def _blob_not_found() -> NotFound:
    return NotFound("Blob not found")


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """The single byte range asked for, as (start, end inclusive).

    None means "send the whole file": the header is malformed or asks for several ranges,
    which RFC 9110 lets a server ignore. Raises RangeNotSatisfiable for a range past the end.
    """
    match = _RANGE_RE.fullmatch(header.strip())
    if match is None:
        return None
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:  # bytes=-n: the last n bytes
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise _unsatisfiable(size)
        return max(0, size - suffix), size - 1
    start = int(first)
    end = int(last) if last else size - 1
    if last and end < start:
        return None
    if start >= size:
        raise _unsatisfiable(size)
    return start, min(end, size - 1)


def _unsatisfiable(size: int) -> RangeNotSatisfiable:
    return RangeNotSatisfiable(details={"size": size}, headers={"Content-Range": f"bytes */{size}"})


def _etag_matches(header: str, etag: str) -> bool:
    # If-None-Match uses weak comparison: W/"x" matches "x".
    tags = {t.strip().removeprefix("W/") for t in header.split(",")}
    return "*" in tags or etag in tags


# A blob key is three path segments (`ab/cd/<sha256>`), each its own parameter: one
# parameter holding slashes cannot be generated from the document (path values are one
# segment), and the key's three parts are each a plain pattern.
BLOB_PATH = f"{BLOB_ROUTE}/{{shard}}/{{subshard}}/{{digest}}"
_SHARD = Path(json_schema_extra={"pattern": "^[0-9a-f]{2}$"})


@router.get(BLOB_PATH, operation_id="download_blob")
@router.head(BLOB_PATH, include_in_schema=False)
@raises(NotFound, Forbidden, RangeNotSatisfiable)
async def download_blob(
    shard: Annotated[str, _SHARD],
    subshard: Annotated[str, _SHARD],
    digest: Annotated[str, Path(json_schema_extra={"pattern": "^[0-9a-f]{64}$"})],
    request: Request,
    store: BlobStoreDep,
    expires: Annotated[
        str | None, Query(json_schema_extra={"pattern": f"^{EXPIRES_PATTERN}$"})
    ] = None,
    filename: str | None = None,
    sig: Annotated[str | None, Query(json_schema_extra={"pattern": f"^{SIG_PATTERN}$"})] = None,
) -> Response:
    """Download a package file through a signed link from the download endpoint.

    The link names the blob, its expiry and the file name, signed with HMAC-SHA256; an
    altered or expired link is 403 FORBIDDEN. Supports single byte ranges and
    If-None-Match.
    """
    key = f"{shard}/{subshard}/{digest}"
    if not isinstance(store, LocalBlobStore) or not is_blob_key(key):
        raise _blob_not_found()
    filename = store.signer.verify(key, expires, filename, sig)
    info = await store.stat(key)
    if info is None:
        raise _blob_not_found()

    etag = f'"{sha256_of_key(key)}"'
    headers = {
        "ETag": etag,
        "Accept-Ranges": "bytes",
        "Content-Disposition": content_disposition(filename),
        # Paid packages: no shared cache may keep a copy.
        "Cache-Control": "private, no-transform",
        "X-Content-Type-Options": "nosniff",
    }
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None and _etag_matches(if_none_match, etag):
        return Response(status_code=304, headers=headers)

    byte_range = None
    range_header = request.headers.get("range")
    if_range = request.headers.get("if-range")
    # If-Range: a range only applies to the representation the client already has.
    if range_header is not None and (if_range is None or if_range.strip() == etag):
        byte_range = parse_range(range_header, info.size)

    status, start, length = 200, 0, info.size
    if byte_range is not None:
        start, end = byte_range
        status, length = 206, end - start + 1
        headers["Content-Range"] = f"bytes {start}-{end}/{info.size}"
    headers["Content-Length"] = str(length)

    if request.method == "HEAD":
        return Response(status_code=status, headers=headers, media_type=PACKAGE_CONTENT_TYPE)
    return StreamingResponse(
        store.iter_bytes(key, start=start, length=length),
        status_code=status,
        headers=headers,
        media_type=PACKAGE_CONTENT_TYPE,
    )
