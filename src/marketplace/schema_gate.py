"""The database's schema checked before any request uses it.

`marketplace serve` migrates SQLite itself, but PostgreSQL is migrated by the operator
(`marketplace db upgrade`). Against a database without the schema, or behind the migrations
this code needs, a query fails on a missing table or column: that is not the request's fault
and not a bug, so every route that needs the database answers 503 SERVICE_UNAVAILABLE with
Retry-After, and the log names the migrations that are missing. The gate looks again at most
once per `recheck_seconds`, so it opens as soon as the migrations are applied, without a
restart; once open it stays open and costs one attribute read per request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

import anyio
import structlog
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp, Receive, Scope, Send

from marketplace.errors import DatabaseUnavailable, ServiceUnavailable
from marketplace.kit.errors_http import error_response
from marketplace.migrate import alembic_config


def _log() -> structlog.stdlib.BoundLogger:
    # A fresh logger per line (a few per state change): not cached across reconfigurations.
    return structlog.get_logger("marketplace.schema")  # type: ignore[no-any-return]


# Paths that answer without the database: probes, metrics and the API's documentation.
_NO_DATABASE_PATHS: Final = frozenset(
    {"/", "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/redoc"}
)
_NO_DATABASE_PREFIXES: Final = ("/static-offline-docs/", "/docs/", "/redoc/")


class SchemaNotReady(ServiceUnavailable):
    message = "The database schema is not ready; an operator must run `marketplace db upgrade`"

    def __init__(self, message: str | None = None, *, missing: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        if missing:
            self.details["missingMigrations"] = list(missing)


@dataclass(frozen=True, slots=True)
class SchemaState:
    current: str | None  # None: no schema at all (no alembic_version table or row)
    missing: tuple[str, ...]  # migration file stems, oldest first; () when at head

    @property
    def ready(self) -> bool:
        return not self.missing


class SchemaGate:
    def __init__(
        self, engine: AsyncEngine, *, timeout_seconds: float, recheck_seconds: float = 1.0
    ) -> None:
        self._engine = engine
        self._timeout = timeout_seconds
        self.recheck_seconds = recheck_seconds
        self._script = ScriptDirectory.from_config(alembic_config(""))
        self._head = self._script.get_current_head()
        self._lock = anyio.Lock()
        self._checked_at = -recheck_seconds  # never yet
        self._last_logged: SchemaState | None = None
        self._unreadable = False  # the last look could not read the schema at all
        self.open = False

    async def require(self) -> None:
        """Return when the schema is at head; 503 (SchemaNotReady, or DatabaseUnavailable when
        it could not be read) otherwise. One request at a time looks, at most once per
        `recheck_seconds` whatever the outcome; requests that come meanwhile wait for that
        look (itself bounded) and take its result, so a new worker's first burst is served
        and a hung database costs each of them one bound, not one each in turn."""
        if self.open:
            return
        async with self._lock:
            if self.open:
                return
            if time.monotonic() - self._checked_at < self.recheck_seconds:
                raise self._refusal()
            try:
                state = await self._read()
            except (ServiceUnavailable, TimeoutError):
                self._unreadable = True
                raise DatabaseUnavailable() from None
            finally:
                self._checked_at = time.monotonic()
            self._unreadable = False
            if state.ready:
                self.open = True
                if self._last_logged is not None:
                    _log().info("database schema ready", revision=state.current)
                return
            self._report(state)
        raise self._refusal()

    def _refusal(self) -> ServiceUnavailable:
        if self._unreadable:
            return DatabaseUnavailable()
        return SchemaNotReady(missing=self._last_logged.missing if self._last_logged else ())

    async def _read(self) -> SchemaState:
        try:
            with anyio.fail_after(self._timeout):
                async with self._engine.connect() as conn:
                    try:
                        current = await conn.scalar(text("SELECT version_num FROM alembic_version"))
                    except DBAPIError as exc:
                        if not _is_missing_table(exc):
                            raise
                        current = None  # no alembic_version table: nothing migrated yet
        except DBAPIError as exc:
            # Cannot connect (no such database, refused credentials) or cannot read (rights):
            # not a missing schema, and not the request's fault either.
            _log().error("database schema cannot be read", error=type(exc.orig).__name__)
            raise DatabaseUnavailable() from exc
        return self.state_at(None if current is None else str(current))

    def state_at(self, current: str | None) -> SchemaState:
        """What is missing between `current` and the head of this code's migrations."""
        if current == self._head:
            return SchemaState(current, ())
        known = {rev.revision for rev in self._script.walk_revisions()}
        if current is not None and current not in known:
            # Newer than this code (a rollback of the code, not of the schema): migrations
            # add, so this code still finds what it needs. Served, and said so.
            _log().warning("database schema is newer than this code", revision=current)
            return SchemaState(current, ())
        between = self._script.iterate_revisions(self._head, current or "base")
        missing = tuple(_stem(rev.path) for rev in reversed(list(between)))
        return SchemaState(current, missing)

    def _report(self, state: SchemaState) -> None:
        if state == self._last_logged:
            return  # once per change, not once per request
        self._last_logged = state
        _log().error(
            "database schema not ready: answering 503 until `marketplace db upgrade` runs",
            revision=state.current or "none",
            missing_migrations=", ".join(state.missing),
            first_missing=state.missing[0],
        )


def _is_missing_table(exc: DBAPIError) -> bool:
    """SQLite's "no such table", PostgreSQL's undefined_table (42P01)."""
    original = exc.orig
    return "no such table" in str(original) or getattr(original, "sqlstate", None) == "42P01"


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.removesuffix(".py")


class SchemaGateMiddleware:
    """503 SERVICE_UNAVAILABLE for every request that needs the database while the schema is
    not at head (see SchemaGate)."""

    def __init__(self, app: ASGIApp, *, gate: SchemaGate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.gate.open or scope["type"] != "http" or _needs_no_database(scope["path"]):
            await self.app(scope, receive, send)
            return
        error: ServiceUnavailable
        try:
            await self.gate.require()
        except ServiceUnavailable as exc:  # SchemaNotReady, or the database cannot answer
            error = exc
        else:
            await self.app(scope, receive, send)
            return
        response = error_response(
            error.status_code, error.code, error.message, error.details, error.headers
        )
        await response(scope, receive, send)


def _needs_no_database(path: str) -> bool:
    return path in _NO_DATABASE_PATHS or path.startswith(_NO_DATABASE_PREFIXES)
