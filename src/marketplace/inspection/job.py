"""One inspection job, as an inspector runs it: claim the attempt, unpack the version into a
private folder, run the server in the sandbox (`runner`), keep the verdict (`verdict`).

The job never runs the plugin's code itself: the runner starts it in the sandbox, which
sees none of the data folder, database, keys or network. The private folder is removed
whatever happens.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import anyio
import structlog

from marketplace.config import Settings
from marketplace.db import DbTimeouts, make_engine, make_sessionmaker
from marketplace.inspection import ledger, verdict
from marketplace.inspection.report import Limits, RunReport, Target
from marketplace.kit.dbtypes import new_id
from marketplace.models import Distribution, PluginVersion
from marketplace.packages.archive import safe_extract
from marketplace.storage.base import BlobStore
from marketplace.storage.factory import make_blob_store
from marketplace_client.install import restore_inline

log = structlog.get_logger(__name__)

Runner = Callable[[Target, Limits, Path], Awaitable[RunReport]]


def db_timeouts(settings: Settings) -> DbTimeouts:
    """Every wait on the database bounded, as in the API (DESIGN invariant 9)."""
    return DbTimeouts(
        connect=settings.db_connect_timeout_seconds,
        statement=settings.db_statement_timeout_seconds,
        pool=settings.db_pool_timeout_seconds,
    )


def limits_of(settings: Settings) -> Limits:
    return Limits(
        seconds=settings.inspection_seconds,
        memory_bytes=settings.inspection_memory_mb * 1024 * 1024,
        processes=settings.inspection_processes,
    )


def lease_of(settings: Settings) -> timedelta:
    return timedelta(seconds=settings.inspection_seconds + settings.inspection_lease_margin_seconds)


def protected_paths(settings: Settings) -> tuple[Path, ...]:
    """The service's own paths (data folder, keys, a SQLite database, local blobs): the
    sandbox hides them and reports reading them."""
    paths = [settings.data_dir.resolve()]
    if settings.signing_keys_file is not None:
        paths.append(settings.signing_keys_file.resolve())
    database = settings.database_url
    if database.startswith("sqlite") and ":///" in database:
        paths.append(Path(database.split(":///", 1)[1].split("?", 1)[0]).resolve())
    if settings.storage_url.startswith("file://"):
        paths.append(Path(settings.storage_url.removeprefix("file://").split("?", 1)[0]).resolve())
    return tuple(dict.fromkeys(paths))


def required_config_keys(manifest: dict[str, object]) -> tuple[str, ...]:
    items = manifest.get("config")
    if not isinstance(items, list):
        return ()
    return tuple(
        str(item["key"])
        for item in items
        if isinstance(item, dict) and isinstance(item.get("key"), str) and item.get("required")
    )


async def _download(store: BlobStore, key: str, path: Path) -> None:
    async with await anyio.open_file(path, "wb") as out:
        async for chunk in store.iter_bytes(key):
            await out.write(chunk)


async def unpack(store: BlobStore, version: PluginVersion, folder: Path) -> Path:
    """The version's files in `folder`: the package unpacked, or the inline code restored."""
    if version.distribution == Distribution.TARBALL:
        if version.blob_key is None:
            raise ValueError("the version has no package")
        archive = folder.parent / "package.tar.gz"
        await _download(store, version.blob_key, archive)
        root = await anyio.to_thread.run_sync(safe_extract, archive, folder)
        archive.unlink()
        return root
    await anyio.Path(folder).mkdir()
    await anyio.to_thread.run_sync(restore_inline, folder, dict(version.manifest))
    return folder


async def run_job(settings: Settings, version_id: str, runner: Runner | None = None) -> None:
    """Run the version's inspection if this worker can claim an attempt (ledger)."""
    if runner is None:
        from marketplace.inspection.runner import run_inspection

        runner = run_inspection
    engine = make_engine(settings.database_url, pool_size=2, timeouts=db_timeouts(settings))
    sessions = make_sessionmaker(engine, write=True)
    store = make_blob_store(settings)
    try:
        token = new_id()
        if not await ledger.claim(sessions, version_id, token, lease_of(settings)):
            log.info("inspection not claimed", version_id=version_id)
            return
        async with sessions() as session:
            version = await session.get(PluginVersion, version_id)
        if version is None:
            return
        report = await _inspect(settings, store, version, runner)
        kept = await verdict.finish(sessions, version_id, token, report)
        log.info("inspection finished", version_id=version_id, status=report.status, kept=kept)
    finally:
        await store.aclose()
        await engine.dispose()


async def _inspect(
    settings: Settings, store: BlobStore, version: PluginVersion, runner: Runner
) -> RunReport:
    manifest = dict(version.manifest)
    with tempfile.TemporaryDirectory(prefix="marketplace-inspect-") as tmp:
        try:
            package = await unpack(store, version, Path(tmp) / "package")
        except Exception as exc:  # any failure to unpack fails the inspection
            return RunReport(
                status="failed", error=f"the package could not be unpacked: {exc}"[:500]
            )
        workdir = Path(tmp) / "work"
        workdir.mkdir()
        target = Target(
            package_dir=package,
            mcp=dict(manifest.get("mcp") or {}),
            required_config_keys=required_config_keys(manifest),
            protected_paths=protected_paths(settings),
        )
        return await runner(target, limits_of(settings), workdir)
