"""Public plugin page benchmark (issue 29): an uncached `GET /plugins/{pluginKey}` at
100,000 plugins, against the public API's uncached detail measured in the same run.

Target (issue 29's Done-when): an uncached public plugin page answers in at most 10 ms of
server time at 100,000 plugins.

* The catalogue is bench_browse's (same seed, same rows: approved, enabled plugins with
  one approved current version each, signed release records), in a temporary SQLite data
  folder, or kept and reused with --data-root (the folder `<root>/sqlite-<size>` is the one
  `bench_browse.py --data-root <root>` keeps, so both benchmarks share one seeded catalogue).
* What a public page shows beyond the API's detail is made real for the pages measured:
  each sampled plugin's current version (a tarball, as inspected versions are) gets a
  finished inspection whose report lists 8 tools with descriptions and input schemas, and
  every other sampled plugin belongs to an organization. These rows are added (or kept)
  before the service starts.
* `marketplace serve`, ONE process pinned to core 0 (taskset; rate limits off, log level
  WARNING, no inspection worker), and the bare FastAPI page (bench/bare_app.py) also on
  core 0; the client runs on core 1, one request at a time on kept-alive connections.
  The search index is built before anything is timed (the service builds it at start).
* Warm-up: WARMUP pages and details of plugins that are not measured (templates
  compiled, route and statement caches filled, the database's pages in memory).
* Measured, interleaved request by request, SAMPLES times: the page of a plugin never
  asked for before (cold: nothing cached applies to it), the API detail of another plugin
  never asked for before (the baseline), the bare app's smallest answer (`/healthz`: the
  client's, the HTTP stack's and FastAPI's own share), then the same page again (warm: from
  the page cache; context), and the bare 20-item page (bench_browse's reference; context).
  Every answer is checked (200, the page names its install command and its tools).
* Server time = round trip minus the median round trip of the bare app's `/healthz`. The
  update check's figures (docs/performance.md) subtract the bare 20-item page instead;
  that page costs the bare app a JSON encoding of 20 items (1-4 ms on this machine), time
  a real answer's server time would hide, so the smaller reference is the stricter one.
  Reported: median and p99 of each, the ratio page / API detail (server time), and
  PASS/FAIL of the page's median cold server time against 10 ms (the p99 is reported
  against it too).

    make bench-pages                   # or: .venv/bin/python bench/bench_pages.py
    python bench/bench_pages.py --data-root /work/benchdata   # keep and reuse the catalogue

Exit status: 0 when the target holds, 1 when it does not, 2 when the run failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bench_browse as seeding
import httpx
import mix
from common import REPO, RESULTS, cli, free_port, machine, running

from marketplace.trust.keyring import KEYRING_FILE

TARGET_MS = 10.0
DEFAULT_SIZE = 100_000
DEFAULT_SAMPLES = 300
WARMUP = 40
TOOLS = 8
ORG_SLUG = "bench-pages-org"


def percentile(values: Sequence[float], q: float) -> float:
    return mix.percentile(sorted(values), q)


# ---------------------------------------------------------------------------------------
# The catalogue


def prepare_catalogue(data_dir: Path, size: int, env: dict[str, str]) -> seeding.Catalogue:
    """bench_browse's catalogue in `data_dir`: reused when it is there, else seeded."""
    database = data_dir / "marketplace.db"
    cli(env, "db", "upgrade")
    if database.exists() and _has_plugins(database):
        print(f"sqlite {size:,} plugins: reusing {data_dir}", flush=True)
        return seeding.load_sqlite_catalogue(database)
    print(f"sqlite {size:,} plugins: seeding {data_dir} ...", flush=True)
    for email, role in ((seeding.DEV_EMAIL, "DEVELOPER"), (seeding.USER_EMAIL, "USER")):
        cli(env, "user", "create", "--email", email, "--password", seeding.PASSWORD,
            "--name", f"Bench {role.title()}", "--role", role)  # fmt: skip
    return seeding.seed_sqlite(database, size, data_dir / KEYRING_FILE)


def _has_plugins(database: Path) -> bool:
    with contextlib.closing(sqlite3.connect(database)) as db:
        return bool(db.execute("SELECT count(*) FROM plugins").fetchone()[0])


def _tool(index: int, key: str) -> dict[str, Any]:
    wire = {
        "name": f"tool_{index}",
        "description": f"Does step {index} of {key}'s work: reads the input, checks it and "
        "returns a short summary the assistant can show.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            },
            "required": ["query"],
        },
        "annotations": {"readOnlyHint": True},
    }
    return wire | {"fingerprint": f"{index:064x}"}


def _report(key: str) -> dict[str, Any]:
    return {
        "server": {"name": key, "version": "1.0.0", "instructions": "Use the tools in order."},
        "tools": [_tool(n, key) for n in range(TOOLS)],
        "prompts": [],
        "resources": [],
        "observed": {"network": [], "filesWritten": [], "processes": [], "sensitiveReads": []},
        "undeclared": [],
    }


def add_page_rows(database: Path, catalogue: seeding.Catalogue, page_ids: list[str]) -> None:
    """A finished inspection for each measured page's current version, and an organization
    for every other one (idempotent: a reused folder keeps them)."""
    keys = {row[0]: row[1] for row in catalogue.plugins}
    versions = {row[1]: row[0] for row in catalogue.versions}
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    conn = sqlite3.connect(database, timeout=30)
    try:
        with conn:
            owner = conn.execute(
                "SELECT id FROM users WHERE email = ?", (seeding.DEV_EMAIL,)
            ).fetchone()[0]
            conn.execute(
                "INSERT OR IGNORE INTO organizations (id, slug, name, created_at, created_by) "
                "VALUES (?, ?, ?, ?, ?)",
                (str(uuid.uuid4()), ORG_SLUG, "Bench Pages Org", now, owner),
            )
            org = conn.execute(
                "SELECT id FROM organizations WHERE slug = ?", (ORG_SLUG,)
            ).fetchone()[0]
            conn.executemany(
                "INSERT OR REPLACE INTO plugin_inspections (version_id, status, attempts, "
                "queued_at, started_at, finished_at, report) "
                "VALUES (?, 'done', 1, ?, ?, ?, ?)",
                [
                    (versions[pid], now, now, now, json.dumps(_report(keys[pid])))
                    for pid in page_ids
                ],
            )
            conn.executemany(
                "UPDATE plugins SET org_id = ? WHERE id = ? AND org_id IS NOT ?",
                [(org, pid, org) for pid in page_ids[::2]],
            )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------
# Measuring


@dataclass
class Series:
    """Round trips of one kind of request, ms, in the order they were made."""

    round_trips: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.round_trips)

    @property
    def p99(self) -> float:
        return percentile(self.round_trips, 0.99)


@dataclass
class Figures:
    page_cold: Series
    detail_cold: Series
    bare: Series  # the bare app's /healthz: the reference
    page_warm: Series
    bare_page: Series  # the bare app's 20-item page (bench_browse's reference)
    page_bytes: int

    def server(self, series: Series, q: float | None = None) -> float:
        """Server time: the round trip (median, or the q-quantile) minus the bare app's
        median /healthz round trip."""
        value = series.median if q is None else percentile(series.round_trips, q)
        return max(0.0, value - self.bare.median)


async def _timed(conn: mix._Connection, path: str) -> tuple[float, int, bytes]:
    began = time.perf_counter()
    status, body = await conn.get(path, False)
    return (time.perf_counter() - began) * 1000, status, body


def _check_page(key: str, status: int, body: bytes) -> None:
    if status != 200:
        raise RuntimeError(f"GET /plugins/{key} answered {status}: {body[:300]!r}")
    text = body.decode()
    if f"marketplace install {key}" not in text or "tool_0" not in text:
        raise RuntimeError(f"the page of {key} lacks its install command or its tools")


async def measure(
    port: int, bare_port: int, pages: list[str], details: list[str], warmup: list[str]
) -> Figures:
    site = mix._Connection("127.0.0.1", port, "")
    bare = mix._Connection("127.0.0.1", bare_port, "")
    page_cold: list[float] = []
    detail_cold: list[float] = []
    bare_times: list[float] = []
    page_warm: list[float] = []
    bare_pages: list[float] = []
    size = 0
    try:
        for key in warmup:
            await site.get(f"/plugins/{key}", False)
            await site.get(f"/api/v1/plugins/detail/{key}", False)
            await bare.get("/healthz", False)
            await bare.get("/page", False)
        for key, other in zip(pages, details, strict=True):
            took, status, body = await _timed(site, f"/plugins/{key}")
            _check_page(key, status, body)
            page_cold.append(took)
            size = max(size, len(body))
            took, status, body = await _timed(site, f"/api/v1/plugins/detail/{other}")
            if status != 200:
                raise RuntimeError(f"detail of {other} answered {status}: {body[:300]!r}")
            detail_cold.append(took)
            took, _status, _body = await _timed(bare, "/healthz")
            bare_times.append(took)
            took, status, body = await _timed(site, f"/plugins/{key}")
            _check_page(key, status, body)
            page_warm.append(took)
            took, _status, _body = await _timed(bare, "/page")
            bare_pages.append(took)
    finally:
        site.close()
        bare.close()
    return Figures(
        Series(page_cold),
        Series(detail_cold),
        Series(bare_times),
        Series(page_warm),
        Series(bare_pages),
        size,
    )


# ---------------------------------------------------------------------------------------
# Running


def choose(catalogue: seeding.Catalogue, samples: int, seed: int) -> tuple[list[str], ...]:
    """Distinct plugins: pages (tarball versions, as inspected ones are), API details and
    warm-up ones; no plugin is in two lists."""
    rng = random.Random(seed)
    tarball = {v[1] for v in catalogue.versions if v[5] == "tarball"}
    ids = [row[0] for row in catalogue.plugins]
    page_ids = rng.sample(sorted(tarball), samples + WARMUP)
    taken = set(page_ids)
    detail_ids = rng.sample([i for i in ids if i not in taken], samples)
    return page_ids[:samples], detail_ids, page_ids[samples:]


def run(size: int, samples: int, data_root: Path | None, work: Path) -> dict[str, Any]:
    data_dir = (data_root or work) / f"sqlite-{size}"
    data_dir.mkdir(parents=True, exist_ok=True)
    port, bare_port = free_port(), free_port()
    url, bare_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{bare_port}"
    env = seeding.service_env(data_dir, port, None)
    env["MARKETPLACE_INSPECTION_WORKERS"] = "0"
    start = time.perf_counter()
    catalogue = prepare_catalogue(data_dir, size, env)
    if len(catalogue.plugins) != size:
        raise RuntimeError(f"{data_dir} holds {len(catalogue.plugins)} plugins, not {size}")
    page_ids, detail_ids, warm_ids = choose(catalogue, samples, seed=size)
    add_page_rows(data_dir / "marketplace.db", catalogue, page_ids + warm_ids)
    print(f"  catalogue ready in {time.perf_counter() - start:.1f} s", flush=True)
    keys = {row[0]: row[1] for row in catalogue.plugins}

    bare = ["taskset", "-c", seeding.SERVICE_CORE, sys.executable]
    bare += [str(REPO / "bench" / "bare_app.py"), str(bare_port)]
    serve = ["taskset", "-c", seeding.SERVICE_CORE, sys.executable, "-m"]
    serve += ["marketplace_client.main", "serve", "--port", str(port)]
    with (
        running(bare, dict(env), bare_url, work / "bare.log"),
        running(serve, env, url, work / "server.log"),
    ):
        seeding.wait_for_search_index(url)
        with seeding.pinned(seeding.LOADGEN_CORE):
            figures = asyncio.run(
                measure(
                    port,
                    bare_port,
                    [keys[i] for i in page_ids],
                    [keys[i] for i in detail_ids],
                    [keys[i] for i in warm_ids],
                )
            )
    return report(size, samples, figures)


def report(size: int, samples: int, figures: Figures) -> dict[str, Any]:
    page, detail = figures.server(figures.page_cold), figures.server(figures.detail_cold)
    page_p99 = figures.server(figures.page_cold, 0.99)
    return {
        "plugins": size,
        "samples": samples,
        "page_bytes_max": figures.page_bytes,
        "round_trip_ms": {
            name: {"median": series.median, "p99": series.p99}
            for name, series in (
                ("page_cold", figures.page_cold),
                ("detail_cold", figures.detail_cold),
                ("bare", figures.bare),
                ("page_warm", figures.page_warm),
                ("bare_page", figures.bare_page),
            )
        },
        "server_ms": {
            "page_cold": {"median": page, "p99": page_p99},
            "detail_cold": {
                "median": detail,
                "p99": figures.server(figures.detail_cold, 0.99),
            },
            "page_warm": {
                "median": figures.server(figures.page_warm),
                "p99": figures.server(figures.page_warm, 0.99),
            },
        },
        "ratio_page_to_detail": page / detail if detail else float("inf"),
        "target_ms": TARGET_MS,
        "passed": page <= TARGET_MS,
        "p99_within_target": page_p99 <= TARGET_MS,
        "raw": {
            name: getattr(figures, name).round_trips
            for name in ("page_cold", "detail_cold", "bare", "page_warm", "bare_page")
        },
    }


def verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def table(result: dict[str, Any]) -> str:
    trips, server = result["round_trip_ms"], result["server_ms"]
    rows = [
        ("public page, cold (never asked before)", "page_cold"),
        ("API detail, cold (baseline)", "detail_cold"),
        ("public page, warm (cached)", "page_warm"),
    ]
    lines = [
        f"sqlite, {result['plugins']:,} plugins, {result['samples']} distinct plugins per kind, "
        "one request at a time",
        "| request | round trip p50 | p99 | server p50 | server p99 |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, name in rows:
        lines.append(
            f"| {label} | {trips[name]['median']:.2f} ms | {trips[name]['p99']:.2f} ms | "
            f"{server[name]['median']:.2f} ms | {server[name]['p99']:.2f} ms |"
        )
    lines.append(
        f"| bare FastAPI /healthz (reference) | {trips['bare']['median']:.2f} ms | "
        f"{trips['bare']['p99']:.2f} ms | | |"
    )
    lines.append(
        f"| bare FastAPI 20-item page (context) | {trips['bare_page']['median']:.2f} ms | "
        f"{trips['bare_page']['p99']:.2f} ms | | |"
    )
    lines += [
        "",
        f"page / API detail (server time, median): {result['ratio_page_to_detail']:.2f}x; "
        f"largest page {result['page_bytes_max']:,} bytes",
        f"target: uncached page <= {TARGET_MS:g} ms of server time (median): "
        f"{verdict(result['passed'])} ({server['page_cold']['median']:.2f} ms); "
        f"p99 {server['page_cold']['p99']:.2f} ms: {verdict(result['p99_within_target'])} "
        "(reported)",
    ]
    return "\n".join(lines)


def save(payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=2) + "\n"
    stamp = datetime.fromisoformat(payload["started_at"]).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"pages-{stamp}.json"
    path.write_text(text)
    (RESULTS / "pages-latest.json").write_text(text)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Public page benchmark (module docstring).")
    parser.add_argument("--plugins", type=int, default=DEFAULT_SIZE, help="catalogue size")
    parser.add_argument(
        "--samples", type=int, default=DEFAULT_SAMPLES, help="distinct plugins per kind"
    )
    parser.add_argument(
        "--data-root",
        type=Path,
        default=None,
        help="keep the seeded SQLite data folder under this folder (sqlite-<size>, as "
        "bench_browse.py names it) and reuse it next time",
    )
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/")
    args = parser.parse_args(argv)
    if not 1000 <= args.plugins <= 1_000_000:
        parser.error("--plugins must be between 1000 and 1000000")
    if not 10 <= args.samples <= args.plugins // 8:
        parser.error("--samples must be between 10 and an eighth of --plugins")
    if shutil.which("taskset") is None:
        print("taskset is not installed; install util-linux", file=sys.stderr)
        return 2
    payload: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
    }
    work = Path(tempfile.mkdtemp(prefix="bench-pages-"))
    try:
        result = run(args.plugins, args.samples, args.data_root, work)
    except (RuntimeError, OSError, httpx.HTTPError, subprocess.SubprocessError) as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        for log in sorted(work.glob("*.log")):
            if log.stat().st_size:
                print(f"{log.name}:\n{log.read_text(errors='replace')[-3000:]}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; servers stopped, temporary files removed", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(table(result))
    payload["result"] = result
    if not args.no_save:
        print(f"figures saved to {save(payload)}")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
