"""Streaming multipart/form-data receiver: the body is parsed as it arrives, never held whole.

The file part goes to a temporary file while its SHA-256 is computed, and, when an
inspector is given, through the inspector at the same time: one worker thread per upload
takes the file bytes from a small bounded queue, writes and hashes them, and hands them
to the inspector's blocking read(). The event loop only receives and parses the body.
The queue is thread-safe, so the worker never waits for the event loop to be free to
take the next piece; the event loop waits only while the queue is full.

An inspector is any function of a blocking reader (packages.archive.inspect_archive, for
one); it refuses a file by raising errors.Refused, whose message the caller reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, Generic, Protocol, Self

import anyio
import anyio.to_thread
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request
from typing_extensions import TypeVar

from marketplace.errors import AppError, Refused, ValidationFailed
from marketplace.kit.tempfiles import new_temp_file

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

KIB = 1024
MIB = 1024 * KIB
TEXT_FIELD_MAX_BYTES = 64 * KIB
# Room for boundaries and part headers on top of the file and text fields.
_FORM_OVERHEAD = 16 * KIB
_PART_OVERHEAD = KIB
# Parsed file bytes are queued for the worker once at least this many have collected
# (body chunks are usually bigger, so each chunk goes as it is, without a copy) ...
_HANDOFF_BYTES = 64 * KIB
# ... and the event loop stops reading the body while this many wait in the queue.
_HANDOFF_QUEUE_BYTES = MIB
# The worker asks the kernel to start writing the file to disk every this many bytes.
_WRITE_BEHIND_BYTES = 8 * MIB
_FADV_DONTNEED: int | None = getattr(os, "POSIX_FADV_DONTNEED", None)
# Each upload holds a worker thread while its body arrives; a limiter of their own keeps
# slow uploads from starving anyio's default pool that FastAPI's sync code uses.
UPLOAD_WORKER_THREADS = 32

# What the inspector found; Any where a caller does not say (a bare ReceivedUpload).
InfoT = TypeVar("InfoT", default=Any)


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


# Reads the file as it arrives and returns what it found, or raises Refused.
Inspector = Callable[[Readable], InfoT]


@dataclass
class ReceivedUpload(Generic[InfoT]):
    """The parsed form. file_path is None when no file was sent (or it was refused)."""

    fields: dict[str, str]
    file_path: Path | None = None
    filename: str | None = None
    content_type: str | None = None
    sha256: str | None = None
    size: int = 0
    inspection: InfoT | None = None
    inspection_error: str | None = None

    @property
    def has_file(self) -> bool:
        return self.file_path is not None or self.inspection_error is not None

    def cleanup(self) -> None:
        """Delete the temporary file (idempotent)."""
        if self.file_path is not None:
            self.file_path.unlink(missing_ok=True)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.cleanup()


async def receive_upload(
    request: Request,
    *,
    max_file_bytes: int,
    too_large: type[AppError],
    temp_dir: Path,
    text_fields: Collection[str] = (),
    file_field: str = "file",
    inspector: Inspector[InfoT] | None = None,
    max_text_bytes: int = TEXT_FIELD_MAX_BYTES,
) -> ReceivedUpload[InfoT]:
    """Receive a multipart form with one file part and some text fields.

    Refuses with too_large (413) when Content-Length or the streamed body passes the limit;
    its details carry `limit` (max_file_bytes) and `size` (see too_large_error).
    and with ValidationFailed (400) for a non-multipart body, an unknown or repeated field,
    an over-long or non-UTF-8 text field, or a malformed body. When the inspector refuses
    the file, reading stops early and inspection_error carries its message. The temporary
    file is deleted on every error path; on success the caller owns it (cleanup()).
    """
    body_cap = (
        max_file_bytes + _FORM_OVERHEAD + len(text_fields) * (max_text_bytes + _PART_OVERHEAD)
    )
    _refuse_declared_length(request, body_cap, max_file_bytes, too_large)
    form = _Form(
        file_field=file_field,
        text_fields=frozenset(text_fields),
        max_text_bytes=max_text_bytes,
        max_file_bytes=max_file_bytes,
        too_large=too_large,
    )
    parser = _parser(request, form)
    sink: _FileSink[InfoT] | None = None
    try:
        received = 0
        async for chunk in request.stream():
            received += len(chunk)
            if received > body_cap:
                raise too_large_error(too_large, max_file_bytes, received, RECEIVED)
            _parse(parser, chunk)
            # Start the sink once the file has bytes (or ended), before anything awaits,
            # so that every error path below sees it and stops its worker.
            if sink is None and (form.file_data or form.file_needs_sink):
                sink = _FileSink(temp_dir, inspector)
            if sink is not None:
                pieces, form.file_data = form.file_data, []
                await sink.feed(pieces)
                if sink.stopped:
                    break
        if (sink is None or not sink.stopped) and not form.ended:
            raise ValidationFailed("The multipart body is incomplete")
        if sink is not None:
            await sink.finish()
    except BaseException:
        if sink is not None:
            await sink.abort()
        raise
    return _result(form, sink)


# What `details.size` of a 413 measured: the file itself when it was read past the limit,
# the bytes of the body received so far when the stream was cut, or the Content-Length
# the client declared (the whole multipart body, a little more than the file).
FILE_READ, RECEIVED, DECLARED = "file-read-so-far", "body-received-so-far", "content-length"


def too_large_error(too_large: type[AppError], limit: int, size: int, measured: str) -> AppError:
    """The 413 with `limit` and `size` in bytes, so a client can say both."""
    return too_large(
        f"{too_large.message}: {size} bytes ({measured}), the limit is {limit} bytes",
        details={"limit": limit, "size": size, "sizeMeasured": measured},
    )


def _refuse_declared_length(
    request: Request, body_cap: int, max_file_bytes: int, too_large: type[AppError]
) -> None:
    """Refuse before reading anything when the declared body cannot fit."""
    declared = request.headers.get("content-length")
    if declared is None:
        return
    if not (declared.isascii() and declared.isdigit()):
        raise ValidationFailed("Content-Length is not a number")
    if int(declared) > body_cap:
        raise too_large_error(too_large, max_file_bytes, int(declared), DECLARED)


def _parser(request: Request, form: _Form) -> MultipartParser:
    content_type, options = parse_options_header(request.headers.get("content-type"))
    boundary = options.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise ValidationFailed("Content-Type must be multipart/form-data with a boundary")
    try:
        return MultipartParser(boundary, callbacks=form.callbacks())
    except FormParserError:  # e.g. a boundary longer than RFC 2046 allows
        raise ValidationFailed("The multipart boundary is invalid") from None


def _parse(parser: MultipartParser, chunk: bytes) -> None:
    try:
        parser.write(chunk)
    except FormParserError:
        raise ValidationFailed("The multipart body is malformed") from None


def _result(form: _Form, sink: _FileSink[InfoT] | None) -> ReceivedUpload[InfoT]:
    upload: ReceivedUpload[InfoT] = ReceivedUpload(
        fields=form.fields, filename=form.filename, content_type=form.content_type
    )
    if sink is None:
        return upload
    if sink.inspection_error is not None:
        sink.remove_file()
        upload.inspection_error = sink.inspection_error
        return upload
    upload.file_path = sink.path
    upload.sha256 = sink.sha256
    upload.size = sink.size
    upload.inspection = sink.inspection
    return upload


@dataclass
class _Part:
    name: str
    is_file: bool
    text: bytearray = field(default_factory=bytearray)


@dataclass
class _Form:
    """python_multipart callbacks turned into fields and file bytes.

    The callbacks run inside parser.write(); file bytes collect in file_data until the
    receiver hands them to the sink after each write.
    """

    file_field: str
    text_fields: frozenset[str]
    max_text_bytes: int
    max_file_bytes: int
    too_large: type[AppError]
    fields: dict[str, str] = field(default_factory=dict)
    filename: str | None = None
    content_type: str | None = None
    file_bytes: int = 0
    file_data: list[bytes] = field(default_factory=list)
    file_needs_sink: bool = False  # an empty file that was named must still exist
    ended: bool = False
    _part: _Part | None = None
    _seen: set[str] = field(default_factory=set)
    _headers: dict[bytes, bytes] = field(default_factory=dict)
    _header_name: bytearray = field(default_factory=bytearray)
    _header_value: bytearray = field(default_factory=bytearray)

    def callbacks(self) -> MultipartCallbacks:
        return {
            "on_part_begin": self._headers.clear,
            "on_header_field": lambda data, start, end: self._header_name.extend(data[start:end]),
            "on_header_value": lambda data, start, end: self._header_value.extend(data[start:end]),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
            "on_end": self._end,
        }

    def _header_end(self) -> None:
        self._headers[bytes(self._header_name).lower()] = bytes(self._header_value).strip()
        self._header_name.clear()
        self._header_value.clear()

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition"))
        raw_name = options.get(b"name")
        if raw_name is None:
            raise ValidationFailed("A multipart part has no field name")
        name = raw_name.decode("utf-8", "replace")
        if name != self.file_field and name not in self.text_fields:
            raise ValidationFailed.field(name, "is not a known field")
        if name in self._seen:
            raise ValidationFailed.field(name, "is sent more than once")
        encoding = self._headers.get(b"content-transfer-encoding", b"binary").lower()
        if encoding not in (b"binary", b"7bit", b"8bit"):
            raise ValidationFailed.field(name, "uses an unsupported Content-Transfer-Encoding")
        self._seen.add(name)
        self._part = _Part(name=name, is_file=name == self.file_field)
        if self._part.is_file:
            filename = options.get(b"filename")
            self.filename = filename.decode("utf-8", "replace") if filename is not None else None
            part_type = self._headers.get(b"content-type")
            self.content_type = part_type.decode("latin-1") if part_type else None

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        part = self._part
        if part is None:  # pragma: no cover - the parser announces headers first
            return
        if part.is_file:
            self.file_bytes += end - start
            if self.file_bytes > self.max_file_bytes:
                raise too_large_error(
                    self.too_large, self.max_file_bytes, self.file_bytes, FILE_READ
                )
            self.file_data.append(data[start:end])
            return
        if len(part.text) + end - start > self.max_text_bytes:
            raise ValidationFailed.field(part.name, f"is longer than {self.max_text_bytes} bytes")
        part.text.extend(data[start:end])

    def _part_end(self) -> None:
        part, self._part = self._part, None
        if part is None:  # pragma: no cover
            return
        if not part.is_file:
            try:
                self.fields[part.name] = part.text.decode("utf-8")
            except UnicodeDecodeError:
                raise ValidationFailed.field(part.name, "is not valid UTF-8") from None
            return
        # A browser sends an empty part with filename="" when no file was chosen.
        self.file_needs_sink = self.file_bytes > 0 or bool(self.filename)

    def _end(self) -> None:
        self.ended = True


_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)


def _upload_limiter() -> anyio.CapacityLimiter:
    loop = asyncio.get_running_loop()
    limiter = _limiters.get(loop)
    if limiter is None:
        limiter = _limiters[loop] = anyio.CapacityLimiter(UPLOAD_WORKER_THREADS)
    return limiter


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # a cancelled upload stopped waiting
        waiter.set_result(None)


class _Handoff:
    """Byte pieces from the event loop to one worker thread; about `limit` bytes at most.

    The worker takes pieces under a lock, without the event loop's help. The event loop
    awaits only while the queue is full; the worker wakes it (call_soon_threadsafe) once
    the queue is half empty.
    """

    def __init__(self, limit: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._limit = limit
        self._pieces: deque[bytes] = deque()
        self._queued = 0
        self._changed = threading.Condition(threading.Lock())
        self._ended = False  # no more pieces will come
        self._quit = False  # the worker takes no more pieces
        self._room: asyncio.Future[None] | None = None

    # The event loop's side.

    async def put(self, pieces: list[bytes], size: int) -> bool:
        """Queue the pieces, waiting while the queue is full; False if the worker quit."""
        while True:
            with self._changed:
                if self._quit:
                    return False
                if self._queued < self._limit:
                    self._pieces.extend(pieces)
                    self._queued += size
                    self._changed.notify()
                    return True
                room = self._room = self._loop.create_future()
            await room

    def end(self, *, discard: bool = False) -> None:
        """No more pieces; with discard, the queued ones are dropped too."""
        with self._changed:
            if discard:
                self._pieces.clear()
                self._queued = 0
            self._ended = True
            self._changed.notify()

    # The worker thread's side.

    def take(self) -> bytes | None:
        """The next piece, waiting for it; None at the end."""
        room = None
        with self._changed:
            while not self._pieces:
                if self._ended:
                    return None
                self._changed.wait()
            piece = self._pieces.popleft()
            self._queued -= len(piece)
            if self._room is not None and self._queued <= self._limit // 2:
                room, self._room = self._room, None
        if room is not None:
            self._loop.call_soon_threadsafe(_wake, room)
        return piece

    def quit(self) -> None:
        """The worker stops taking pieces; wakes the event loop if it waits for room."""
        with self._changed:
            self._quit = True
            self._pieces.clear()
            self._queued = 0
            room, self._room = self._room, None
        if room is not None:
            self._loop.call_soon_threadsafe(_wake, room)


class _FileSink(Generic[InfoT]):
    """One worker thread per file: write to a temp file, hash, and feed the inspector."""

    def __init__(self, temp_dir: Path, inspector: Inspector[InfoT] | None) -> None:
        self._temp_dir = temp_dir
        self._inspector = inspector
        self._handoff = _Handoff(_HANDOFF_QUEUE_BYTES)
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._hasher = hashlib.sha256()
        self.path: Path | None = None
        self.size = 0
        self.inspection: InfoT | None = None
        self.inspection_error: str | None = None
        self.stopped = False  # the worker quit early; the body need not be read further
        self._task = asyncio.get_running_loop().create_task(
            anyio.to_thread.run_sync(self._work, limiter=_upload_limiter())
        )

    @property
    def sha256(self) -> str:
        return self._hasher.hexdigest()

    async def feed(self, pieces: list[bytes]) -> None:
        self._pending += pieces
        self._pending_bytes += sum(len(piece) for piece in pieces)
        if self._pending_bytes >= _HANDOFF_BYTES:
            await self._flush()

    async def finish(self) -> None:
        """All bytes are in: let the worker complete, and raise what it raised."""
        await self._flush()
        self._handoff.end()
        try:
            await self._task
        except BaseException:
            self.remove_file()
            raise

    async def abort(self) -> None:
        """The request failed: stop the worker, wait for it, delete the file."""
        self._handoff.end(discard=True)
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await self._task
        self.remove_file()

    def remove_file(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    async def _flush(self) -> None:
        if not self._pending or self.stopped:
            return
        pieces, size = self._pending, self._pending_bytes
        self._pending, self._pending_bytes = [], 0
        if not await self._handoff.put(pieces, size):
            self.stopped = True

    # Everything below runs in the worker thread.

    def _work(self) -> None:
        try:
            fd, self.path = new_temp_file(self._temp_dir)
            with os.fdopen(fd, "wb") as out:
                reader = _TeeReader(self._handoff.take, out, self._hasher)
                if self._inspector is not None and not self._inspect(self._inspector, reader):
                    return
                reader.drain()
                self.size = reader.size
        finally:
            # Wakes the event loop if it waits for room while the worker quits early.
            self._handoff.quit()

    def _inspect(self, inspector: Inspector[InfoT], reader: _TeeReader) -> bool:
        try:
            self.inspection = inspector(reader)
        except Refused as exc:
            self.inspection_error = exc.message
            self.stopped = True
            return False
        return True


class _TeeReader:
    """Blocking read() over the queued chunks; every chunk is written and hashed as it passes."""

    def __init__(
        self,
        next_chunk: Callable[[], bytes | None],
        out: BinaryIO,
        hasher: hashlib._Hash,
    ) -> None:
        self._next_chunk = next_chunk
        self._out = out
        self._hasher = hasher
        self._chunk = b""
        self._offset = 0
        self._written_back = 0
        self.size = 0

    def read(self, size: int = -1, /) -> bytes:
        if self._offset >= len(self._chunk) and not self._pull():
            return b""
        chunk, start = self._chunk, self._offset
        if start == 0 and (size < 0 or size >= len(chunk)):
            self._offset = len(chunk)
            return chunk  # the whole chunk, without a copy
        end = len(chunk) if size < 0 else min(len(chunk), start + size)
        self._offset = end
        return chunk[start:end]

    def drain(self) -> None:
        """Consume what the inspector left unread, so the file and hash are complete."""
        self._offset = len(self._chunk)
        while self._pull():
            self._offset = len(self._chunk)

    def _pull(self) -> bool:
        chunk = self._next_chunk()
        if chunk is None:
            return False
        self._out.write(chunk)
        self._hasher.update(chunk)
        self.size += len(chunk)
        self._chunk, self._offset = chunk, 0
        if self.size - self._written_back >= _WRITE_BEHIND_BYTES:
            self._write_back()
        return True

    def _write_back(self) -> None:
        """Start writing what is in the page cache to disk, without waiting for it.

        The file is fsynced before it becomes a blob; bytes already on their way to disk
        by then make that fsync short. Linux starts writeback of dirty pages on
        POSIX_FADV_DONTNEED (pages being written are not dropped), which PostgreSQL also
        relies on where sync_file_range is missing; elsewhere this does nothing.
        """
        if _FADV_DONTNEED is None:
            return
        self._out.flush()
        start, self._written_back = self._written_back, self.size
        with contextlib.suppress(OSError):
            os.posix_fadvise(self._out.fileno(), start, self.size - start, _FADV_DONTNEED)
