"""The core's upload transaction: lock → checks → blob → rows → commit (DESIGN invariant 3),
and a streamed body that holds no write lock while it arrives."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.errors import InvalidState, PluginNotFound
from marketplace.models import Plugin, PluginVersion
from marketplace.packages.archive import ArchiveInfo
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing.blobs import forget_blobs, lock_blob_key
from marketplace.publishing.uploads import CheckThenWrite, Package, RowWriter, store_package
from marketplace.storage.base import BlobStore, blob_key
from tests.factories import Factory
from tests.helpers import ok

Sessions = async_sessionmaker[AsyncSession]


def _package(tmp_path: Path, data: bytes) -> Package:
    path = tmp_path / "upload.part"
    path.write_bytes(data)
    archive = ArchiveInfo(
        files={"data.bin": len(data)},
        symlinks={},
        manifest=None,
        manifest_bytes=None,
        unpacked_bytes=len(data),
        member_count=1,
        compressed_bytes=len(data),
        root_prefix=None,
    )
    return Package(path, hashlib.sha256(data).hexdigest(), len(data), archive, {})


async def _version_count(sessions: Sessions) -> int:
    async with sessions() as session:
        return await session.scalar(select(func.count()).select_from(PluginVersion)) or 0


def _writer_of(
    version: str, sha256: str, *, flush: bool = True
) -> CheckThenWrite[Plugin, PluginVersion]:
    """Checks nothing, then writes a version row (`flush=False`: the commit writes it)."""

    async def check(session: AsyncSession, plugin: Plugin) -> RowWriter[PluginVersion]:
        async def write(key: str) -> PluginVersion:
            row = PluginVersion(
                plugin_id=plugin.id,
                version=version,
                manifest={},
                distribution="tarball",
                sha256=sha256,
                size=1,
                blob_key=key,
            )
            session.add(row)
            if flush:
                await session.flush()
            return row

        return write

    return check


def _failing_writer(store: BlobStore) -> CheckThenWrite[Plugin, PluginVersion]:
    """Checks nothing; its writer fails after proving the blob was stored first."""

    async def check(session: AsyncSession, plugin: Plugin) -> RowWriter[PluginVersion]:
        async def write(key: str) -> PluginVersion:
            assert await store.exists(key)  # blob before row
            raise RuntimeError("the row could not be written")

        return write

    return check


async def test_stored_package_and_its_row_commit_together(
    app: FastAPI, factory: Factory, sessionmaker: Sessions, tmp_path: Path
) -> None:
    plugin = await factory.plugin()
    package = _package(tmp_path, b"package bytes")
    store = app.state.blob_store
    row = await store_package(
        sessionmaker, store, PLUGINS, plugin.id, package, _writer_of("1.0.0", package.sha256)
    )
    assert row.blob_key == blob_key(package.sha256)
    assert await store.exists(row.blob_key)
    assert await _version_count(sessionmaker) == 1


async def test_a_failing_check_stores_nothing(
    app: FastAPI, factory: Factory, sessionmaker: Sessions, tmp_path: Path
) -> None:
    plugin = await factory.plugin()
    package = _package(tmp_path, b"refused bytes")

    async def refuse(session: AsyncSession, plugin: Plugin) -> RowWriter[PluginVersion]:
        raise InvalidState("refused")

    with pytest.raises(InvalidState):
        await store_package(sessionmaker, app.state.blob_store, PLUGINS, plugin.id, package, refuse)
    assert not await app.state.blob_store.exists(blob_key(package.sha256))
    assert await _version_count(sessionmaker) == 0


async def test_a_failing_write_deletes_the_stored_blob_and_leaves_no_row(
    app: FastAPI, factory: Factory, sessionmaker: Sessions, tmp_path: Path
) -> None:
    plugin = await factory.plugin()
    package = _package(tmp_path, b"bytes whose row fails")
    store = app.state.blob_store
    with pytest.raises(RuntimeError):
        await store_package(
            sessionmaker, store, PLUGINS, plugin.id, package, _failing_writer(store)
        )
    assert not await app.state.blob_store.exists(blob_key(package.sha256))
    assert await _version_count(sessionmaker) == 0


async def test_a_failing_commit_deletes_the_stored_blob(
    app: FastAPI, factory: Factory, sessionmaker: Sessions, tmp_path: Path
) -> None:
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    package = _package(tmp_path, b"bytes of a duplicate version")

    # The row only fails when the commit writes it: (plugin, version) is unique.
    without_flush = _writer_of("1.0.0", package.sha256, flush=False)
    with pytest.raises(IntegrityError):
        await store_package(
            sessionmaker, app.state.blob_store, PLUGINS, plugin.id, package, without_flush
        )
    assert not await app.state.blob_store.exists(blob_key(package.sha256))
    assert await _version_count(sessionmaker) == 1


async def test_a_failure_keeps_a_blob_another_row_uses(
    app: FastAPI, factory: Factory, sessionmaker: Sessions, tmp_path: Path
) -> None:
    plugin = await factory.plugin()
    package = _package(tmp_path, b"shared bytes")
    store = app.state.blob_store
    await store_package(
        sessionmaker, store, PLUGINS, plugin.id, package, _writer_of("1.0.0", package.sha256)
    )
    again = _package(tmp_path, b"shared bytes")
    with pytest.raises(RuntimeError):
        await store_package(sessionmaker, store, PLUGINS, plugin.id, again, _failing_writer(store))
    assert await store.exists(blob_key(package.sha256))


async def test_an_item_deleted_meanwhile_is_refused_before_anything_is_stored(
    app: FastAPI, sessionmaker: Sessions, tmp_path: Path
) -> None:
    package = _package(tmp_path, b"bytes for nobody")
    with pytest.raises(PluginNotFound):
        await store_package(
            sessionmaker,
            app.state.blob_store,
            PLUGINS,
            "0e8c2b7e-3c4a-4b0e-9a3e-1f2d3c4b5a69",
            package,
            _writer_of("1.0.0", package.sha256),
        )
    assert not await app.state.blob_store.exists(blob_key(package.sha256))


async def test_a_streaming_upload_holds_no_write_lock_while_its_body_arrives(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """A slow upload must not block writes to its own plugin (SQLite: any writer; PostgreSQL:
    the plugin's row lock) until its body has arrived."""
    dev = await factory.developer()
    plugin = await factory.plugin(dev, review_status="pending")
    boundary = "slow-boundary"
    half_sent, finish = asyncio.Event(), asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="version"\r\n\r\n1.0.0\r\n'
        ).encode()
        half_sent.set()
        await finish.wait()
        yield f"--{boundary}--\r\n".encode()

    upload = asyncio.create_task(
        client.post(
            f"/api/v1/developer/plugins/{plugin.id}/upload-version",
            content=body(),
            headers={**dev.headers, "content-type": f"multipart/form-data; boundary={boundary}"},
        )
    )
    await asyncio.wait_for(half_sent.wait(), 10)
    edit = await asyncio.wait_for(
        client.put(
            f"/api/v1/developer/plugins/{plugin.id}",
            json={"name": "Edited while uploading"},
            headers=dev.headers,
        ),
        10,
    )
    finish.set()
    assert ok(edit)["name"] == "Edited while uploading"
    response = await asyncio.wait_for(upload, 10)
    assert (response.status_code, response.json()["error"]["code"]) == (
        400,
        "PLUGIN_PACKAGE_INVALID",
    )


async def test_forgetting_a_blob_waits_for_an_upload_storing_the_same_bytes(
    app: FastAPI, factory: Factory, sessionmaker: Sessions, tmp_path: Path
) -> None:
    """A failed upload's cleanup must not delete bytes a concurrent upload is committing."""
    plugin = await factory.plugin()
    package = _package(tmp_path, b"bytes two uploads share")
    store = app.state.blob_store
    key = blob_key(package.sha256)
    async with sessionmaker.begin() as session:
        # The other upload, inside its transaction: blob locked and stored, row not committed.
        await session.get(Plugin, plugin.id, with_for_update=True)
        await lock_blob_key(session, key)
        await store.put_file(
            key, package.path, content_type="application/gzip", sha256=package.sha256
        )
        forgetting = asyncio.create_task(forget_blobs(sessionmaker, store, [key]))
        await asyncio.sleep(0.3)
        assert not forgetting.done()  # it waits for the lock
        session.add(
            PluginVersion(
                plugin_id=plugin.id,
                version="1.0.0",
                manifest={},
                distribution="tarball",
                sha256=package.sha256,
                size=package.size,
                blob_key=key,
            )
        )
    await asyncio.wait_for(forgetting, 10)
    assert await store.exists(key)  # the committed row's bytes were kept


async def test_a_client_gone_mid_json_body_is_a_400_not_a_500(app: FastAPI) -> None:
    sent: list[dict[str, object]] = []
    messages = iter(
        [
            {"type": "http.request", "body": b'{"email": "a@', "more_body": True},
            {"type": "http.disconnect"},
        ]
    )

    async def receive() -> dict[str, object]:
        return next(messages)

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/v1/auth/login",
        "raw_path": b"/api/v1/auth/login",
        "query_string": b"",
        "root_path": "",
        "client": ("127.0.0.1", 1),
        "server": ("test", 80),
        "headers": [(b"host", b"test"), (b"content-type", b"application/json")],
    }
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")  # type: ignore[misc]
    assert start["status"] == 400
    assert b'"VALIDATION_FAILED"' in body
