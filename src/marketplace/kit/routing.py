"""The route class every router uses.

FastAPI decodes a JSON body before it runs any dependency, so a malformed body would
answer 400 ahead of 401/403/404 (CONTRACT 1 orders those first). The request handed to
FastAPI here decodes leniently: an undecodable body becomes an `InvalidJSON` value that
fails validation after the dependencies ran, and the error handler names it as such.

Bodies are capped here too (413 before anything else reads them), except on routes marked
`@streams_body`: those parse and cap their own multipart bodies as they arrive.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.routing import APIRoute
from starlette.requests import ClientDisconnect

from marketplace.errors import AppError, TooLarge, ValidationFailed
from marketplace.kit.schemas import ERROR_RESPONSES, NOT_AN_OBJECT, InvalidJSON

# Inline-code manifests carry whole bundles, so JSON bodies get a generous cap.
JSON_BODY_MAX_BYTES = 16 * 1024 * 1024
STREAMS_BODY = "streams_body"
READS_ONLY = "reads_only"

F = TypeVar("F", bound=Callable[..., Any])


def streams_body(endpoint: F) -> F:
    """Mark an endpoint that reads its own (streamed, self-capped) request body.

    Its route gets no body cap and its request session no write transaction: the endpoint
    opens its own once the body has arrived (marketplace.db.request_session).
    """
    setattr(endpoint, STREAMS_BODY, True)
    return endpoint


def reads_only(endpoint: F) -> F:
    """Mark a POST that only reads (a query too large for a URL: the update check). Its
    request session is a read: on SQLite no BEGIN IMMEDIATE, so it never queues for the
    write lock behind uploads and installs."""
    setattr(endpoint, READS_ONLY, True)
    return endpoint


class _LenientJSONRequest(Request):
    async def json(self) -> Any:
        try:
            value = await super().json()
        except json.JSONDecodeError as error:
            return InvalidJSON.undecodable(error)
        except UnicodeDecodeError as error:
            return InvalidJSON.undecodable(json.JSONDecodeError("not UTF-8", "", error.start))
        except RecursionError:
            return InvalidJSON("invalid JSON: nested too deeply")
        # Every JSON body is an object; `null` would otherwise stand for "no body" on a
        # route whose body is optional.
        return value if isinstance(value, dict) else InvalidJSON(f"body {NOT_AN_OBJECT}")

    async def read_capped_body(self, max_bytes: int) -> None:
        """Read the whole body (what FastAPI reads later), refusing one over max_bytes."""
        declared = self.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > max_bytes:
            raise TooLarge(details={"maxBytes": max_bytes})
        chunks: list[bytes] = []
        received = 0
        try:
            async for chunk in self.stream():
                received += len(chunk)
                if received > max_bytes:
                    raise TooLarge(details={"maxBytes": max_bytes})
                chunks.append(chunk)
        except ClientDisconnect:
            raise ValidationFailed("The request body is incomplete") from None
        self._body = b"".join(chunks)


class ApiRoute(APIRoute):
    max_body_bytes = JSON_BODY_MAX_BYTES
    # What a body that does not validate answers (documented per operation in OpenAPI).
    body_validation_error: type[AppError] = ValidationFailed

    @property
    def streams_body(self) -> bool:
        return bool(getattr(self.endpoint, STREAMS_BODY, False))

    @property
    def reads_only(self) -> bool:
        return bool(getattr(self.endpoint, READS_ONLY, False))

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        reads_body = self.body_field is not None and not self.streams_body
        max_bytes = self.max_body_bytes

        async def lenient_handler(request: Request) -> Response:
            lenient = _LenientJSONRequest(request.scope, request.receive)
            if reads_body:
                # Outside FastAPI's body parsing, which would turn the 413 into a 400.
                await lenient.read_capped_body(max_bytes)
            return await handler(lenient)

        return lenient_handler


def api_router(**kwargs: Any) -> APIRouter:
    """An APIRouter whose routes check auth before the body, documenting the envelope."""
    kwargs.setdefault("route_class", ApiRoute)
    kwargs.setdefault("responses", ERROR_RESPONSES)
    # `/browse/` is an unknown path (404 in the envelope), not a 307 to `/browse`.
    kwargs.setdefault("redirect_slashes", False)
    return APIRouter(**kwargs)


def amend_openapi(app: FastAPI, amend: Callable[[dict[str, Any]], None]) -> None:
    """Wrap `app.openapi` so that `amend` changes the document once, when it is built (the
    built document is cached in `app.openapi_schema`, so it is changed in place)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()
        amend(document)
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def install_object_bodies_in_openapi(app: FastAPI) -> None:
    """Document an optional JSON body as what it is: an object, or no body at all
    (`required: false`). FastAPI writes `Model | None` as "the object or null", but a
    `null` body is refused like any non-object (above)."""
    amend_openapi(app, _object_bodies)


def _object_bodies(document: dict[str, Any]) -> None:
    for item in document.get("paths", {}).values():
        for operation in item.values():
            body = operation.get("requestBody", {}) if isinstance(operation, dict) else {}
            media = body.get("content", {}).get("application/json")
            if media is not None:
                media["schema"] = _without_null(media.get("schema", {}))


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    choices = schema.get("anyOf")
    if not isinstance(choices, list) or {"type": "null"} not in choices:
        return schema
    kept = [choice for choice in choices if choice != {"type": "null"}]
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    if len(kept) == 1:
        return {**kept[0], **rest}
    return {**rest, "anyOf": kept}
