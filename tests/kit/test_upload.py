from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import json
import os
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.requests import ClientDisconnect

from marketplace.errors import (
    AppError,
    IconTooLarge,
    PackageInvalid,
    PackageTooLarge,
    Refused,
)
from marketplace.kit import upload as upload_module
from marketplace.kit.errors_http import error_response
from marketplace.kit.upload import Inspector, Readable, ReceivedUpload, _Handoff, receive_upload
from marketplace.packages.archive import ArchiveInfo, ArchiveLimits, inspect_archive
from tests.packages.tarballs import package

KIB = 1024
MIB = 1024 * KIB
LIMIT = 64 * KIB
BOUNDARY = "x-test-boundary"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
MANIFEST = {"id": "demo", "version": "1.0.0", "main": "index.js"}


def part(name: str, value: bytes, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{name}"'
    if filename is not None:
        disposition += f'; filename="{filename}"'
    return (
        (
            f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n"
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + value
        + b"\r\n"
    )


def form(*parts: bytes) -> bytes:
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def inspector(limit: int = LIMIT) -> Inspector:
    return functools.partial(inspect_archive, limits=ArchiveLimits.for_package(limit))


def make_app(upload_dir: Path, **options: Any) -> FastAPI:
    settings: dict[str, Any] = {
        "max_file_bytes": LIMIT,
        "too_large": PackageTooLarge,
        "temp_dir": upload_dir,
        "text_fields": {"version", "changelog"},
        **options,
    }
    app = FastAPI()

    @app.exception_handler(AppError)
    async def render(request: Request, exc: AppError) -> JSONResponse:
        return error_response(exc.status_code, exc.code, exc.message, exc.details)

    @app.post("/upload")
    async def upload(request: Request) -> dict[str, Any]:
        async with await receive_upload(request, **settings) as received:
            return describe(received)

    return app


def describe(received: ReceivedUpload) -> dict[str, Any]:
    if not received.has_file:
        raise PackageInvalid("Plugin package file is required")
    if received.inspection_error is not None:
        raise PackageInvalid(received.inspection_error)
    assert received.file_path is not None
    return {
        "fields": received.fields,
        "filename": received.filename,
        "sha256": received.sha256,
        "size": received.size,
        "onDisk": hashlib.sha256(received.file_path.read_bytes()).hexdigest(),
        "files": received.inspection.files if received.inspection else None,
    }


@pytest.fixture
def upload_dir(tmp_path: Path) -> Path:
    path = tmp_path / "uploads"
    path.mkdir()
    return path


async def post(
    app: FastAPI, content: bytes | AsyncIterator[bytes], headers: dict[str, str] | None = None
) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.post(
            "/upload", content=content, headers={"Content-Type": MULTIPART, **(headers or {})}
        )


def error_of(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


def leftovers(directory: Path) -> list[Path]:
    return list(directory.iterdir())


class Trickle:
    """An async body sent in pieces, recording how many pieces were taken."""

    def __init__(self, head: bytes, piece: bytes, count: int, tail: bytes = b"") -> None:
        self.head, self.piece, self.count, self.tail = head, piece, count, tail
        self.started = False
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self.started = True
        yield self.head
        for _ in range(self.count):
            self.sent += 1
            yield self.piece
        yield self.tail


def file_head(filename: str = "p.tar.gz") -> bytes:
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"'
        "\r\n\r\n"
    ).encode()


# Success


async def test_receives_file_and_fields_with_hash_and_size(upload_dir: Path) -> None:
    data = package(MANIFEST, {"index.js": b"export {}"})
    body = form(part("version", b"1.0.0"), part("file", data, "p.tar.gz"))

    response = await post(make_app(upload_dir), body)

    assert response.status_code == 200
    got = response.json()
    assert got["sha256"] == hashlib.sha256(data).hexdigest()
    assert (got["size"], got["fields"], got["filename"]) == (
        len(data),
        {"version": "1.0.0"},
        "p.tar.gz",
    )


async def test_writes_exactly_the_uploaded_bytes_to_the_temp_file(upload_dir: Path) -> None:
    data = bytes(range(256)) * 200

    response = await post(make_app(upload_dir), form(part("file", data, "blob.bin")))

    assert response.json()["onDisk"] == hashlib.sha256(data).hexdigest()


async def test_deletes_temp_file_when_the_upload_context_exits(upload_dir: Path) -> None:
    response = await post(make_app(upload_dir), form(part("file", b"data", "a.bin")))

    assert response.status_code == 200
    assert leftovers(upload_dir) == []


async def test_runs_the_inspector_on_the_file(upload_dir: Path) -> None:
    data = package(MANIFEST, {"index.js": b"export {}" * 1000})

    response = await post(
        make_app(upload_dir, inspector=inspector()), form(part("file", data, "p.tgz"))
    )

    assert response.json()["files"] == {
        "manifest.json": len(json.dumps(MANIFEST)),
        "index.js": 9000,
    }


async def test_inspects_a_file_arriving_in_many_small_pieces(upload_dir: Path) -> None:
    data = package(MANIFEST, {"index.js": bytes(range(256)) * 100})
    pieces = [data[index : index + 100] for index in range(0, len(data), 100)]

    async def body() -> AsyncIterator[bytes]:
        yield file_head()
        for piece in pieces:
            yield piece
        yield b"\r\n" + f"--{BOUNDARY}--\r\n".encode()

    response = await post(make_app(upload_dir, inspector=inspector()), body())

    assert response.json()["sha256"] == hashlib.sha256(data).hexdigest()
    assert response.json()["files"]["index.js"] == 25600


async def test_accepts_text_fields_after_the_file(upload_dir: Path) -> None:
    body = form(part("file", b"abc", "a.bin"), part("changelog", "修复".encode()))

    response = await post(make_app(upload_dir), body)

    assert response.json()["fields"] == {"changelog": "修复"}


async def test_accepts_a_file_of_exactly_the_limit(upload_dir: Path) -> None:
    response = await post(make_app(upload_dir), form(part("file", b"x" * LIMIT, "a.bin")))

    assert response.json()["size"] == LIMIT


async def test_keeps_an_empty_file_that_has_a_name(upload_dir: Path) -> None:
    response = await post(make_app(upload_dir), form(part("file", b"", "empty.bin")))

    assert response.json()["sha256"] == hashlib.sha256(b"").hexdigest()


# Size limits


async def test_refuses_declared_length_over_the_limit_before_reading(upload_dir: Path) -> None:
    trickle = Trickle(file_head(), b"x" * KIB, 10)

    response = await post(make_app(upload_dir), trickle, {"Content-Length": str(10 * LIMIT)})

    assert response.status_code == 413
    assert error_of(response)["code"] == "PLUGIN_PACKAGE_TOO_LARGE"
    assert error_of(response)["details"] == {
        "limit": LIMIT,
        "size": 10 * LIMIT,
        "sizeMeasured": "content-length",
    }
    assert not trickle.started


async def test_refuses_streamed_body_growing_past_the_limit(upload_dir: Path) -> None:
    trickle = Trickle(file_head(), b"x" * (4 * KIB), 1000)

    response = await post(make_app(upload_dir), trickle)

    assert response.status_code == 413
    details = error_of(response)["details"]
    # The stream was cut: the size is what the file part had sent when it passed the limit.
    assert (details["limit"], details["sizeMeasured"]) == (LIMIT, "file-read-so-far")
    assert LIMIT < details["size"] <= LIMIT + 4 * KIB
    assert trickle.sent < 100  # stopped at the limit, long before the end
    assert leftovers(upload_dir) == []


async def test_refuses_with_the_callers_too_large_error(upload_dir: Path) -> None:
    app = make_app(upload_dir, max_file_bytes=KIB, too_large=IconTooLarge)

    response = await post(app, form(part("file", b"x" * (KIB + 1), "icon.png")))

    assert (response.status_code, error_of(response)["code"]) == (413, "PLUGIN_ICON_TOO_LARGE")
    assert error_of(response)["details"]["limit"] == KIB
    assert error_of(response)["message"].startswith("Icon is larger than")


async def test_refuses_non_numeric_content_length(upload_dir: Path) -> None:
    response = await post(make_app(upload_dir), Trickle(b"", b"", 0), {"Content-Length": "12abc"})

    assert response.status_code == 400


# Form problems


async def test_refuses_unknown_field_naming_it(upload_dir: Path) -> None:
    response = await post(make_app(upload_dir), form(part("price", b"9"), part("file", b"x", "a")))

    assert response.status_code == 400
    assert error_of(response)["details"]["fields"] == [
        {"field": "price", "message": "is not a known field"}
    ]


async def test_refuses_a_repeated_field(upload_dir: Path) -> None:
    body = form(part("version", b"1.0.0"), part("version", b"2.0.0"))

    response = await post(make_app(upload_dir), body)

    assert error_of(response)["details"]["fields"][0]["message"] == "is sent more than once"


async def test_reports_a_missing_file_part(upload_dir: Path) -> None:
    response = await post(make_app(upload_dir), form(part("version", b"1.0.0")))

    assert response.status_code == 400
    assert error_of(response) == {
        "code": "PLUGIN_PACKAGE_INVALID",
        "message": "Plugin package file is required",
        "details": {},
    }


async def test_treats_an_empty_unnamed_file_part_as_missing(upload_dir: Path) -> None:
    response = await post(make_app(upload_dir), form(part("file", b"", "")))

    assert error_of(response)["message"] == "Plugin package file is required"


async def test_refuses_a_body_that_is_not_multipart(upload_dir: Path) -> None:
    response = await post(
        make_app(upload_dir), b'{"version": "1.0.0"}', {"Content-Type": "application/json"}
    )

    assert (response.status_code, error_of(response)["code"]) == (400, "VALIDATION_FAILED")


async def test_refuses_multipart_without_a_boundary(upload_dir: Path) -> None:
    response = await post(make_app(upload_dir), b"", {"Content-Type": "multipart/form-data"})

    assert (response.status_code, error_of(response)["code"]) == (400, "VALIDATION_FAILED")


async def test_refuses_an_overlong_boundary(upload_dir: Path) -> None:
    content_type = "multipart/form-data; boundary=" + "b" * 300

    response = await post(make_app(upload_dir), b"", {"Content-Type": content_type})

    assert error_of(response)["message"] == "The multipart boundary is invalid"


async def test_refuses_a_text_field_over_its_cap(upload_dir: Path) -> None:
    app = make_app(upload_dir, max_text_bytes=100)

    response = await post(app, form(part("changelog", b"x" * 101)))

    assert error_of(response)["details"]["fields"][0] == {
        "field": "changelog",
        "message": "is longer than 100 bytes",
    }


async def test_refuses_a_text_field_that_is_not_utf8(upload_dir: Path) -> None:
    response = await post(make_app(upload_dir), form(part("changelog", b"\xff\xfe")))

    assert error_of(response)["details"]["fields"][0]["message"] == "is not valid UTF-8"


async def test_refuses_a_part_without_a_name(upload_dir: Path) -> None:
    body = f"--{BOUNDARY}\r\nContent-Disposition: form-data\r\n\r\nx\r\n--{BOUNDARY}--\r\n"

    response = await post(make_app(upload_dir), body.encode())

    assert response.status_code == 400


async def test_refuses_a_malformed_body(upload_dir: Path) -> None:
    body = f"--{BOUNDARY}\r\nno colon in this header line\r\n\r\n".encode()

    response = await post(make_app(upload_dir), body)

    assert (response.status_code, error_of(response)["message"]) == (
        400,
        "The multipart body is malformed",
    )


async def test_refuses_an_incomplete_body_and_deletes_the_temp_file(upload_dir: Path) -> None:
    body = file_head() + b"x" * 1000  # the closing boundary never comes

    response = await post(make_app(upload_dir), body)

    assert error_of(response)["message"] == "The multipart body is incomplete"
    assert leftovers(upload_dir) == []


async def test_deletes_the_temp_file_when_a_field_after_the_file_is_refused(
    upload_dir: Path,
) -> None:
    body = form(part("file", b"x" * 5000, "a.bin"), part("unknown", b"1"))

    response = await post(make_app(upload_dir), body)

    assert response.status_code == 400
    assert leftovers(upload_dir) == []


# The inspector refusing the file


async def test_reports_the_inspectors_refusal(upload_dir: Path) -> None:
    app = make_app(upload_dir, inspector=inspector())

    response = await post(app, form(part("file", b"this is not gzip", "p.tgz")))

    assert (response.status_code, error_of(response)["message"]) == (
        400,
        "Package is not a gzip file",
    )
    assert leftovers(upload_dir) == []


async def test_stops_reading_once_the_inspector_refuses(upload_dir: Path) -> None:
    trickle = Trickle(file_head(), b"not gzip" * 8 * KIB, 500)
    app = make_app(upload_dir, inspector=inspector(), max_file_bytes=1024 * 1024 * KIB)

    response = await post(app, trickle)

    assert error_of(response)["message"] == "Package is not a gzip file"
    assert trickle.sent < 100
    assert leftovers(upload_dir) == []


def refuse_unless_json(source: Readable) -> bytes:
    head = source.read(1)
    if head != b"{":
        raise Refused("The file is not a JSON object")
    return head


async def test_reports_the_refusal_of_any_inspector(upload_dir: Path) -> None:
    app = make_app(upload_dir, inspector=refuse_unless_json)

    response = await post(app, form(part("file", b"[1, 2]", "data.json")))

    assert (response.status_code, error_of(response)["message"]) == (
        400,
        "The file is not a JSON object",
    )
    assert leftovers(upload_dir) == []


async def test_an_inspector_failing_otherwise_is_not_a_refusal(upload_dir: Path) -> None:
    def broken(source: Readable) -> None:
        raise RuntimeError("inspector bug")

    app = make_app(upload_dir, inspector=broken)

    with pytest.raises(RuntimeError, match="inspector bug"):
        await post(app, form(part("file", b"{}", "data.json")))
    assert leftovers(upload_dir) == []


async def test_cleanup_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "upload.part"
    path.write_bytes(b"x")
    received = ReceivedUpload(fields={}, file_path=path)

    received.cleanup()
    received.cleanup()

    assert not path.exists()


# Failures outside the form itself


def direct_request(messages: list[dict[str, Any]], hanging: asyncio.Event | None = None) -> Request:
    """A Starlette request fed from ASGI messages; with hanging, it then waits forever."""

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        if hanging is not None:
            hanging.set()
            await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/upload",
        "query_string": b"",
        "headers": [(b"content-type", MULTIPART.encode())],
    }
    return Request(scope, receive)


def body_message(data: bytes, *, more: bool = True) -> dict[str, Any]:
    return {"type": "http.request", "body": data, "more_body": more}


async def test_deletes_the_temp_file_when_the_client_disconnects(upload_dir: Path) -> None:
    request = direct_request([body_message(file_head()), body_message(b"x" * 5000)])

    with pytest.raises(ClientDisconnect):
        await receive_upload(
            request, max_file_bytes=LIMIT, too_large=PackageTooLarge, temp_dir=upload_dir
        )
    assert leftovers(upload_dir) == []


async def test_deletes_the_temp_file_when_the_request_is_cancelled(upload_dir: Path) -> None:
    hanging = asyncio.Event()
    request = direct_request([body_message(file_head()), body_message(b"x" * 5000)], hanging)
    task = asyncio.create_task(
        receive_upload(
            request, max_file_bytes=LIMIT, too_large=PackageTooLarge, temp_dir=upload_dir
        )
    )
    await hanging.wait()
    for _ in range(500):  # the worker thread creates the file soon after the first bytes
        if leftovers(upload_dir):
            break
        await asyncio.sleep(0.01)
    assert leftovers(upload_dir)

    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert leftovers(upload_dir) == []


async def test_raises_when_the_temp_directory_is_missing(tmp_path: Path) -> None:
    request = direct_request([body_message(form(part("file", b"x" * 5000, "a.bin")), more=False)])

    with pytest.raises(FileNotFoundError):
        await receive_upload(
            request, max_file_bytes=LIMIT, too_large=PackageTooLarge, temp_dir=tmp_path / "none"
        )


# The queue between the event loop and the worker thread


async def test_handoff_gives_the_worker_the_pieces_in_order_then_the_end() -> None:
    handoff = _Handoff(limit=1 * KIB)
    assert await handoff.put([b"a", b"bc"], 3)
    assert await handoff.put([b"d"], 1)
    handoff.end()

    taken = await asyncio.to_thread(lambda: [handoff.take() for _ in range(5)])

    assert taken == [b"a", b"bc", b"d", None, None]


async def test_handoff_worker_takes_pieces_while_the_event_loop_is_busy() -> None:
    handoff = _Handoff(limit=1 * KIB)
    await handoff.put([b"x" * 100] * 3, 300)
    handoff.end()
    taken: list[bytes | None] = []
    worker = threading.Thread(target=lambda: taken.extend(iter(handoff.take, None)))

    worker.start()
    worker.join(timeout=5)  # blocks the event loop: the worker must not need it

    assert not worker.is_alive()
    assert taken == [b"x" * 100] * 3


async def test_handoff_waits_while_full_until_the_worker_made_room() -> None:
    handoff = _Handoff(limit=4 * KIB)
    piece = b"p" * KIB
    assert await handoff.put([piece] * 4, 4 * KIB)
    waiting = asyncio.create_task(handoff.put([piece], KIB))
    await asyncio.sleep(0.05)
    assert not waiting.done()

    await asyncio.to_thread(handoff.take)  # 3 KiB left: not yet half empty
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await asyncio.to_thread(handoff.take)  # 2 KiB left: room

    assert await asyncio.wait_for(waiting, 5) is True


async def test_handoff_refuses_pieces_and_wakes_a_waiting_sender_once_the_worker_quit() -> None:
    handoff = _Handoff(limit=KIB)
    assert await handoff.put([b"p" * KIB], KIB)
    waiting = asyncio.create_task(handoff.put([b"q"], 1))
    await asyncio.sleep(0.05)

    await asyncio.to_thread(handoff.quit)

    assert await asyncio.wait_for(waiting, 5) is False
    assert await handoff.put([b"r"], 1) is False


async def test_handoff_end_with_discard_drops_what_is_queued() -> None:
    handoff = _Handoff(limit=KIB)
    await handoff.put([b"a", b"b"], 2)

    handoff.end(discard=True)

    assert await asyncio.to_thread(handoff.take) is None


async def test_handoff_survives_a_sender_cancelled_while_waiting() -> None:
    handoff = _Handoff(limit=KIB)
    await handoff.put([b"p" * KIB], KIB)
    waiting = asyncio.create_task(handoff.put([b"q"], 1))
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting

    assert await asyncio.to_thread(handoff.take) == b"p" * KIB  # wakes a cancelled waiter
    assert await handoff.put([b"r"], 1)


async def test_a_large_upload_through_a_slow_inspector_keeps_the_queue_bounded(
    upload_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    peak = 0
    real_put = _Handoff.put

    async def watched_put(self: _Handoff, pieces: list[bytes], size: int) -> bool:
        nonlocal peak
        accepted = await real_put(self, pieces, size)
        peak = max(peak, self._queued)
        return accepted

    def slow_inspector(source: Readable) -> ArchiveInfo:
        return inspector(4 * 1024 * KIB)(_Slow(source))

    monkeypatch.setattr(_Handoff, "put", watched_put)
    monkeypatch.setattr(upload_module, "_HANDOFF_QUEUE_BYTES", 64 * KIB)
    data = package(MANIFEST, {"index.js": os.urandom(2 * 1024 * KIB)})
    pieces = [data[index : index + 16 * KIB] for index in range(0, len(data), 16 * KIB)]

    async def body() -> AsyncIterator[bytes]:
        yield file_head()
        for piece in pieces:
            yield piece
        yield b"\r\n" + f"--{BOUNDARY}--\r\n".encode()

    app = make_app(upload_dir, inspector=slow_inspector, max_file_bytes=4 * 1024 * KIB)
    response = await post(app, body())

    assert response.json()["sha256"] == hashlib.sha256(data).hexdigest()
    # The limit, plus the one batch of at least _HANDOFF_BYTES that may overshoot it.
    assert 0 < peak < 64 * KIB + 2 * upload_module._HANDOFF_BYTES


class _Slow:
    """A source whose reads take a little time, as a busy worker thread's would."""

    def __init__(self, source: Readable) -> None:
        self._source = source

    def read(self, size: int = -1, /) -> bytes:
        time.sleep(0.001)
        return self._source.read(size)


async def test_the_worker_starts_writing_the_file_to_disk_as_it_grows(
    upload_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    advised: list[tuple[int, int, int]] = []

    def record(fd: int, offset: int, length: int, advice: int) -> None:
        advised.append((offset, length, advice))

    monkeypatch.setattr(os, "posix_fadvise", record, raising=False)
    monkeypatch.setattr(upload_module, "_FADV_DONTNEED", 4)
    monkeypatch.setattr(upload_module, "_WRITE_BEHIND_BYTES", 64 * KIB)
    data = os.urandom(300 * KIB)

    async def body() -> AsyncIterator[bytes]:
        yield file_head()
        for index in range(0, len(data), 16 * KIB):
            yield data[index : index + 16 * KIB]
        yield b"\r\n" + f"--{BOUNDARY}--\r\n".encode()

    response = await post(make_app(upload_dir, max_file_bytes=MIB), body())

    assert response.json()["onDisk"] == hashlib.sha256(data).hexdigest()
    # Consecutive ranges from the start, each at least the write-behind step.
    assert len(advised) >= 3 and all(advice == 4 for _, _, advice in advised)
    assert [offset for offset, _, _ in advised] == list(
        itertools.accumulate([0] + [length for _, length, _ in advised[:-1]])
    )
    assert all(length >= 64 * KIB for _, length, _ in advised)
    assert sum(length for _, length, _ in advised) <= len(data)
