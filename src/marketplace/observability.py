"""Request IDs, structured access logs and Prometheus metrics, as one pure ASGI middleware."""

from __future__ import annotations

import logging
import os
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def json_logs_wanted(json_logs: bool | None) -> bool:
    """The setting, or else JSON whenever stderr is not a terminal."""
    return not sys.stderr.isatty() if json_logs is None else json_logs


def _renderer(json_logs: bool) -> Any:
    return structlog.processors.JSONRenderer() if json_logs else structlog.dev.ConsoleRenderer()


class _CurrentStderr:
    """Writes to whatever `sys.stderr` is at the time of the write, not at configure time:
    loggers are cached on first use, and a stream swapped in for a while (a test runner's
    capture, a CLI command run in-process) must not stay their target once it is closed."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(*, json_logs: bool | None, level: str) -> None:
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _renderer(json_logs_wanted(json_logs)),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )


def stdlib_formatter(json_logs: bool) -> logging.Formatter:
    """Renders a standard-library record (uvicorn's, alembic's) as structlog renders ours."""
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
        ],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            _renderer(json_logs),
        ],
    )


def stdlib_log_config(*, json_logs: bool | None, level: str) -> dict[str, Any]:
    """A `logging.config.dictConfig` for the standard library's loggers, uvicorn's included
    (uvicorn.run's `log_config`), so that with JSON logs on every line of the server's
    output is JSON. Plain data only: uvicorn pickles it into each worker process."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "structlog": {
                "()": f"{__name__}.stdlib_formatter",
                "json_logs": json_logs_wanted(json_logs),
            }
        },
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "structlog",
                "stream": "ext://sys.stderr",
            }
        },
        # uvicorn's loggers only set their level and reach the root's one handler.
        "loggers": {
            **{
                name: {"level": level.upper(), "handlers": [], "propagate": True}
                for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
            },
            # Eight lines per worker at INFO about loading autogenerate (the /readyz check).
            "alembic.runtime.plugins": {"level": "WARNING"},
        },
        "root": {"level": level.upper(), "handlers": ["stderr"]},
    }


class Metrics:
    def __init__(self) -> None:
        # A registry per app, so several apps in one process (tests) do not collide.
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "http_requests_total",
            "HTTP requests by method, route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "http_request_duration_seconds",
            "HTTP request latency by method and route template",
            ["method", "route"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        # 0 until the process's search index is built (catalog.search_index), then the
        # catalogue generation it shows; with several workers, the least advanced one's.
        self.search_index_generation = Gauge(
            "search_index_generation",
            "Catalogue generation of the search index (0: not built, searches use SQL)",
            registry=self.registry,
            multiprocess_mode="livemin",
        )
        self.rate_limit_fallbacks = Counter(
            "rate_limit_redis_fallbacks_total",
            "Times Redis failed and rate limits were counted in the process instead",
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        """The Prometheus text: this process's metrics or, in prometheus-client's multiprocess
        mode (`serve --workers N` sets PROMETHEUS_MULTIPROC_DIR), every worker's summed."""
        directory = os.environ.get(MULTIPROC_ENV)
        if not directory:
            return bytes(generate_latest(self.registry))
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
        return bytes(generate_latest(registry))


MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def prepare_multiprocess_metrics(directory: Path) -> None:
    """Empty the folder where each worker's metric files go, before the workers start
    (prometheus-client: values of a previous run must not be added to this one's)."""
    directory.mkdir(parents=True, exist_ok=True)
    for leftover in directory.glob("*.db"):
        leftover.unlink()


CLIENT_CLOSED_REQUEST = 499

# The contract's envelope for a failure nobody handled (kit.errors_http writes the others).
_INTERNAL_ERROR_BODY = (
    b'{"success":false,"error":{"code":"INTERNAL_ERROR",'
    b'"message":"Internal server error","details":{}}}'
)
_INTERNAL_ERROR_START: Message = {
    "type": "http.response.start",
    "status": 500,
    "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(_INTERNAL_ERROR_BODY)).encode()),
        # The connection may be in any state: the client must not reuse it.
        (b"connection", b"close"),
    ],
}


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        self.log = structlog.get_logger("marketplace.access")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = _header(scope, b"x-request-id")
        request_id = incoming if incoming and _REQUEST_ID_RE.match(incoming) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500
        started = time.perf_counter()

        status_sent = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, status_sent
            if message["type"] == "http.response.start":
                status = message["status"]
                status_sent = True
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        structlog.contextvars.bind_contextvars(request_id=request_id)
        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            # Answered here rather than by Starlette's outermost handler, so the 500 carries
            # X-Request-ID and the log line the request id, and no plain-text traceback
            # reaches the server's output.
            if isinstance(exc, ClientDisconnect):
                # Nobody is left to answer; counted as nginx does, 499.
                self.log.info("client disconnected", path=scope["path"])
                status = CLIENT_CLOSED_REQUEST
                return
            self.log.error("unhandled exception", exc_info=exc)
            if status_sent:
                raise
            await send_with_id(_INTERNAL_ERROR_START)
            await send_with_id({"type": "http.response.body", "body": _INTERNAL_ERROR_BODY})
        finally:
            elapsed = time.perf_counter() - started
            route = _route_template(scope)
            method = scope["method"]
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.latency.labels(method, route).observe(elapsed)
            self.log.info(
                "request",
                method=method,
                path=scope["path"],
                route=route,
                status=status,
                ms=round(elapsed * 1000, 2),
            )
            structlog.contextvars.unbind_contextvars("request_id")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _route_template(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    # Unmatched paths share one label, so random URLs cannot explode the metric.
    return path if isinstance(path, str) else "<unmatched>"
