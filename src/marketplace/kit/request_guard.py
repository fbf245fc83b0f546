"""Request hygiene before routing: a cap on JSON bodies (upload routes stream and enforce
their own limits) and no NUL characters in URLs (no database can store or compare them)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from marketplace.errors import AppError, TooLarge, ValidationFailed
from marketplace.kit.errors_http import error_response

# Inline-code manifests carry whole bundles, so JSON bodies get a generous cap.
JSON_BODY_MAX_BYTES = 16 * 1024 * 1024
_STREAMED_SUFFIXES = ("/upload-version", "/upload", "/icon", "/upload-package")


class RequestGuardMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int = JSON_BODY_MAX_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _has_nul(scope):
            error = ValidationFailed("NUL characters are not allowed in URLs")
            await _answer(error, scope, receive, send)
            return
        if _streams_itself(scope):
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0
        refused = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # Answer now and tell the app the client is gone: the framework would
                    # otherwise turn an exception here into a generic parse error.
                    refused = True
                    await self._refuse(scope, receive, send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, counting_receive, guarded_send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _answer(TooLarge(details={"maxBytes": self.max_bytes}), scope, receive, send)


async def _answer(error: AppError, scope: Scope, receive: Receive, send: Send) -> None:
    response = error_response(error.status_code, error.code, error.message, error.details)
    await response(scope, receive, send)


def _has_nul(scope: Scope) -> bool:
    query: bytes = scope.get("query_string", b"")
    return "\x00" in scope["path"] or b"\x00" in query or b"%00" in query


def _streams_itself(scope: Scope) -> bool:
    # Only the multipart upload routes (all POST) parse and cap their own bodies.
    return bool(scope["method"] == "POST" and scope["path"].endswith(_STREAMED_SUFFIXES))


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
