"""Blobs in an S3-compatible object store (AWS S3, MinIO, R2, Ceph); downloads by presigned URL.

boto3 is synchronous, so every call runs in a worker thread: the event loop never waits on
the network. Credentials come from boto3's usual chain (AWS_ACCESS_KEY_ID, profiles, IAM
roles), never from the storage URL, so they do not end up in logs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import parse_qsl, urlsplit

import anyio
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from marketplace.errors import StorageUnavailable
from marketplace.storage.base import (
    PACKAGE_CONTENT_TYPE,
    BlobInfo,
    BlobNotFound,
    StoreNotReady,
    blob_key,
    check_blob_key,
    check_filename,
    content_disposition,
    is_blob_key,
)

AddressingStyle = Literal["auto", "path", "virtual"]
# SigV4 presigned URLs cannot live longer than seven days.
MAX_PRESIGN_SECONDS = 7 * 24 * 3600
CHUNK_SIZE = 64 * 1024
_NOT_FOUND_CODES = {"404", "NoSuchKey", "NotFound", "NoSuchBucket"}
_QUERY_KEYS = {"endpoint_url", "region", "addressing_style", "public_endpoint_url"}
# One retry for a passing blip; more would multiply the read timeout a client waits.
MAX_ATTEMPTS = 2
# S3 calls of package writes still running in this process, those abandoned at their
# deadline included (each holds a thread, and an upload's transfer threads, until its own
# timeouts end it). Past this, a write is refused at once: a store that stays hung while
# clients retry must not pile up threads without a bound.
MAX_WRITE_CALLS_IN_FLIGHT = 16


@dataclass(frozen=True, slots=True)
class S3Config:
    bucket: str
    prefix: str = ""
    endpoint_url: str | None = None
    region: str | None = None
    addressing_style: AddressingStyle = "auto"
    # Where clients reach the store when it differs from the API's view (e.g. a MinIO
    # container named `minio` inside the network, `https://s3.example.com` outside).
    public_endpoint_url: str | None = None


def parse_s3_url(url: str) -> S3Config:
    """`s3://bucket[/prefix]?endpoint_url=...&region=...&addressing_style=path|virtual|auto`.

    A custom endpoint (MinIO, moto, Ceph) defaults to path-style addressing.
    """
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError("storage URL must look like s3://bucket?endpoint_url=...&region=...")
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = dict(pairs)
    if len(query) != len(pairs):
        raise ValueError("storage URL repeats a parameter")
    unknown = set(query) - _QUERY_KEYS
    if unknown:
        raise ValueError(f"unknown storage URL parameter(s): {', '.join(sorted(unknown))}")
    endpoint_url = query.get("endpoint_url") or None
    style = query.get("addressing_style") or ("path" if endpoint_url else "auto")
    if style not in ("auto", "path", "virtual"):
        raise ValueError("addressing_style must be auto, path or virtual")
    prefix = parts.path.strip("/")
    return S3Config(
        bucket=parts.netloc,
        prefix=f"{prefix}/" if prefix else "",
        endpoint_url=endpoint_url,
        region=query.get("region") or None,
        addressing_style=cast(AddressingStyle, style),
        public_endpoint_url=query.get("public_endpoint_url") or None,
    )


# /readyz writes a probe object at most this often; a bucket's existence is asked each time.
_WRITE_CHECK_SECONDS = 300.0
# Not a blob key (those are `ab/cd/<sha256>`), so iter_blobs and gc never see it.
_READY_PROBE_KEY = ".readyz-probe"


def _is_not_found(error: ClientError) -> bool:
    code = str(error.response.get("Error", {}).get("Code", ""))
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in _NOT_FOUND_CODES or status == 404


def _is_outage(error: Exception) -> bool:
    """The store could not be reached, or did not answer in time, or said "not now"."""
    # EndpointConnectionError, ConnectTimeoutError (ConnectionError); ReadTimeoutError,
    # ConnectionClosedError (HTTPClientError).
    if isinstance(error, BotoConnectionError | HTTPClientError):
        return True
    if isinstance(error, ClientError):
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return bool(status == 503)  # SlowDown, ServiceUnavailable after the retries
    return False


@dataclass
class _CountedCall:
    started: bool = False
    released: bool = False


class S3BlobStore:
    def __init__(
        self,
        config: S3Config,
        *,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        write_deadline: float = 35.0,
        max_write_calls: int = MAX_WRITE_CALLS_IN_FLIGHT,
    ) -> None:
        self.config = config
        self.write_deadline = write_deadline
        self._max_write_calls = max_write_calls
        self._write_calls = 0
        self._write_calls_lock = threading.Lock()
        self._write_checked_at = -_WRITE_CHECK_SECONDS  # never yet
        botocore_config = Config(
            signature_version="s3v4",
            s3={"addressing_style": config.addressing_style},
            # Bounded waits: botocore's defaults are 60 s each, times five attempts.
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS},
        )
        session = boto3.session.Session()
        self._client: Any = session.client(
            "s3",
            endpoint_url=config.endpoint_url,
            region_name=config.region,
            config=botocore_config,
        )
        # Presigning is local computation, but the host is part of the signature.
        self._presigner: Any = (
            session.client(
                "s3",
                endpoint_url=config.public_endpoint_url,
                region_name=config.region,
                config=botocore_config,
            )
            if config.public_endpoint_url
            else self._client
        )

    def _object_key(self, key: str) -> str:
        return self.config.prefix + check_blob_key(key)

    async def _run(self, func: Any, /, *, abandon_on_cancel: bool = False, **kwargs: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(
                partial(func, **kwargs), abandon_on_cancel=abandon_on_cancel
            )
        except Exception as error:
            if _is_outage(error):
                raise StorageUnavailable() from error
            raise

    async def ensure_bucket(self) -> None:
        """Create the bucket when missing (tests and development; production buckets are
        provisioned by the operator)."""
        try:
            await self._run(self._client.head_bucket, Bucket=self.config.bucket)
            return
        except ClientError as error:
            if not _is_not_found(error):
                raise
        params: dict[str, Any] = {"Bucket": self.config.bucket}
        if self.config.region and self.config.region != "us-east-1":
            params["CreateBucketConfiguration"] = {"LocationConstraint": self.config.region}
        await self._run(self._client.create_bucket, **params)

    async def check_ready(self) -> None:
        """The bucket exists, and a write to it succeeded within the last few minutes (a
        probe object under the prefix, written and deleted again)."""
        # /readyz bounds this with a deadline: its calls are abandoned to their thread
        # (itself bounded by the client's timeouts) rather than awaited past it.
        try:
            await self._probe(self._client.head_bucket, Bucket=self.config.bucket)
        except ClientError as error:
            if _is_not_found(error):
                raise StoreNotReady(f"bucket {self.config.bucket} does not exist") from None
            raise
        now = time.monotonic()
        if now - self._write_checked_at < _WRITE_CHECK_SECONDS:
            return
        probe = self.config.prefix + _READY_PROBE_KEY
        try:
            await self._probe(
                self._client.put_object, Bucket=self.config.bucket, Key=probe, Body=b""
            )
            await self._probe(self._client.delete_object, Bucket=self.config.bucket, Key=probe)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "error")
            raise StoreNotReady(f"bucket {self.config.bucket} cannot be written ({code})") from None
        self._write_checked_at = now

    async def _probe(self, func: Any, /, **kwargs: Any) -> Any:
        return await self._run(func, abandon_on_cancel=True, **kwargs)

    async def _head(self, key: str, *, call: Any = None) -> dict[str, Any] | None:
        try:
            head: dict[str, Any] = await (call or self._run)(
                self._client.head_object, Bucket=self.config.bucket, Key=self._object_key(key)
            )
        except ClientError as error:
            if _is_not_found(error):
                return None
            raise
        return head

    async def put_file(self, key: str, path: Path, *, content_type: str, sha256: str) -> None:
        """Store the file under its content key, all within `write_deadline` seconds.

        Each call's reads are bounded by the read timeout, but a store that answers slowly,
        or hangs between retries, could hold the upload (and the item's lock) for minutes.
        Past the deadline: StorageUnavailable (503). The call's thread is abandoned to its
        own timeouts; an object it still completes is unreferenced, and gc removes it.
        """
        if key != blob_key(sha256):
            raise ValueError("key must be blob_key(sha256)")
        try:
            with anyio.fail_after(self.write_deadline):
                await self._put_file(key, path, content_type=content_type, sha256=sha256)
        except TimeoutError:
            raise StorageUnavailable(
                f"The file store did not take the package within {self.write_deadline:g} s; "
                "retry later"
            ) from None

    async def _write_call(self, func: Any, /, **kwargs: Any) -> Any:
        """One S3 call of a package write, counted until its thread ends (even abandoned)."""
        with self._write_calls_lock:
            if self._write_calls >= self._max_write_calls:
                raise StorageUnavailable(
                    "The file store is still busy with earlier writes; retry later"
                )
            self._write_calls += 1
        call = _CountedCall()

        def counted(**call_kwargs: Any) -> Any:
            with self._write_calls_lock:
                if call.released:  # the caller gave up before this thread began
                    return None
                call.started = True
            try:
                return func(**call_kwargs)
            finally:
                with self._write_calls_lock:
                    self._release(call)

        try:
            return await self._run(counted, abandon_on_cancel=True, **kwargs)
        except BaseException:
            with self._write_calls_lock:
                if not call.started:
                    self._release(call)
            raise

    def _release(self, call: _CountedCall) -> None:
        if not call.released:
            call.released = True
            self._write_calls -= 1

    @property
    def write_calls_in_flight(self) -> int:
        return self._write_calls

    async def _put_file(self, key: str, path: Path, *, content_type: str, sha256: str) -> None:
        object_key = self._object_key(key)
        head = await self._head(key, call=self._write_call)
        if head is not None:
            # Same key, same bytes: copy the object onto itself only to renew LastModified,
            # so gc does not remove it before the caller's row commits.
            await self._write_call(
                self._client.copy_object,
                Bucket=self.config.bucket,
                Key=object_key,
                CopySource={"Bucket": self.config.bucket, "Key": object_key},
                MetadataDirective="REPLACE",
                ContentType=head.get("ContentType") or content_type,
                Metadata=head.get("Metadata") or {"sha256": sha256},
            )
            return
        # S3 makes an object visible only once the whole upload (multipart too) completes.
        await self._write_call(
            self._client.upload_file,
            Filename=str(path),
            Bucket=self.config.bucket,
            Key=object_key,
            ExtraArgs={"ContentType": content_type, "Metadata": {"sha256": sha256}},
        )

    async def exists(self, key: str) -> bool:
        return await self._head(key) is not None

    async def stat(self, key: str) -> BlobInfo | None:
        head = await self._head(key)
        if head is None:
            return None
        return BlobInfo(key, int(head["ContentLength"]), _utc(head["LastModified"]))

    async def delete(self, key: str) -> None:
        # DeleteObject succeeds for a missing key.
        await self._run(
            self._client.delete_object, Bucket=self.config.bucket, Key=self._object_key(key)
        )

    async def iter_blobs(self) -> AsyncIterator[BlobInfo]:
        params: dict[str, Any] = {"Bucket": self.config.bucket, "Prefix": self.config.prefix}
        while True:
            page = await self._run(self._client.list_objects_v2, **params)
            for item in page.get("Contents", []):
                key = str(item["Key"])[len(self.config.prefix) :]
                if is_blob_key(key):
                    yield BlobInfo(key, int(item["Size"]), _utc(item["LastModified"]))
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            params["ContinuationToken"] = token

    async def iter_keys(self) -> AsyncIterator[str]:
        async for info in self.iter_blobs():
            yield info.key

    async def iter_bytes(
        self, key: str, *, start: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        if start < 0 or (length is not None and length < 0):
            raise ValueError("start and length must not be negative")
        if length == 0:
            return
        params: dict[str, Any] = {"Bucket": self.config.bucket, "Key": self._object_key(key)}
        if start or length is not None:
            end = "" if length is None else str(start + length - 1)
            params["Range"] = f"bytes={start}-{end}"
        try:
            response = await self._run(self._client.get_object, **params)
        except ClientError as error:
            if _is_not_found(error):
                raise BlobNotFound(key) from None
            raise
        body = response["Body"]
        try:
            while chunk := await self._run(body.read, amt=CHUNK_SIZE):
                yield chunk
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(body.close)

    async def presigned_url(
        self, key: str, *, filename: str, expires_in: int
    ) -> tuple[str, datetime]:
        check_filename(filename)
        if not 0 < expires_in <= MAX_PRESIGN_SECONDS:
            raise ValueError(f"expires_in must be 1-{MAX_PRESIGN_SECONDS} seconds")
        signed_at = datetime.now(UTC).replace(microsecond=0)
        # In a thread: the first call may resolve credentials over the network (IMDS).
        url: str = await self._run(
            self._presigner.generate_presigned_url,
            ClientMethod="get_object",
            Params={
                "Bucket": self.config.bucket,
                "Key": self._object_key(key),
                "ResponseContentDisposition": content_disposition(filename),
                "ResponseContentType": PACKAGE_CONTENT_TYPE,
            },
            ExpiresIn=expires_in,
        )
        return url, _signed_at(url, signed_at) + timedelta(seconds=expires_in)

    async def remove_partial_uploads(self, *, older_than_seconds: int) -> int:
        """Abort multipart uploads that an interrupted `put_file` left behind."""
        cutoff = datetime.now(UTC) - timedelta(seconds=older_than_seconds)
        removed = 0
        params: dict[str, Any] = {"Bucket": self.config.bucket, "Prefix": self.config.prefix}
        while True:
            page = await self._run(self._client.list_multipart_uploads, **params)
            for upload in page.get("Uploads", []):
                if _utc(upload["Initiated"]) < cutoff:
                    await self._run(
                        self._client.abort_multipart_upload,
                        Bucket=self.config.bucket,
                        Key=upload["Key"],
                        UploadId=upload["UploadId"],
                    )
                    removed += 1
            if not page.get("IsTruncated"):
                return removed
            params["KeyMarker"] = page.get("NextKeyMarker", "")
            params["UploadIdMarker"] = page.get("NextUploadIdMarker", "")

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self._client.close)
        if self._presigner is not self._client:
            await anyio.to_thread.run_sync(self._presigner.close)


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _signed_at(url: str, fallback: datetime) -> datetime:
    """The X-Amz-Date the URL was signed with: its expiry counts from there."""
    amz_date = dict(parse_qsl(urlsplit(url).query)).get("X-Amz-Date")
    if amz_date is None:
        return fallback
    try:
        return datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return fallback
