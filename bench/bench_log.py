"""Transparency log benchmark (issue 27): a decision's added cost, proofs and checkpoints at
1,000,000 entries, against baselines measured in the same run on the same database.

For each database (SQLite in a temporary data folder, the embedded default; PostgreSQL in a
fresh database on the server of --postgres-url, dropped afterwards, skipped when
unreachable), in this process, on the real app (`create_app`) and its sessions:

* `marketplace.migrate.upgrade`, then the fill: the keyring's key-add entry and 999,999
  decisions (approvals, one takedown in 50) through `transparency.log.append_many`, one
  transaction and one locked head per batch of --batch entries: the real append code, which
  computes and stores the real nodes. Then every entry is read back through
  `proofs.entries` and `marketplace_rules.merkle.root_of` over their leaf hashes must equal
  the head's root, or the run stops: the bench does not measure a broken tree. On
  PostgreSQL, VACUUM ANALYZE of the log's tables (autovacuum's work after a bulk load);
  the app's start then runs as `marketplace serve`'s (SQLite's ANALYZE, the backfill check);
* proofs at that tree size, for random indexes (inclusion) and random first sizes
  (consistency): `proofs.inclusion_proof` / `consistency_proof`, each in a read session of
  its own as a request has, and the same through the HTTP endpoints (httpx ASGITransport on
  the app, no network); every proof is verified (`verify_inclusion`, `verify_consistency`
  against roots computed from the entries), outside the timing. Baselines: a primary-key
  read of one entry in a session of its own, and GET /healthz through the same app;
* checkpoints: the head read, the root and an Ed25519 signature (a fresh `CheckpointSigner`
  each time, so it really signs), the cached path (one signer: the tree has not moved), and
  GET /api/v1/log/checkpoint;
* a decision's added cost: the admin review approval as `POST .../versions/{id}/review`
  runs it (`locked_version_with_item`, then `review.decide`: item and version locked,
  version approved and made current, release record signed, audit record, commit), each
  approving a pending version of its own plugin; with the log's append and without it
  (`log_approval` replaced by a stub returning -1: the same transaction, minus the log),
  interleaved pair by pair, the order alternating. The append's own time inside the
  transaction (`log_approval`, timed in place) is reported too. Afterwards, the log at its
  final size must still prove consistent with the filled tree.

Every timed operation runs alone and in rounds that shuffle the kinds, so a busier moment of
the machine slows each kind alike. Prints medians and p90 per database with PASS/FAIL per
target, and saves the figures as JSON in bench/results/.

    make bench-log                        # or: .venv/bin/python bench/bench_log.py
    python bench/bench_log.py --entries 100000 --databases sqlite   # a quick look

Exit status: 0 when every target holds, 1 when one does not, 2 when the run failed (or the
filled tree did not check), 130 on Ctrl-C. Temporary folders and databases are removed in
every case.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import secrets
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
from common import RESULTS, machine
from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.app import create_app
from marketplace.config import Settings
from marketplace.errors import AppError
from marketplace.migrate import upgrade
from marketplace.models import LogEntry, Plugin, PluginVersion, ReviewStatus, Role, User
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing import releases, review
from marketplace.publishing.log import log_approval
from marketplace.publishing.lookup import locked_version_with_item
from marketplace.transparency import proofs
from marketplace.transparency.checkpoint import CheckpointSigner, checkpoint_body, log_origin
from marketplace.transparency.log import (
    append_key_changes,
    append_many,
    iso,
    locked_head,
)
from marketplace.trust.keyring import Keyring, verify
from marketplace_rules.canonical import b64decode
from marketplace_rules.merkle import (
    HASH_SIZE,
    CompactRange,
    leaf_hash,
    root_of,
    verify_consistency,
    verify_inclusion,
)

PG_ADMIN_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"
PG_URL_VARIABLES = ("MARKETPLACE_TEST_POSTGRES_URL", "MARKETPLACE_TEST_DATABASE_URL")

DEFAULT_ENTRIES = 1_000_000
DEFAULT_BATCH = 20_000
DEFAULT_DECISIONS = 100  # per arm (with the log, without)
DEFAULT_SAMPLES = 300  # per kind of proof, checkpoint and baseline
WARMUP = 5
READ_CHUNK = 50_000
TAKEDOWN_EVERY = 50
PUBLIC_URL = "https://marketplace.example.com"
NO_PASSWORD = "!"  # noqa: S105 - accounts that never log in (no hash matches it)

# Targets (issue 27): at 1,000,000 entries.
TARGET_APPEND_MS = 1.0  # added to a decision: median with the log minus median without
# An inclusion or consistency proof, median (as issue 14 judged its reads), through the code
# path and through the endpoint; p90 is reported beside it.
TARGET_PROOF_MS = 5.0

# ---------------------------------------------------------------------------------------
# Figures


def percentile(values: list[float], q: float) -> float:
    """Nearest rank: the smallest value with at least q of the values at or below it."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 1))  # ceil(n * q), at least 1
    return ordered[int(rank) - 1]


@dataclass
class Timing:
    samples_ms: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p90(self) -> float:
        return percentile(self.samples_ms, 0.9)

    def summary(self) -> dict[str, float]:
        return {"n": len(self.samples_ms), "medianMs": self.median, "p90Ms": self.p90}


@dataclass
class ProofSizes:
    hashes: list[int] = field(default_factory=list)
    body_bytes: list[int] = field(default_factory=list)  # the endpoint's JSON answer

    def summary(self) -> dict[str, Any]:
        hashes = sorted(self.hashes)
        return {
            "hashesMin": hashes[0],
            "hashesMedian": statistics.median(hashes),
            "hashesMax": hashes[-1],
            "bytesMedian": statistics.median(hashes) * HASH_SIZE,
            "bytesMax": hashes[-1] * HASH_SIZE,
            "httpBodyBytesMedian": statistics.median(self.body_bytes) if self.body_bytes else 0,
        }


@dataclass
class DatabaseResult:
    database: str
    label: str = ""
    skipped: str = ""
    entries: int = 0
    fill_seconds: float = 0.0
    check_seconds: float = 0.0
    log_bytes: int = 0
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    sizes: dict[str, dict[str, Any]] = field(default_factory=dict)
    decision: dict[str, float] = field(default_factory=dict)
    final_size: int = 0
    load_average: str = ""  # at the start of this database's run, and at its end
    verdicts: dict[str, bool] = field(default_factory=dict)


def ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000


# ---------------------------------------------------------------------------------------
# Databases


def postgres_admin_url(option: str | None) -> str:
    """--postgres-url, else the tests' variables (`make test-postgres`), else the default."""
    url = option or next((os.environ[v] for v in PG_URL_VARIABLES if os.environ.get(v)), None)
    return url or PG_ADMIN_DEFAULT


def shown(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


async def _pg_admin(admin_url: str, sql: str) -> None:
    import asyncpg  # type: ignore[import-untyped]

    base = make_url(admin_url)
    conn = await asyncpg.connect(
        host=base.host,
        port=base.port or 5432,
        user=base.username,
        password=base.password,
        database=base.database,
        timeout=5,
    )
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def postgres_reachable(admin_url: str) -> str | None:
    """None when the server answers; otherwise why not."""
    try:
        asyncio.run(_pg_admin(admin_url, "SELECT 1"))
    except Exception as exc:  # any failure to connect means: skip PostgreSQL
        return f"{type(exc).__name__}: {exc}"
    return None


@contextlib.contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A fresh UTF-8 database (as the tests make theirs); its asyncpg URL; dropped on exit."""
    name = f"bench_log_{secrets.token_hex(4)}"
    asyncio.run(
        _pg_admin(
            admin_url,
            f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' "
            "LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'",
        )
    )
    try:
        url = make_url(admin_url).set(drivername="postgresql+asyncpg", database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        with contextlib.suppress(Exception):
            asyncio.run(_pg_admin(admin_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


def settings_for(data_dir: Path, database_url: str) -> Settings:
    return Settings(
        _env_file=None,  # pydantic-settings' own argument: no .env file read
        data_dir=data_dir,
        database_url=database_url,
        public_url=PUBLIC_URL,
        rate_limit_enabled=False,
        inspection_workers=0,
        search_index=False,
        log_level="WARNING",
    )


# ---------------------------------------------------------------------------------------
# The fill


def fill_entry(number: int, key_id: str, start: datetime) -> tuple[str, str, dict[str, Any]]:
    """Decision `number` of the fill: an approval, or (one in TAKEDOWN_EVERY) the takedown of
    the version approved just before it; fields as `publishing.log` writes them."""
    approved = number - 1 if number % TAKEDOWN_EVERY == TAKEDOWN_EVERY - 1 else number
    subject = str(uuid.UUID(int=approved + 1, version=4))
    fields: dict[str, Any] = {
        "kind": "plugin",
        "key": f"fill-plugin-{approved:07d}",
        "version": "1.0.0",
        "distribution": "tarball",
        "sha256": hashlib.sha256(subject.encode()).hexdigest(),
        "size": 4096 + approved % 100_000,
        "at": iso(start + timedelta(seconds=number)),
    }
    if approved == number:
        return "approve", subject, fields | {"keyId": key_id}
    return "takedown", subject, fields


async def fill(
    sessions: async_sessionmaker[AsyncSession], keyring: Keyring, entries: int, batch: int
) -> None:
    """`entries` entries through append_many: the key-add first, then decisions, one
    transaction and one locked head per batch."""
    key_id = keyring.signing_key().key_id
    start = datetime(2026, 1, 1, tzinfo=UTC)
    number = 0
    size = 0
    reported = 0
    while size < entries:
        async with sessions.begin() as session:
            head = await locked_head(session)
            if head.size == 0:
                await append_key_changes(session, keyring.keys(), head)
            wanted = min(batch, entries - head.size)
            chunk = [fill_entry(number + i, key_id, start) for i in range(wanted)]
            await append_many(session, chunk, head)
            number += wanted
            size = head.size
        if size - reported >= entries // 10 or size == entries:
            reported = size
            print(f"  {size:>10,} entries", flush=True)


@dataclass
class TreeFacts:
    """What the fill must give, from its entries alone: roots at chosen sizes, leaf hashes
    at chosen indexes."""

    size: int
    root: bytes
    roots: dict[int, bytes]
    leaves: dict[int, bytes]


async def check_tree(
    sessions: async_sessionmaker[AsyncSession], expected: int, sizes: set[int], indexes: set[int]
) -> TreeFacts:
    """Every entry read back; root_of over their leaf hashes must be the head's root."""
    async with sessions() as session:
        head = await proofs.current_tree(session)
    if head.size != expected:
        raise RuntimeError(f"the head says {head.size:,} entries, {expected:,} were appended")
    leaves: dict[int, bytes] = {}
    roots: dict[int, bytes] = {}
    hashes: list[bytes] = []
    compact = CompactRange()
    for start in range(0, expected, READ_CHUNK):
        end = min(start + READ_CHUNK, expected)
        async with sessions() as session:
            rows = await proofs.entries(session, start, end)
        if [index for index, _ in rows] != list(range(start, end)):
            raise RuntimeError(f"entries {start}-{end} are not consecutive")
        for index, leaf in rows:
            hashed = leaf_hash(leaf)
            hashes.append(hashed)
            compact.append(hashed)
            if index in indexes:
                leaves[index] = hashed
            if compact.size in sizes:
                roots[compact.size] = compact.root()
    root = root_of(hashes)
    if root != head.root() or compact.root() != root:
        raise RuntimeError("the head's root is not the root of the entries appended")
    return TreeFacts(expected, root, roots, leaves)


async def server_version(sessions: async_sessionmaker[AsyncSession], database: str) -> str:
    async with sessions() as session:
        if database == "postgres":
            return f"PostgreSQL {await session.scalar(text('SHOW server_version'))}"
        return f"SQLite {await session.scalar(text('SELECT sqlite_version()'))}"


async def log_bytes(sessions: async_sessionmaker[AsyncSession], database: str) -> int:
    """The log's tables and their indexes on disk (0 when SQLite lacks its dbstat table)."""
    async with sessions() as session:
        if database == "postgres":
            total = await session.scalar(
                text(
                    "SELECT pg_total_relation_size('log_entries') "
                    "+ pg_total_relation_size('log_nodes')"
                )
            )
        else:
            try:
                total = await session.scalar(
                    text(
                        "SELECT sum(pgsize) FROM dbstat WHERE name IN (SELECT name FROM "
                        "sqlite_master WHERE tbl_name IN ('log_entries', 'log_nodes'))"
                    )
                )
            except SQLAlchemyError:  # a SQLite built without SQLITE_ENABLE_DBSTAT_VTAB
                total = 0
    return int(total or 0)


# ---------------------------------------------------------------------------------------
# Decisions


@dataclass
class Decisions:
    admin_id: str
    version_ids: list[str]


async def seed_decisions(sessions: async_sessionmaker[AsyncSession], count: int) -> Decisions:
    """An admin, a developer, and `count` listed plugins with one approved version and one
    pending version each (an update waiting for review)."""
    now = datetime.now(UTC)
    async with sessions.begin() as session:
        admin = User(
            email="bench-admin@example.com",
            password_hash=NO_PASSWORD,
            name="Bench Admin",
            role=Role.ADMIN.value,
        )
        owner = User(
            email="bench-dev@example.com",
            password_hash=NO_PASSWORD,
            name="Bench Dev",
            role=Role.DEVELOPER.value,
        )
        session.add_all([admin, owner])
        await session.flush()
        plugins = []
        for number in range(count):
            key = f"decision-{number:05d}"
            plugins.append(
                Plugin(
                    plugin_key=key,
                    name=f"Decision {number}",
                    name_zh="插件",
                    description="A plugin the bench approves an update of",
                    description_zh="基准测试的插件",
                    type="mcp",
                    category="productivity",
                    is_free=True,
                    price=Decimal("0"),
                    validity_days=None,
                    tags=[],
                    featured=False,
                    enabled=True,
                    review_status=ReviewStatus.APPROVED.value,
                    latest_version="1.0.0",
                    download_count=0,
                    rating_sum=0,
                    rating_count=0,
                    owner_id=owner.id,
                    created_at=now,
                    updated_at=now,
                )
            )
        session.add_all(plugins)
        await session.flush()
        pending = []
        for plugin in plugins:
            for version, status in (("1.0.0", ReviewStatus.APPROVED), ("1.1.0", None)):
                row = PluginVersion(
                    plugin_id=plugin.id,
                    version=version,
                    changelog=None,
                    manifest={
                        "id": plugin.plugin_key,
                        "version": version,
                        "category": "productivity",
                        "main": "",
                        "mcp": {"command": "npx", "args": [plugin.plugin_key]},
                    },
                    distribution="config_only",
                    sha256=None,
                    size=None,
                    blob_key=None,
                    is_latest=status is not None,
                    review_status=(status or ReviewStatus.PENDING).value,
                    created_at=now,
                )
                session.add(row)
                if status is None:
                    pending.append(row)
        await session.flush()
        return Decisions(admin.id, [row.id for row in pending])


async def approve(app: Any, admin_id: str, version_id: str) -> None:
    """The admin review endpoint's transaction, without HTTP around it."""
    async with app.state.write_sessionmaker() as session:
        item, version = await locked_version_with_item(session, PLUGINS, version_id)
        await review.decide(
            session,
            PLUGINS,
            item,
            version,
            approved=True,
            reviewer_id=admin_id,
            note=None,
            keyring=app.state.keyring,
        )
        await session.commit()


@contextlib.contextmanager
def log_append(appending: bool, spent: Timing) -> Iterator[None]:
    """The approval's log append as it is (timed into `spent`), or a stub that appends
    nothing: the same decision transaction without the log."""
    real = log_approval

    async def timed(
        session: AsyncSession, keyring: Keyring, version_id: str, release: dict[str, Any]
    ) -> int:
        started = time.perf_counter()
        index = await real(session, keyring, version_id, release)
        spent.samples_ms.append(ms_since(started))
        return index

    async def without(
        session: AsyncSession, keyring: Keyring, version_id: str, release: dict[str, Any]
    ) -> int:
        return -1

    with mock.patch.object(releases, "log_approval", timed if appending else without):
        yield


async def measure_decisions(
    app: Any, decisions: Decisions, runs: int, result: DatabaseResult
) -> None:
    ids = iter(decisions.version_ids)
    arms = {True: Timing(), False: Timing()}
    spent = Timing()
    for _ in range(WARMUP):
        for appending in (True, False):
            with log_append(appending, Timing()):
                await approve(app, decisions.admin_id, next(ids))
    for run in range(runs):
        order = (True, False) if run % 2 == 0 else (False, True)
        for appending in order:
            with log_append(appending, spent):
                version_id = next(ids)
                started = time.perf_counter()
                await approve(app, decisions.admin_id, version_id)
                arms[appending].samples_ms.append(ms_since(started))
    with_log, without_log = arms[True], arms[False]
    result.timings["decision with the log"] = with_log.summary()
    result.timings["decision without the log"] = without_log.summary()
    result.timings["log_approval in the transaction"] = spent.summary()
    added = with_log.median - without_log.median
    result.decision = {
        "addedMedianMs": added,
        "addedP90Ms": with_log.p90 - without_log.p90,
        "ratioToDecision": added / without_log.median,
        "appendMedianMs": spent.median,
        "appendP90Ms": spent.p90,
    }
    result.verdicts["append"] = added <= TARGET_APPEND_MS


# ---------------------------------------------------------------------------------------
# Proofs and checkpoints


async def measure_reads(
    app: Any,
    client: httpx.AsyncClient,
    facts: TreeFacts,
    inclusion_at: list[int],
    consistency_from: list[int],
    result: DatabaseResult,
) -> None:
    """One round per sample: every kind once, in a shuffled order; each answer verified."""
    sessions: async_sessionmaker[AsyncSession] = app.state.sessionmaker
    keyring: Keyring = app.state.keyring
    origin = log_origin(app.state.settings.public_url)
    size = facts.size
    timings: dict[str, Timing] = {}
    proof_sizes = {"inclusion": ProofSizes(), "consistency": ProofSizes()}
    cached = CheckpointSigner()
    public_keys = {key.key_id: key.public_key for key in keyring.keys()}

    def check(ok: bool, what: str) -> None:
        if not ok:
            raise RuntimeError(f"{what} did not verify")

    def signed_ok(checkpoint: dict[str, Any]) -> bool:
        tree_size, root = checkpoint["treeSize"], checkpoint["rootHash"]
        body = checkpoint_body(checkpoint["origin"], tree_size, root)
        signature = b64decode(checkpoint["signature"])
        return (
            tree_size == size
            and b64decode(root) == facts.root
            and verify(public_keys[checkpoint["keyId"]], body, signature)
        )

    async def point_read(index: int) -> None:
        async with sessions() as session:
            leaf = await session.scalar(select(LogEntry.leaf).where(LogEntry.log_index == index))
        check(leaf is not None, "the point read")

    async def inclusion(index: int) -> Callable[[], None]:
        async with sessions() as session:
            path = await proofs.inclusion_proof(session, index, size)

        def verified() -> None:
            proof_sizes["inclusion"].hashes.append(len(path))
            check(
                verify_inclusion(facts.leaves[index], index, size, path, facts.root),
                f"inclusion proof of {index}",
            )

        return verified

    async def consistency(first: int) -> Callable[[], None]:
        async with sessions() as session:
            path = await proofs.consistency_proof(session, first, size)

        def verified() -> None:
            proof_sizes["consistency"].hashes.append(len(path))
            check(
                verify_consistency(first, size, facts.roots[first], facts.root, path),
                f"consistency proof from {first}",
            )

        return verified

    async def checkpoint(signer: CheckpointSigner | None) -> Callable[[], None]:
        """`signer` None: a fresh one, which signs."""
        async with sessions() as session:
            tree = await proofs.current_tree(session)
        made = await (signer or CheckpointSigner()).current(keyring, origin, tree)

        def verified() -> None:
            shape = {
                "origin": made.origin,
                "treeSize": made.tree_size,
                "rootHash": made.root_hash,
                "keyId": made.key_id,
                "signature": made.signature,
            }
            check(signed_ok(shape), "the checkpoint")

        return verified

    async def get(path: str) -> httpx.Response:
        response = await client.get(path)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path} answered {response.status_code}: {response.text}")
        return response

    async def http_inclusion(index: int) -> Callable[[], None]:
        response = await get(f"/api/v1/log/proof/inclusion?index={index}&treeSize={size}")

        def verified() -> None:
            path = [b64decode(h) for h in response.json()["data"]["hashes"]]
            proof_sizes["inclusion"].body_bytes.append(len(response.content))
            check(
                verify_inclusion(facts.leaves[index], index, size, path, facts.root),
                f"the endpoint's inclusion proof of {index}",
            )

        return verified

    async def http_consistency(first: int) -> Callable[[], None]:
        response = await get(f"/api/v1/log/proof/consistency?first={first}&second={size}")

        def verified() -> None:
            path = [b64decode(h) for h in response.json()["data"]["hashes"]]
            proof_sizes["consistency"].body_bytes.append(len(response.content))
            check(
                verify_consistency(first, size, facts.roots[first], facts.root, path),
                f"the endpoint's consistency proof from {first}",
            )

        return verified

    async def http_checkpoint() -> Callable[[], None]:
        response = await get("/api/v1/log/checkpoint")
        return lambda: check(signed_ok(response.json()["data"]), "the endpoint's checkpoint")

    async def healthz() -> None:
        await get("/healthz")

    rng = random.Random(size)
    rounds = list(zip(inclusion_at, consistency_from, strict=True))
    for number, (index, first) in enumerate(rounds):
        kinds: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("baseline: primary-key read", partial(point_read, index)),
            ("inclusion proof", partial(inclusion, index)),
            ("consistency proof", partial(consistency, first)),
            ("checkpoint, signed", partial(checkpoint, None)),
            ("checkpoint, cached", partial(checkpoint, cached)),
            ("baseline: GET /healthz", healthz),
            ("GET proof/inclusion", partial(http_inclusion, index)),
            ("GET proof/consistency", partial(http_consistency, first)),
            ("GET checkpoint", http_checkpoint),
        ]
        rng.shuffle(kinds)
        for name, run in kinds:
            started = time.perf_counter()
            after = await run()
            took = ms_since(started)
            if number >= WARMUP:
                timings.setdefault(name, Timing()).samples_ms.append(took)
            if after is not None:
                after()
    for name, timing in timings.items():
        result.timings[name] = timing.summary()
    for name, sizes in proof_sizes.items():
        result.sizes[name] = sizes.summary()
    result.verdicts["proofs"] = all(
        timings[name].median <= TARGET_PROOF_MS for name in ("inclusion proof", "consistency proof")
    )
    result.verdicts["proof endpoints"] = all(
        timings[name].median <= TARGET_PROOF_MS
        for name in ("GET proof/inclusion", "GET proof/consistency")
    )


# ---------------------------------------------------------------------------------------
# One database


@contextlib.asynccontextmanager
async def started(app: Any) -> AsyncIterator[None]:
    """The app's start and stop, as `serve` runs them (SQLite's ANALYZE, the backfill)."""
    async with app.router.lifespan_context(app):
        yield


async def vacuum_analyze(app: Any) -> None:
    async with app.state.engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.exec_driver_sql("VACUUM ANALYZE log_entries, log_nodes, log_head")


async def run_async(
    database: str, database_url: str, data_dir: Path, options: Any, result: DatabaseResult
) -> None:
    app = create_app(settings_for(data_dir, database_url))
    keyring: Keyring = app.state.keyring
    writes: async_sessionmaker[AsyncSession] = app.state.write_sessionmaker
    entries = options.entries
    samples = options.samples + WARMUP
    rng = random.Random(entries)
    inclusion_at = [rng.randrange(entries) for _ in range(samples)]
    consistency_from = [rng.randrange(1, entries) for _ in range(samples)]
    try:
        print(f"  filling {entries:,} entries in batches of {options.batch:,} ...", flush=True)
        begun = time.perf_counter()
        await fill(writes, keyring, entries, options.batch)
        result.fill_seconds = time.perf_counter() - begun
        result.entries = entries
        print(
            f"  filled in {result.fill_seconds:.1f} s "
            f"({entries / result.fill_seconds:,.0f} entries/s)",
            flush=True,
        )
        begun = time.perf_counter()
        facts = await check_tree(writes, entries, set(consistency_from), set(inclusion_at))
        result.check_seconds = time.perf_counter() - begun
        print(
            f"  checked: the head's root is root_of the {entries:,} entries' leaf hashes "
            f"({result.check_seconds:.1f} s)",
            flush=True,
        )
        if database == "postgres":
            await vacuum_analyze(app)
        result.log_bytes = await log_bytes(writes, database)
        result.label += f" ({await server_version(writes, database)})"
        decisions = await seed_decisions(writes, 2 * (options.decisions + WARMUP))
        async with started(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
                print(f"  proofs and checkpoints: {options.samples} rounds ...", flush=True)
                await measure_reads(app, client, facts, inclusion_at, consistency_from, result)
            print(f"  decisions: {options.decisions} with the log, as many without ...", flush=True)
            await measure_decisions(app, decisions, options.decisions, result)
            await check_grown(app, facts, result)
    finally:
        await app.state.engine.dispose()


async def check_grown(app: Any, facts: TreeFacts, result: DatabaseResult) -> None:
    """The log after the decisions still extends the filled tree, and its last entry (the
    last approval) is in it."""
    async with app.state.sessionmaker() as session:
        tree = await proofs.current_tree(session)
        path = await proofs.consistency_proof(session, facts.size, tree.size)
        [(last, leaf)] = await proofs.entries(session, tree.size - 1, tree.size)
        inclusion = await proofs.inclusion_proof(session, last, tree.size)
        approvals = await session.scalar(
            select(func.count()).select_from(LogEntry).where(LogEntry.log_index >= facts.size)
        )
    if not verify_consistency(facts.size, tree.size, facts.root, tree.root(), path):
        raise RuntimeError("the log after the decisions is not consistent with the filled tree")
    if not verify_inclusion(leaf_hash(leaf), last, tree.size, inclusion, tree.root()):
        raise RuntimeError("the last approval is not proved included")
    if approvals != tree.size - facts.size:
        raise RuntimeError("the decisions' entries do not match the head's size")
    result.final_size = tree.size


def run_database(database: str, work: Path, options: Any) -> DatabaseResult:
    result = DatabaseResult(database)
    with contextlib.ExitStack() as stack:
        data_dir = work / database
        if database == "postgres":
            admin = options.postgres_url
            why = postgres_reachable(admin)
            if why is not None:
                result.skipped = f"PostgreSQL unreachable at {shown(admin)} ({why})"
                print(f"skipping postgres: {result.skipped}", flush=True)
                return result
            database_url = stack.enter_context(postgres_database(admin))
            result.label = f"PostgreSQL, a temporary database on {shown(admin)}"
        else:
            database_url = f"sqlite+aiosqlite:///{data_dir / 'marketplace.db'}"
            result.label = "SQLite (embedded default), a temporary data folder"
        print(f"{database}: {result.label}; migrating ...", flush=True)
        started_load = load_average()
        upgrade(database_url)
        asyncio.run(run_async(database, database_url, data_dir, options, result))
        result.load_average = f"{started_load} at the start, {load_average()} at the end"
    return result


def load_average() -> str:
    with contextlib.suppress(OSError), open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])
    return "unknown"


# ---------------------------------------------------------------------------------------
# Report


def verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def table(result: DatabaseResult) -> str:
    if result.skipped:
        return f"{result.database}: skipped: {result.skipped}"
    t = result.timings
    d = result.decision
    lines = [
        f"{result.database}: {result.label}",
        f"log: {result.entries:,} entries filled in {result.fill_seconds:.1f} s "
        f"({result.entries / result.fill_seconds:,.0f}/s), checked in "
        f"{result.check_seconds:.1f} s; entries and nodes take {result.log_bytes / 2**20:,.0f} "
        f"MiB; {result.final_size:,} entries after the decisions",
        f"load average: {result.load_average}",
        "",
        "| measure | median ms | p90 ms | n | x baseline (median) | target |",
        "|---|---:|---:|---:|---:|---|",
    ]

    def row(name: str, baseline: str | None, target: str) -> None:
        timing = t[name]
        ratio = f"{timing['medianMs'] / t[baseline]['medianMs']:.1f}" if baseline else "-"
        lines.append(
            f"| {name} | {timing['medianMs']:.3f} | {timing['p90Ms']:.3f} | {timing['n']:.0f} | "
            f"{ratio} | {target} |"
        )

    proof_ok = {n: t[n]["medianMs"] <= TARGET_PROOF_MS for n in t}
    row("baseline: primary-key read", None, "reference")
    for name in ("inclusion proof", "consistency proof"):
        row(
            name,
            "baseline: primary-key read",
            f"median <= {TARGET_PROOF_MS:g} {verdict(proof_ok[name])}",
        )
    row("checkpoint, signed", "baseline: primary-key read", "reported")
    row("checkpoint, cached", "baseline: primary-key read", "reported")
    row("baseline: GET /healthz", None, "reference")
    for name in ("GET proof/inclusion", "GET proof/consistency"):
        row(
            name,
            "baseline: GET /healthz",
            f"median <= {TARGET_PROOF_MS:g} {verdict(proof_ok[name])}",
        )
    row("GET checkpoint", "baseline: GET /healthz", "reported")
    row("decision without the log", None, "reference")
    added_ok = verdict(result.verdicts["append"])
    row(
        "decision with the log",
        "decision without the log",
        f"added <= {TARGET_APPEND_MS:g} {added_ok}",
    )
    row("log_approval in the transaction", None, "reported")
    lines.append("")
    lines.append(
        f"added to a decision by the append: {d['addedMedianMs']:.3f} ms at the median "
        f"({100 * d['ratioToDecision']:.1f} % of the decision's own "
        f"{t['decision without the log']['medianMs']:.2f} ms), {d['addedP90Ms']:.3f} ms at p90; "
        f"log_approval itself {d['appendMedianMs']:.3f} ms (p90 {d['appendP90Ms']:.3f}); "
        f"target <= {TARGET_APPEND_MS:g} ms: {verdict(result.verdicts['append'])}"
    )
    for name, sizes in result.sizes.items():
        lines.append(
            f"{name} proof size: {sizes['hashesMin']}-{sizes['hashesMax']} hashes "
            f"(median {sizes['hashesMedian']:g}: {sizes['bytesMedian']:g} bytes; at most "
            f"{sizes['bytesMax']} bytes); the endpoint's JSON answer "
            f"{sizes['httpBodyBytesMedian']:g} bytes (median)"
        )
    failed = [name for name, ok in result.verdicts.items() if not ok]
    suffix = f" (failed: {', '.join(failed)})" if failed else ""
    lines.append(f"overall: {verdict(not failed)}{suffix}")
    return "\n".join(lines)


def save(payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    text_ = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    stamp = datetime.fromisoformat(payload["started_at"]).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"log-{stamp}.json"
    path.write_text(text_)
    (RESULTS / "log-latest.json").write_text(text_)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--entries",
        type=int,
        default=DEFAULT_ENTRIES,
        help="entries in the log before measuring (default 1000000)",
    )
    parser.add_argument(
        "--batch", type=int, default=DEFAULT_BATCH, help="entries per fill transaction"
    )
    parser.add_argument(
        "--decisions",
        type=int,
        default=DEFAULT_DECISIONS,
        help="approvals measured with the log, and as many without",
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=DEFAULT_SAMPLES,
        help="rounds of proofs, checkpoints and baselines",
    )
    parser.add_argument("--databases", default="sqlite,postgres", help="sqlite,postgres")
    parser.add_argument(
        "--postgres-url",
        default=None,
        help="a PostgreSQL server's admin URL where the bench creates and drops its database "
        f"(default: ${PG_URL_VARIABLES[0]}, ${PG_URL_VARIABLES[1]}, else {PG_ADMIN_DEFAULT})",
    )
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/")
    args = parser.parse_args(argv)
    databases = [d.strip() for d in args.databases.split(",") if d.strip()]
    if not databases or set(databases) - {"sqlite", "postgres"}:
        parser.error("--databases takes sqlite and/or postgres")
    if not 1000 <= args.entries <= 10_000_000 or not 1 <= args.batch <= 1_000_000:
        parser.error("--entries must be 1000-10000000 and --batch 1-1000000")
    if args.decisions < 5 or args.samples < 5:
        parser.error("--decisions and --samples must be at least 5")
    args.postgres_url = postgres_admin_url(args.postgres_url)

    facts = machine()
    print(
        f"python {facts['python']} on {facts['cpu'] or facts['platform']}, {facts['cpus']} "
        f"cpus, load {facts['load_average_at_start']} ({facts['git']})",
        flush=True,
    )
    payload: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": facts,
        "entries": args.entries,
        "batch": args.batch,
        "decisions": args.decisions,
        "samples": args.samples,
        "targets": {"appendMs": TARGET_APPEND_MS, "proofMedianMs": TARGET_PROOF_MS},
    }
    results: list[DatabaseResult] = []
    work = Path(tempfile.mkdtemp(prefix="bench-log-"))
    try:
        for database in databases:
            results.append(run_database(database, work, args))
    except (RuntimeError, OSError, httpx.HTTPError, SQLAlchemyError, AppError) as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # the temporary database is dropped by now
        print("interrupted; temporary files and databases removed", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    for result in results:
        print(table(result))
        print()
    payload["databases"] = [asdict(r) for r in results]
    if not args.no_save:
        print(f"figures saved to {save(payload)}")
    passed = all(all(r.verdicts.values()) for r in results if not r.skipped)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
