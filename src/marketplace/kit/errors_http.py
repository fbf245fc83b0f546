"""Every error path rendered in the contract's envelope; never a stack trace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from marketplace.errors import AppError, DatabaseUnavailable, ServiceUnavailable
from marketplace.kit.responses import JSONBytes
from marketplace.kit.schemas import InvalidJSON

log = structlog.get_logger("marketplace.errors")

_HTTP_CODES = {
    400: "VALIDATION_FAILED",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    429: "RATE_LIMIT_EXCEEDED",
}


def error_response(
    status: int,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONBytes:
    body = {"success": False, "error": {"code": code, "message": message, "details": details or {}}}
    return JSONBytes(body, status_code=status, headers=headers)


def _field_name(loc: tuple[Any, ...]) -> str:
    # Drop the "body"/"query"/"path" prefix; keep the rest as a dotted path.
    parts = [str(p) for p in loc[1:]] if len(loc) > 1 else [str(p) for p in loc]
    return ".".join(parts) or "body"


def _field_message(error: dict[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        return "unknown field"
    if error.get("type") == "missing":
        return "field required"
    message = str(error.get("msg", "invalid value"))
    return message.removeprefix("Value error, ")


async def _app_error(_request: Request, exc: Exception) -> JSONBytes:
    if not isinstance(exc, AppError):  # registered for this type only
        raise exc
    return _render(exc)


def _render(exc: AppError) -> JSONBytes:
    return error_response(exc.status_code, exc.code, exc.message, exc.details, exc.headers)


async def _unavailable(request: Request, exc: Exception) -> JSONBytes:
    if not isinstance(exc, ServiceUnavailable):  # registered for this type only
        raise exc
    # An outage is the operator's business, not a bug: a warning naming the cause, no trace.
    cause = exc.__cause__ or exc.__context__
    log.warning(
        "dependency unavailable",
        error=exc.code,
        cause=type(cause).__name__ if cause is not None else None,
        path=request.url.path,
    )
    return _render(exc)


async def _pool_timeout(request: Request, exc: Exception) -> JSONBytes:
    if not isinstance(exc, PoolTimeout):  # registered for this type only
        raise exc
    # Every pooled connection stayed busy for MARKETPLACE_DB_POOL_TIMEOUT_SECONDS.
    unavailable = DatabaseUnavailable()
    unavailable.__cause__ = exc
    return await _unavailable(request, unavailable)


def validation_fields(errors: Sequence[Any]) -> list[dict[str, str]]:
    """Pydantic/FastAPI errors as the contract's `details.fields`: `[{field, message}]`."""
    for error in errors:
        if isinstance(error.get("input"), InvalidJSON):
            return [{"field": "body", "message": error["input"].message}]
    return [
        {"field": _field_name(tuple(e.get("loc", ()))), "message": _field_message(e)}
        for e in errors
    ]


def validation_summary(fields: Sequence[dict[str, str]]) -> str:
    return "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5]) or "Request is invalid"


async def _validation_error(_request: Request, exc: Exception) -> JSONBytes:
    if not isinstance(exc, RequestValidationError):  # registered for this type only
        raise exc
    fields = validation_fields(exc.errors())
    return error_response(400, "VALIDATION_FAILED", validation_summary(fields), {"fields": fields})


async def _http_error(_request: Request, exc: Exception) -> JSONBytes:
    if not isinstance(exc, StarletteHTTPException):  # registered for this type only
        raise exc
    code = _HTTP_CODES.get(exc.status_code, "ERROR")
    message = "Not found" if exc.status_code == 404 else str(exc.detail)
    return error_response(exc.status_code, code, message, headers=exc.headers)


async def _unexpected(_request: Request, exc: Exception) -> JSONBytes:
    log.error("unhandled exception", exc_info=exc)
    # Starlette re-raises the exception after this response, and uvicorn then closes the
    # connection: say so, or a client reusing it for its next request (the publishing
    # tool's inline fallback right after a failed upload) gets "connection reset".
    return error_response(
        500, "INTERNAL_ERROR", "Internal server error", headers={"Connection": "close"}
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(AppError, _app_error)
    app.add_exception_handler(ServiceUnavailable, _unavailable)
    app.add_exception_handler(PoolTimeout, _pool_timeout)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
