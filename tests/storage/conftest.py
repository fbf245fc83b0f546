"""Fixtures for the blob stores: a local store with a controllable clock, a real S3 endpoint."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from moto.server import ThreadedMotoServer

from marketplace.errors import AppError
from marketplace.kit.errors_http import error_response
from marketplace.storage.base import BlobStore, blob_key
from marketplace.storage.local import LocalBlobStore
from marketplace.storage.routes import router
from marketplace.storage.s3 import S3BlobStore, parse_s3_url
from tests.storage.helpers import PUBLIC_URL, TEST_SECRET, Blob, BlobMaker, BlobPutter, FakeClock


@pytest.fixture
def make_blob(tmp_path: Path) -> BlobMaker:
    """A hashed temporary file, as the upload pipeline hands it to the store."""
    uploads = tmp_path / "uploads"
    uploads.mkdir()

    def make(data: bytes) -> Blob:
        sha256 = hashlib.sha256(data).hexdigest()
        path = uploads / f"{uuid.uuid4().hex}.part"
        path.write_bytes(data)
        return Blob(blob_key(sha256), sha256, path, data)

    return make


@pytest.fixture
def put_blob(make_blob: BlobMaker) -> BlobPutter:
    async def put(store: BlobStore, data: bytes) -> Blob:
        blob = make_blob(data)
        await store.put_file(
            blob.key, blob.path, content_type="application/gzip", sha256=blob.sha256
        )
        return blob

    return put


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def local_store(tmp_path: Path, clock: FakeClock) -> LocalBlobStore:
    return LocalBlobStore(
        tmp_path / "blobs", secret=TEST_SECRET, public_url=PUBLIC_URL, clock=clock
    )


@pytest.fixture
def app(local_store: LocalBlobStore) -> FastAPI:
    """The blob router with the same envelope handler the real app installs."""
    app = FastAPI()
    app.include_router(router)
    app.state.blob_store = local_store

    async def handle_app_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, AppError)
        return error_response(exc.status_code, exc.code, exc.message, exc.details, exc.headers)

    app.add_exception_handler(AppError, handle_app_error)
    return app


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=PUBLIC_URL) as client:
        yield client


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """moto's S3 server on a free port of 127.0.0.1: real HTTP, real SigV4 clients."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
    # stop() ends the serving loop but leaves the listening socket open.
    if server._server is not None:
        server._server.server_close()


@pytest.fixture
async def s3_store(moto_endpoint: str, aws_env: None) -> AsyncIterator[S3BlobStore]:
    bucket = f"blobs-{uuid.uuid4().hex[:12]}"
    store = S3BlobStore(
        parse_s3_url(f"s3://{bucket}/packages?endpoint_url={moto_endpoint}&region=us-east-1")
    )
    await store.ensure_bucket()
    yield store
    await store.aclose()


@pytest.fixture(params=["local", "s3"])
def any_store(request: pytest.FixtureRequest) -> BlobStore:
    """Each store in turn, for behaviour both must share."""
    store: BlobStore = request.getfixturevalue(f"{request.param}_store")
    return store
