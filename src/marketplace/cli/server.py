"""Server-side commands: serve, db upgrade, user create."""

from __future__ import annotations

import asyncio
import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from marketplace.cli.inspector import inspector, start_child, stop_child
from marketplace.roles import Role

if TYPE_CHECKING:
    from marketplace.config import Settings

# The server's modules (settings, database, storage) are imported inside the commands:
# the client commands must start without the server's dependencies.

db_app = typer.Typer(help="Database schema commands.", no_args_is_help=True)
user_app = typer.Typer(help="Account administration.", no_args_is_help=True)
storage_app = typer.Typer(help="Blob storage maintenance.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("inspector")(inspector)
    app.add_typer(db_app, name="db")
    app.add_typer(user_app, name="user")
    app.add_typer(storage_app, name="storage")


class LogLevel(enum.StrEnum):
    CRITICAL = "critical"
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    DEBUG = "debug"


def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 1,
    proxy_headers: Annotated[
        bool,
        typer.Option(
            "--proxy-headers/--no-proxy-headers",
            help="Take the client address and scheme from X-Forwarded-For and "
            "X-Forwarded-Proto, when the peer is one of --forwarded-allow-ips.",
        ),
    ] = True,
    forwarded_allow_ips: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated proxy addresses or networks trusted for --proxy-headers, "
            "or '*' for any (default: $FORWARDED_ALLOW_IPS, else 127.0.0.1).",
            show_default=False,
        ),
    ] = None,
    log_level: Annotated[
        LogLevel | None,
        typer.Option(
            case_sensitive=False,
            help="Level of the app's and uvicorn's logs (default: $MARKETPLACE_LOG_LEVEL, "
            "else info).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run the API. On the embedded default (SQLite) the database is created and migrated."""
    import logging.config
    import os
    import threading

    import uvicorn

    from marketplace.config import get_settings
    from marketplace.db import analyze_sqlite
    from marketplace.migrate import upgrade
    from marketplace.observability import (
        MULTIPROC_ENV,
        prepare_multiprocess_metrics,
        stdlib_log_config,
    )

    if log_level is not None:
        # The workers build their app from the environment (uvicorn's factory).
        os.environ["MARKETPLACE_LOG_LEVEL"] = log_level.value.upper()
        get_settings.cache_clear()
    settings = get_settings()
    log_config = stdlib_log_config(json_logs=settings.log_json, level=settings.log_level)
    logging.config.dictConfig(log_config)  # alembic's lines below, before uvicorn's own
    # Each worker's app freezes what its start allocated (Settings.gc_freeze_at_start),
    # unless the environment or the .env file says otherwise.
    if "gc_freeze_at_start" not in get_settings().model_fields_set:
        os.environ["MARKETPLACE_GC_FREEZE_AT_START"] = "true"
        get_settings.cache_clear()
    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    settings.secret()  # create the persistent key once, before workers race for it
    if settings.is_sqlite:
        upgrade(settings.database_url)
        if workers > 1:
            # Once here rather than in every worker at once (SQLite takes one writer: their
            # ANALYZEs failed with "database is locked" against each other), and beside
            # the workers' start rather than before it (7 s at 1,000,000 plugins, cold):
            # the statistics of the last run serve meanwhile.
            threading.Thread(
                target=analyze_sqlite, args=(settings.database_url,), name=ANALYZE_THREAD,
                daemon=True,
            ).start()  # fmt: skip
            os.environ["MARKETPLACE_ANALYZE_AT_START"] = "false"
            get_settings.cache_clear()
    if workers > 1 and not os.environ.get(MULTIPROC_ENV):
        # Each worker counts in its own files; /metrics, whichever worker answers, sums them.
        os.environ[MULTIPROC_ENV] = str(settings.data_dir / "metrics")
    if os.environ.get(MULTIPROC_ENV):
        prepare_multiprocess_metrics(Path(os.environ[MULTIPROC_ENV]))
    _log_where(settings, host, port, workers)
    inspector_child = start_child(settings)  # untrusted code runs in its own process
    try:
        uvicorn.run(
            "marketplace.app:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            proxy_headers=proxy_headers,
            forwarded_allow_ips=forwarded_allow_ips,
            # The app writes one structured line per request itself.
            access_log=False,
            log_config=log_config,
            log_level=settings.log_level.lower(),
        )
    finally:
        stop_child(inspector_child)


ANALYZE_THREAD = "marketplace-analyze"


def listen_address(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


# A server bound to every interface is reached from this machine's browser at loopback.
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104 (read, not bound)


def console_address(host: str, port: int) -> str:
    """Where a browser on this machine finds the reviewer console."""
    return f"{listen_address(_WILDCARDS.get(host, host), port)}/console"


def database_for_display(url: str) -> str:
    """The database URL with its password (if any) replaced by ***."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(unparsable URL)"  # never echo what might hold a password


def _log_where(settings: Settings, host: str, port: int, workers: int) -> None:
    """One line saying where the service listens and where its data is (the first thing
    an operator looks for), in the same format as every other line."""
    import structlog

    from marketplace.observability import configure_logging

    configure_logging(json_logs=settings.log_json, level=settings.log_level)
    log = structlog.get_logger()
    log.info(
        "serving",
        logger="marketplace.serve",
        address=listen_address(host, port),
        database=database_for_display(settings.database_url),
        data_dir=str(settings.data_dir.resolve()),
        workers=workers,
    )
    console = console_address(host, port)
    # A sentence, like uvicorn's "Uvicorn running on ...": the address a person looks for.
    log.info(f"Reviewer console at {console}", logger="marketplace.serve", console=console)


@db_app.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
) -> None:
    """Apply Alembic migrations to the configured database."""
    from marketplace.config import get_settings
    from marketplace.migrate import upgrade_and_backfill

    appended = upgrade_and_backfill(get_settings(), revision)
    typer.echo(f"database upgraded to {revision}")
    if appended:
        typer.echo(f"transparency log: {appended} past decisions and keys appended")


@user_app.command("create")
def user_create(
    email: Annotated[str, typer.Option(help="E-mail address.")],
    password: Annotated[str, typer.Option(help="Password (8-128 characters).")],
    name: Annotated[str, typer.Option(help="Display name.")],
    role: Annotated[Role, typer.Option(help="Role of the account.")] = Role.USER,
    verified: Annotated[
        bool, typer.Option("--verified", help="Mark a developer's identity verified.")
    ] = False,
) -> None:
    """Create an account (the only way to make the first SUPER_ADMIN)."""
    from marketplace.config import get_settings
    from marketplace.migrate import upgrade

    problems = _account_problems(email, password, name)
    if problems:
        # Never pydantic's own text: it quotes every input, the password included.
        for problem in problems:
            typer.secho(f"error: {problem}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)
    settings = get_settings()
    if settings.is_sqlite:
        upgrade(settings.database_url)
    try:
        user_id = asyncio.run(_create_user(email, password, name, role, verified))
    except Exception as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"created {role.value} {email} ({user_id})")


def _account_problems(email: str, password: str, name: str) -> list[str]:
    """What the service's registration rules refuse, one line per option, without values."""
    from pydantic import ValidationError

    from marketplace.accounts.schemas import RegisterIn

    try:
        RegisterIn.model_validate({"email": email, "password": password, "name": name})
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_input=False, include_url=False):
            field = str(error["loc"][0]) if error["loc"] else "value"
            problems.append(f"--{field}: {_plain(error)}")
        return problems
    return []


def _plain(error: Any) -> str:
    limits = error.get("ctx") or {}
    if error["type"] == "string_too_short":
        return f"must be at least {limits.get('min_length')} characters"
    if error["type"] == "string_too_long":
        return f"must be at most {limits.get('max_length')} characters"
    if error["type"] == "too_short":
        return "must not be empty"
    return str(error["msg"]).removeprefix("Value error, ")


async def _create_user(email: str, password: str, name: str, role: Role, verified: bool) -> str:
    from datetime import UTC, datetime

    from marketplace.accounts import service
    from marketplace.config import get_settings
    from marketplace.db import make_engine, make_sessionmaker
    from marketplace.models import DeveloperProfile, IdentityStatus

    settings = get_settings()
    engine = make_engine(settings.database_url, pool_size=0)
    try:
        async with make_sessionmaker(engine, write=True)() as session:
            user = await service.create_user(
                session, email=email, password=password, name=name, role=role
            )
            if verified:
                profile = await session.get(DeveloperProfile, user.id)
                if profile is None:
                    raise ValueError("--verified needs a role of DEVELOPER or above")
                profile.identity_status = IdentityStatus.VERIFIED
                profile.reviewed_at = datetime.now(UTC)
            await session.commit()
            return user.id
    finally:
        await engine.dispose()


@storage_app.command("gc")
def storage_gc(
    min_age: Annotated[
        int, typer.Option(help="Keep blobs younger than this many seconds (uploads in flight).")
    ] = 3600,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List, delete nothing.")] = False,
) -> None:
    """Remove blobs that no version or scenario references any more, and the temporary
    files of uploads that can no longer finish (writer gone, or older than --min-age)."""
    removed = asyncio.run(_storage_gc(min_age, dry_run))
    verb = "would remove" if dry_run else "removed"
    typer.echo(f"{verb} {len(removed)} blob(s)")
    for key in removed:
        typer.echo(f"  {key}")
    if not dry_run:
        leftovers = _remove_abandoned_uploads(min_age)
        typer.echo(f"removed {len(leftovers)} abandoned upload file(s)")
        for path in leftovers:
            typer.echo(f"  {path.name}")


def _remove_abandoned_uploads(min_age: int) -> list[Path]:
    from marketplace.config import get_settings
    from marketplace.kit.tempfiles import remove_abandoned
    from marketplace.publishing.uploads import upload_dir

    return remove_abandoned(upload_dir(get_settings()), older_than_seconds=min_age)


async def _storage_gc(min_age: int, dry_run: bool) -> list[str]:
    from marketplace.config import get_settings
    from marketplace.db import make_engine, make_sessionmaker
    from marketplace.publishing.blobs import referenced_blob_keys
    from marketplace.storage.factory import make_blob_store
    from marketplace.storage.gc import collect_garbage

    settings = get_settings()
    engine = make_engine(settings.database_url, pool_size=0)
    store = make_blob_store(settings)
    try:
        async with make_sessionmaker(engine)() as session:
            # Read references just before collecting; young blobs are kept regardless.
            referenced = await referenced_blob_keys(session)
        return await collect_garbage(store, referenced, min_age_seconds=min_age, dry_run=dry_run)
    finally:
        await store.aclose()
        await engine.dispose()
