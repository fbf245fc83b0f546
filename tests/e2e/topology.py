"""Where an end-to-end server keeps its state: the embedded default (SQLite and local files,
one process), or, on the PostgreSQL run, the scaled-out topology of docs/deploy.md:
`serve --workers 4` on PostgreSQL, an S3-compatible endpoint (moto's server) and Redis, with
the secret and the signing keyring given as settings, as every host of a real deployment
gets them. The tests read blobs through `BlobView`, whichever store holds them.
"""

from __future__ import annotations

import os
import secrets
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import boto3
import pytest
import redis

from marketplace.trust.keyring import dump_keyring, new_key
from tests.dbsetup import create_postgres_database, drop_postgres_database, postgres_admin_url

SCALED_WORKERS = 4
REDIS_URL = os.environ.get("MARKETPLACE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


class BlobView(Protocol):
    """The stored blobs by key (`ab/cd/<sha256>`), whatever holds them."""

    def keys(self) -> set[str]: ...

    def read(self, key: str) -> bytes: ...

    def write(self, key: str, data: bytes) -> None: ...


@dataclass(frozen=True)
class LocalBlobs:
    root: Path

    def keys(self) -> set[str]:
        if not self.root.exists():
            return set()
        return {
            p.relative_to(self.root).as_posix()
            for p in self.root.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        }

    def read(self, key: str) -> bytes:
        return (self.root / key).read_bytes()

    def write(self, key: str, data: bytes) -> None:
        (self.root / key).write_bytes(data)


@dataclass(frozen=True)
class S3Blobs:
    endpoint: str
    bucket: str
    prefix: str
    client: Any = field(repr=False)

    def keys(self) -> set[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        )
        found = {obj["Key"] for page in pages for obj in page.get("Contents", [])}
        # The store's readiness probe lives under the prefix too; it is not a blob.
        return {key.removeprefix(self.prefix) for key in found if "/" in key[len(self.prefix) :]}

    def read(self, key: str) -> bytes:
        body = self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)["Body"]
        data: bytes = body.read()
        return data

    def write(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=data)


@dataclass(frozen=True)
class Topology:
    name: str
    serve_args: tuple[str, ...]
    env: dict[str, str]
    # None: the blobs are in the server's data folder (known once it exists).
    blobs: BlobView | None
    # Run before the first start (migrations for a database `serve` does not migrate).
    needs_upgrade: bool

    def blob_view(self, data_dir: Path) -> BlobView:
        return self.blobs or LocalBlobs(data_dir / "blobs")


EMBEDDED = Topology("embedded", (), {}, None, needs_upgrade=False)


def scaled_out_wanted() -> bool:
    """The PostgreSQL run exercises the scaled-out topology; the SQLite run the embedded one."""
    return postgres_admin_url() is not None


def _redis_reachable() -> str | None:
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping()
    except redis.RedisError as exc:
        return str(exc)
    return None


@contextmanager
def scaled_out() -> Iterator[Topology]:
    """PostgreSQL (a database of its own), moto's S3 server with a fresh bucket, Redis under
    a key prefix of its own, four workers; everything started here is stopped here."""
    from moto.server import ThreadedMotoServer

    admin_url = postgres_admin_url()
    assert admin_url is not None
    problem = _redis_reachable()
    if problem is not None:
        message = f"Redis at {REDIS_URL} unreachable: {problem}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    with ExitStack() as stack:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        database = create_postgres_database(admin_url, f"{worker}_e2e")
        stack.callback(drop_postgres_database, admin_url, database)
        moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        moto.start()
        stack.callback(_stop_moto, moto)
        host, port = moto.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        bucket, prefix = f"e2e-{uuid.uuid4().hex[:12]}", "packages/"
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=_AWS["AWS_DEFAULT_REGION"],
            aws_access_key_id=_AWS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=_AWS["AWS_SECRET_ACCESS_KEY"],
        )
        # docs/deploy.md: the bucket must exist before the service starts.
        client.create_bucket(Bucket=bucket)
        key_prefix = f"e2e-{uuid.uuid4().hex[:8]}"
        stack.callback(_forget_redis_keys, key_prefix)
        limits = "100000/minute"
        env = {
            **_AWS,
            "MARKETPLACE_DATABASE_URL": database,
            "MARKETPLACE_STORAGE_URL": (
                f"s3://{bucket}/{prefix.rstrip('/')}?endpoint_url={endpoint}&region=us-east-1"
            ),
            "MARKETPLACE_REDIS_URL": REDIS_URL,
            "MARKETPLACE_REDIS_KEY_PREFIX": key_prefix,
            # Inspections queue in Redis, shared by every host of the deployment.
            "MARKETPLACE_INSPECTION_QUEUE_URL": REDIS_URL,
            # Rate limits on, so every request goes through Redis' shared counters.
            "MARKETPLACE_RATE_LIMIT_ENABLED": "true",
            "MARKETPLACE_RATE_LIMIT_LOGIN": limits,
            "MARKETPLACE_RATE_LIMIT_WRITE": limits,
            "MARKETPLACE_RATE_LIMIT_READ": limits,
            "MARKETPLACE_SECRET_KEY": secrets.token_urlsafe(48),
            "MARKETPLACE_SIGNING_KEYS": dump_keyring([new_key(datetime.now(UTC))]),
        }
        yield Topology(
            "scaled-out",
            ("--workers", str(SCALED_WORKERS)),
            env,
            S3Blobs(endpoint, bucket, prefix, client),
            needs_upgrade=True,
        )


def _stop_moto(server: Any) -> None:
    server.stop()
    # stop() ends the serving loop but leaves the listening socket open.
    if server._server is not None:
        server._server.server_close()


def _forget_redis_keys(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=2)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
