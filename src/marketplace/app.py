"""create_app(): settings → engine, blob store, limiter, routers, middleware, error handlers."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
import structlog
from fastapi import FastAPI, Request
from fastapi_offline import FastAPIOffline
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import text
from sqlalchemy.exc import OperationalError, ProgrammingError, SQLAlchemyError
from starlette.responses import PlainTextResponse, Response

from marketplace.accounts.endpoints import admin_router as accounts_admin_router
from marketplace.accounts.endpoints import auth_router, developer_router
from marketplace.accounts.token_endpoints import router as token_router
from marketplace.admin_console.router import router as console_router
from marketplace.auth.openapi import (
    install_error_codes_in_openapi,
    install_optional_auth_in_openapi,
)
from marketplace.auth.ratelimit import RateLimiter
from marketplace.auth.ratelimit_mw import RateLimitMiddleware
from marketplace.catalog.endpoints import router as catalog_router
from marketplace.catalog.http import install_purchase_states
from marketplace.catalog.limits import router as limits_router
from marketplace.catalog.revocations import router as revocations_router
from marketplace.catalog.search_index import close_search_index, search_index
from marketplace.commerce.endpoints import router as commerce_router
from marketplace.commerce.purchases import caller_purchase_states, purchase_states
from marketplace.config import Settings, get_settings
from marketplace.db import (
    DbTimeouts,
    analyze_at_start,
    make_engine,
    make_read_engine,
    make_sessionmaker,
)
from marketplace.delivery.downloads import close_download_counts
from marketplace.delivery.endpoints import admin_router as delivery_admin_router
from marketplace.delivery.endpoints import developer_router as delivery_developer_router
from marketplace.delivery.endpoints import public_router as delivery_public_router
from marketplace.errors import DatabaseUnavailable
from marketplace.inspection import ledger as inspection_ledger
from marketplace.inspection.endpoints import router as capabilities_router
from marketplace.inspection.metrics import inspection_metrics
from marketplace.inspection.queue import InspectionQueue
from marketplace.kit.errors_http import install_error_handlers
from marketplace.kit.front import router as front_router
from marketplace.kit.methods import AllowedMethodsMiddleware
from marketplace.kit.request_guard import (
    RequestGuardMiddleware,
    install_no_nul_parameters_in_openapi,
)
from marketplace.kit.responses import JSONBytes
from marketplace.kit.routing import install_object_bodies_in_openapi
from marketplace.kit.tempfiles import remove_abandoned
from marketplace.migrate import backfill_log, head_revision
from marketplace.observability import Metrics, RequestContextMiddleware, configure_logging
from marketplace.orgs.endpoints import router as org_router
from marketplace.plugins.admin_endpoints import router as plugin_admin_router
from marketplace.plugins.developer_endpoints import router as plugin_developer_router
from marketplace.portal.router import router as portal_router
from marketplace.public_pages.router import router as public_pages_router
from marketplace.publishing.endpoints import audit_router
from marketplace.publishing.uploads import upload_dir
from marketplace.scenarios.admin_endpoints import router as scenario_admin_router
from marketplace.scenarios.developer_endpoints import router as scenario_developer_router
from marketplace.scenarios.public_endpoints import router as scenario_public_router
from marketplace.schema_gate import SchemaGate, SchemaGateMiddleware
from marketplace.storage.base import StoreNotReady
from marketplace.storage.factory import make_blob_store
from marketplace.storage.routes import router as blob_router
from marketplace.transparency.endpoints import router as log_router
from marketplace.trust.endpoints import router as keys_router
from marketplace.trust.keyring import Keyring
from marketplace.web.security import SiteHeadersMiddleware


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    inspection_ledger.install()
    configure_logging(json_logs=settings.log_json, level=settings.log_level)
    secret = settings.secret()
    engine = make_engine(
        settings.database_url,
        timeouts=DbTimeouts(
            connect=settings.db_connect_timeout_seconds,
            statement=settings.db_statement_timeout_seconds,
            pool=settings.db_pool_timeout_seconds,
        ),
        random_page_cost=settings.db_random_page_cost,
        work_mem_mb=settings.db_work_mem_mb,
    )
    metrics = Metrics()
    limiter = RateLimiter(settings, fallbacks=metrics.rate_limit_fallbacks)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Half-received uploads of killed workers would otherwise stay on disk for good.
        await anyio.to_thread.run_sync(functools.partial(remove_abandoned, upload_dir(settings)))
        if settings.analyze_at_start:
            # In the background: the statistics of the last run serve meanwhile (at
            # 1,000,000 plugins ANALYZE takes seconds, which the start would wait for).
            app.state.analyzing = asyncio.create_task(analyze_at_start(engine))
        await _prepare_log(app)
        index = search_index(app)
        if index is not None:
            index.prepare()  # opened and caught up before the first search asks
        if settings.gc_freeze_at_start:
            # The modules, routes and schemas of the start live as long as the process:
            # full collections under load walked them all (about 250,000 objects) each time.
            # Collected first: garbage frozen with them would never be freed.
            gc.collect()
            gc.freeze()
        yield
        await shutdown(app)

    # /docs and /redoc with Swagger UI and ReDoc served from the package, not a CDN: the
    # documentation loads on a machine without internet access (/redoc from kit.front,
    # whose copy of the script loads no logo from a CDN either).
    app = FastAPIOffline(
        redoc_url=None,
        title="Plugin and Scenario Marketplace",
        version="1.0.0",
        description="Developer publishing, administrator review and client distribution.",
        lifespan=lifespan,
        default_response_class=JSONBytes,
        # A trailing slash is another path: 404 NOT_FOUND in the envelope, never a 307.
        redirect_slashes=False,
    )
    app.state.settings = settings
    app.state.secret = secret
    app.state.engine = engine
    # New inspections are enqueued when the transaction that made them commits.
    app.state.inspection_queue = InspectionQueue(settings)
    enqueue = {inspection_ledger.ENQUEUE: app.state.inspection_queue.enqueue}
    read_engine = make_read_engine(settings.database_url)
    app.state.read_engine = read_engine
    app.state.sessionmaker = make_sessionmaker(read_engine or engine, info=enqueue)
    # Searches in SQL, which may take long: on aiosqlite's thread when reads run on the
    # loop's (catalog.search_engines.DatabaseEngine); the read sessions' otherwise.
    app.state.search_sessionmaker = (
        make_sessionmaker(engine, info=enqueue) if read_engine is not None else None
    )
    app.state.write_sessionmaker = make_sessionmaker(engine, write=True, info=enqueue)
    app.state.limiter = limiter
    app.state.blob_store = make_blob_store(settings)
    keyring = Keyring.from_settings(settings)
    keyring.signing_key()  # a broken keyring stops the start, not the first approval
    app.state.keyring = keyring
    app.state.metrics = metrics
    install_purchase_states(app, purchase_states, caller_purchase_states)

    install_error_handlers(app)
    # The public reads first: routes are tried in order, and these are most of the traffic.
    app.include_router(revocations_router)  # before any /api/v1/plugins/{...} route
    app.include_router(capabilities_router)
    app.include_router(catalog_router)
    app.include_router(commerce_router)
    app.include_router(delivery_public_router)
    app.include_router(delivery_developer_router)
    app.include_router(delivery_admin_router)
    app.include_router(auth_router)
    app.include_router(token_router)
    app.include_router(developer_router)
    app.include_router(accounts_admin_router)
    app.include_router(blob_router)
    app.include_router(keys_router)
    app.include_router(log_router)
    app.include_router(plugin_developer_router)
    app.include_router(org_router)
    app.include_router(plugin_admin_router)
    app.include_router(audit_router)
    app.include_router(scenario_developer_router)
    app.include_router(scenario_admin_router)
    app.include_router(scenario_public_router)
    app.include_router(limits_router)
    app.include_router(console_router)
    app.include_router(portal_router)
    app.include_router(front_router)
    app.include_router(public_pages_router)  # GET /, /plugins/{key}, /static/site.css
    _add_operations_routes(app)
    install_optional_auth_in_openapi(app)
    install_error_codes_in_openapi(app)
    install_object_bodies_in_openapi(app)
    install_no_nul_parameters_in_openapi(app)

    # The last added is outermost: console headers wrap request context wraps rate limiting
    # wraps the request guard wraps the methods check (OPTIONS, HEAD, 405) wraps the schema
    # gate (503 while the database is not migrated to head) wraps the app.
    app.state.schema_gate = SchemaGate(engine, timeout_seconds=settings.ready_check_timeout_seconds)
    app.add_middleware(SchemaGateMiddleware, gate=app.state.schema_gate)
    app.add_middleware(AllowedMethodsMiddleware)
    app.add_middleware(RequestGuardMiddleware)
    app.add_middleware(RateLimitMiddleware, limiter=limiter, secret=secret)
    app.add_middleware(RequestContextMiddleware, metrics=metrics)
    app.add_middleware(SiteHeadersMiddleware)
    return app


async def _prepare_log(app: FastAPI) -> None:
    """The transparency log's one-time backfill (migration 0014) and the keyring's key
    entries, before serving. A database that is not reachable or not migrated yet is the
    schema gate's to report (`db upgrade` backfills after migrating); any other failure is
    logged in full and the service serves, refusing decisions (503) until a restart or
    `db upgrade` completes the backfill."""
    log = structlog.get_logger("marketplace.log")
    try:
        appended = await backfill_log(app.state.write_sessionmaker, app.state.keyring)
    except (DatabaseUnavailable, OperationalError, ProgrammingError) as exc:
        log.warning("log_backfill_skipped", reason=type(exc).__name__)
        return
    except SQLAlchemyError:
        log.exception("log_backfill_failed")
        return
    if appended:
        log.info("log_backfilled", entries=appended)


async def shutdown(app: FastAPI) -> None:
    """Release pooled connections (database, Redis) and the search index's writer, after
    writing the download counts still in memory."""
    close_search_index(app)
    # ANALYZE holds the write lock while it reads: stopped before the counts are written.
    analyzing: asyncio.Task[None] | None = getattr(app.state, "analyzing", None)
    if analyzing is not None and not analyzing.done():
        analyzing.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await analyzing
    await close_download_counts(app)
    await app.state.limiter.close()
    await app.state.blob_store.aclose()
    await app.state.engine.dispose()
    if app.state.read_engine is not None:
        await app.state.read_engine.dispose()


def _add_operations_routes(app: FastAPI) -> None:
    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, Any]:
        return {"status": "ok"}

    expected_schema = head_revision()

    @app.get("/readyz", include_in_schema=False)
    async def readyz(request: Request) -> Response:
        checks: dict[str, str] = {}
        # Each check has its own deadline: a probe that hangs is what takes an instance out,
        # and the load balancer must hear so rather than time out itself.
        bound = request.app.state.settings.ready_check_timeout_seconds
        late = f"error: no answer within {bound:g} s"
        try:
            with anyio.fail_after(bound):
                async with request.app.state.engine.connect() as conn:
                    schema = await conn.scalar(text("SELECT version_num FROM alembic_version"))
            checks["database"] = (
                "ok"
                if schema == expected_schema
                else f"error: schema at {schema}, expected {expected_schema} "
                "(run marketplace db upgrade)"
            )
        except TimeoutError:
            checks["database"] = late
        except Exception as exc:
            checks["database"] = f"error: {type(exc).__name__}"
        try:
            with anyio.fail_after(bound):
                await request.app.state.blob_store.check_ready()
            checks["storage"] = "ok"
        except TimeoutError:
            checks["storage"] = late
        except StoreNotReady as exc:
            checks["storage"] = f"error: {exc}"
        except Exception as exc:
            checks["storage"] = f"error: {type(exc).__name__}"
        ready = all(v == "ok" for v in checks.values())
        # Redis is not needed to serve (rate limits fall back to the process): reported,
        # and the answer says "degraded", but it does not take the instance out.
        redis_state = await request.app.state.limiter.check_redis()
        if redis_state is not None:
            checks["redis"] = redis_state
        status = "ok" if ready and redis_state in (None, "ok") else "degraded"
        return JSONBytes(
            {"status": status if ready else "unavailable", "checks": checks},
            status_code=200 if ready else 503,
        )

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        # Under several workers this reads every worker's metric files: off the event loop.
        body = await anyio.to_thread.run_sync(request.app.state.metrics.exposition)
        try:
            async with request.app.state.sessionmaker() as session:
                body += await inspection_metrics(session)
        except (OSError, SQLAlchemyError):  # the database away: the process's own metrics
            pass
        return PlainTextResponse(body, media_type=CONTENT_TYPE_LATEST)
