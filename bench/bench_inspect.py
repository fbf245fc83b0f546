"""Inspection benchmark (CONTRACT 13): what the sandbox costs per inspection, and what
inspection costs an upload. Two parts, each against a baseline measured in the same run:

1. **Time per inspection.** Every benign fixture server of tests/inspection/fixtures/
   (expected `done` with nothing observed; the Node ones only when `node` is on the
   sandbox's PATH) is installed as the job unpacks a package (tests/inspection/
   runner_support.py: the folder, shared helpers copied in) and run ROUNDS times through
   `marketplace.inspection.runner.run_inspection` with the service's limits (`Limits()`,
   so the 0.5 s settle after the listings is in every run). The baseline, interleaved run
   by run: the same server in the same package folder started as a plain subprocess (no
   supervisor, no strace, no bwrap) and listed by the same client
   (`marketplace.inspection.probe`: initialize, then every listing, then the same settle).
   A fixture that does not run without the sandbox (py-home-tmp reads /plugin/server.py)
   is left out and named. Prints median and p95 of both, the ratio sandbox / plain, and
   that ratio with the settle (a fixed sleep in both) taken out.
2. **Upload latency with inspection on and off.** Starts `marketplace serve` from this
   checkout twice, one after the other (SQLite, local blobs, rate limits off, log level
   WARNING, a temporary data folder): with MARKETPLACE_INSPECTION_WORKERS=0 (off: no
   inspector; the API still records and enqueues each version's inspection, as an API host
   of a scaled-out deployment does) and =1 (on: serve starts an inspector beside the API,
   which runs the sandboxes on the same cores). So on / off is what running inspections
   beside the API costs an upload. Each gets an
   administrator and a verified developer, who publishes one plugin and creates a warm-up
   version (not counted; with inspection on, its inspection ends before the timing
   starts), then UPLOADS inline stdio-MCP versions, sent INTERVAL apart (0.5 s: with
   inspection on most arrive while the inspector runs an earlier one), not all well
   behaved (every 4th looks up a name it does not declare, every 10th sleeps past the
   time limit and holds the worker for all of it: `misbehaviour`), with
   `POST /api/v1/developer/plugins/{id}/create-version`, each timed from send to the 201.
   Prints median and p95 for on and off and the ratio on / off. With inspection on it then
   waits until every inspection has ended and reads the server's startedAt and finishedAt
   (same machine, same clock): upload -> done, and its two parts, queued (upload ->
   started; the uploads arrive faster than one worker inspects them) and the run itself
   (started -> finished).

Saves the figures as JSON in bench/results/ (ignored by git). There is no target: the
figures are for docs/performance.md.

    make bench-inspect                       # or: .venv/bin/python bench/bench_inspect.py
    python bench/bench_inspect.py --rounds 1 --uploads 5     # a quicker look
    python bench/bench_inspect.py --interval 0               # uploads back to back

Exit status: 0 when the run completed, 2 when it failed (the sandbox is unavailable, an
inspection did not end `done`, a server did not start), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
from common import REPO, RESULTS, cli, free_port, machine, running
from mcp import StdioServerParameters
from mix import percentile

from marketplace.inspection.probe import ProbeError, probe
from marketplace.inspection.report import (
    PLACEHOLDER_VALUE,
    SANDBOX_PATH,
    Limits,
    Target,
)
from marketplace.inspection.runner import run_inspection, sandbox_available
from marketplace_client.registry import server_entry

FIXTURES = REPO / "tests" / "inspection" / "fixtures"
SHARED = FIXTURES / "_shared"
DEFAULT_ROUNDS = 3
DEFAULT_UPLOADS = 20
# Uploads are sent this far apart (the wait is not timed), so that with inspection on most
# of them arrive while the inspector is running one: what an upload costs beside it.
DEFAULT_INTERVAL = 0.5
REQUEST_SECONDS = 60.0
POLL_SECONDS = 0.25
FINISHED = ("done", "failed")

PASSWORD = "bench-password-123"  # noqa: S105 - throwaway accounts in a temporary folder
ADMIN_EMAIL = "bench-admin@example.com"
DEV_EMAIL = "bench-dev@example.com"
PLUGIN_KEY = "bench-inspect"

# The inline server every uploaded version carries (tests/e2e/test_inspection_live.py's):
# a stdio MCP server in plain Python, one tool; $SLEEP and $LOOKUP make it misbehave.
INLINE_SERVER = (REPO / "tests/inspection/fixtures/_shared/inline_server.py").read_text()

# Uploads as they come, not all well behaved: every 4th looks a name up that its manifest
# does not declare (inspected to the end, then rejected), every 10th sleeps past the time
# limit (the worker is held for all of it, then the inspection fails). The rest are benign.
LOOKUP_EVERY, SLEEPER_EVERY = 4, 10


def misbehaviour(index: int) -> dict[str, str]:
    """The server's environment for the index-th upload of the mix."""
    if index % SLEEPER_EVERY == 0:
        return {"SLEEP": "600"}
    if index % LOOKUP_EVERY == 0:
        return {"LOOKUP": f"exfil-{index}.example.org"}
    return {}


# ---------------------------------------------------------------------------------------
# Part 1: time per inspection, sandbox against a plain subprocess


@dataclass(frozen=True)
class Fixture:
    name: str
    folder: Path
    spec: dict[str, Any]

    def missing(self) -> str | None:
        for program in self.spec.get("needs", []):
            if shutil.which(program, path=SANDBOX_PATH) is None:
                return f"{program} is not on {SANDBOX_PATH}"
        return None

    def required_keys(self) -> tuple[str, ...]:
        return tuple(i["key"] for i in self.spec.get("config", []) if i.get("required"))


def benign(spec: dict[str, Any]) -> bool:
    """Expected to end `done` with nothing observed in any category."""
    expect = spec.get("expect", {})
    observed = expect.get("observed")
    return (
        expect.get("status") == "done"
        and isinstance(observed, dict)
        and not any(observed.values())
        and not spec.get("limits")
    )


def benign_fixtures() -> tuple[list[Fixture], list[str]]:
    """The benign fixtures this host can run, and those skipped (with why)."""
    chosen, skipped = [], []
    for folder in sorted(FIXTURES.iterdir()):
        spec_path = folder / "fixture.json"
        if not spec_path.is_file():
            continue
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        if not benign(spec):
            continue
        fixture = Fixture(folder.name, folder, spec)
        why = fixture.missing()
        if why is None:
            chosen.append(fixture)
        else:
            skipped.append(f"{fixture.name} ({why})")
    return chosen, skipped


def install(fixture: Fixture, root: Path) -> Path:
    """The fixture as the job unpacks a package: a folder of its own, shared helpers in."""
    package = root / "package"
    shutil.copytree(fixture.folder, package, symlinks=True)
    (package / "fixture.json").unlink()
    for name in fixture.spec.get("shared", []):
        shutil.copy2(SHARED / name, package / name)
    return package


async def sandboxed_once(fixture: Fixture, limits: Limits, root: Path) -> float:
    package = install(fixture, root)
    workdir = root / "work"
    workdir.mkdir()
    target = Target(
        package_dir=package,
        mcp=dict(fixture.spec["mcp"]),
        required_config_keys=fixture.required_keys(),
    )
    start = time.perf_counter()
    report = await run_inspection(target, limits, workdir)
    seconds = time.perf_counter() - start
    if report.status != "done":
        raise RuntimeError(f"inspection of {fixture.name} ended {report.status}: {report.error}")
    return seconds


def plain_params(fixture: Fixture, package: Path, home: Path, tmp: Path) -> StdioServerParameters:
    """The same server started as the sandbox starts it (command, args, environment,
    package folder as working folder), without the sandbox."""
    config = {key: PLACEHOLDER_VALUE for key in fixture.required_keys()}
    entry = server_entry(fixture.spec["mcp"], config, package)
    command = str(entry["command"])
    if "/" in command:
        executable = str(package / command) if not command.startswith("/") else command
    else:
        found = shutil.which(command, path=SANDBOX_PATH)
        if found is None:
            raise RuntimeError(f"{command} is not on {SANDBOX_PATH}")
        executable = found
    env = {
        "PATH": SANDBOX_PATH,
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        **entry["env"],
    }
    return StdioServerParameters(
        command=executable, args=list(entry["args"]), env=env, cwd=str(package)
    )


async def plain_once(fixture: Fixture, limits: Limits, root: Path) -> float:
    package = install(fixture, root)
    home, tmp = root / "home", root / "tmp"
    home.mkdir()
    tmp.mkdir()
    params = plain_params(fixture, package, home, tmp)
    with (root / "plain.log").open("w+", encoding="utf-8", errors="replace") as errlog:
        start = time.perf_counter()
        try:
            listing = await probe(params, errlog, limits.seconds, limits.settle_seconds)
        except ProbeError as exc:
            raise RuntimeError(f"{fixture.name} without the sandbox: {exc.reason}") from None
        seconds = time.perf_counter() - start
    if listing.server is None:
        raise RuntimeError(f"{fixture.name} answered no initialize without the sandbox")
    return seconds


@dataclass
class FixtureTimes:
    name: str
    sandbox: list[float] = field(default_factory=list)
    plain: list[float] = field(default_factory=list)


async def time_inspections(
    fixtures: list[Fixture], rounds: int, limits: Limits, work: Path
) -> tuple[list[FixtureTimes], list[str]]:
    """Each fixture ROUNDS times in the sandbox and without it; and the fixtures left out
    because they cannot run without the sandbox (they use its paths), with why."""
    counter = 0

    def fresh() -> Path:
        nonlocal counter
        counter += 1
        folder = work / f"run-{counter}"
        folder.mkdir()
        return folder

    # Warm-up, not counted: the sandbox check, imports, the page cache; and every fixture
    # once without the sandbox, to leave out those that only run inside it.
    await sandboxed_once(fixtures[0], limits, fresh())
    runnable, skipped = [], []
    for fixture in fixtures:
        try:
            await plain_once(fixture, limits, fresh())
        except RuntimeError as exc:
            skipped.append(str(exc))
            continue
        runnable.append(fixture)
    if not runnable:
        raise RuntimeError("no benign fixture runs without the sandbox")
    times = [FixtureTimes(f.name) for f in runnable]
    for index in range(rounds):
        for fixture, measured in zip(runnable, times, strict=True):
            # Each pair back to back, their order alternating round by round, so any drift
            # of the machine hits both alike.
            for kind in ("sandbox", "plain") if index % 2 == 0 else ("plain", "sandbox"):
                folder = fresh()
                if kind == "sandbox":
                    measured.sandbox.append(await sandboxed_once(fixture, limits, folder))
                else:
                    measured.plain.append(await plain_once(fixture, limits, folder))
                shutil.rmtree(folder, ignore_errors=True)
        print(
            f"round {index + 1}/{rounds}: "
            + ", ".join(f"{t.name} {t.sandbox[-1]:.2f}/{t.plain[-1]:.2f} s" for t in times),
            flush=True,
        )
    return times, skipped


# ---------------------------------------------------------------------------------------
# Part 2: upload latency with inspection on and off


def ok(response: httpx.Response, status: int = 200) -> Any:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path} answered "
            f"{response.status_code}, expected {status}: {response.text[:500]}"
        )
    return response.json()["data"] if response.content else None


def server_env(data_dir: Path, port: int, workers: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKETPLACE_")}
    src = str(REPO / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    env.update(
        MARKETPLACE_DATA_DIR=str(data_dir),
        MARKETPLACE_PUBLIC_URL=f"http://127.0.0.1:{port}",
        MARKETPLACE_RATE_LIMIT_ENABLED="false",
        MARKETPLACE_LOG_LEVEL="WARNING",
        MARKETPLACE_INSPECTION_WORKERS=str(workers),
    )
    return env


def login(client: httpx.Client, email: str) -> str:
    data = ok(client.post("/api/v1/auth/login", json={"email": email, "password": PASSWORD}))
    token: str = data["accessToken"]
    return token


def verified_developer(client: httpx.Client, admin_token: str) -> str:
    """A developer the way one comes to exist: register, become one, get verified."""
    account = {"email": DEV_EMAIL, "password": PASSWORD, "name": "Bench Dev"}
    user = ok(client.post("/api/v1/auth/register", json=account), 201)["user"]
    token = login(client, DEV_EMAIL)
    mine = {"Authorization": f"Bearer {token}"}
    body = {"displayName": "Bench Dev"}
    ok(client.post("/api/v1/developer/register", json=body, headers=mine))
    ok(client.post("/api/v1/developer/identity", json={"realName": "Bench Dev"}, headers=mine))
    review = f"/api/v1/admin/developers/{user['id']}/identity/review"
    admin = {"Authorization": f"Bearer {admin_token}"}
    ok(client.post(review, json={"approved": True}, headers=admin))
    return token


def version_body(version: str, env: dict[str, str]) -> dict[str, Any]:
    manifest = {
        "id": PLUGIN_KEY,
        "version": version,
        "category": "productivity",
        "main": "server.py",
        "inlineCode": INLINE_SERVER,
        "mcp": {"command": "python3", "args": ["server.py"], "env": env},
    }
    return {"version": version, "changelog": "benchmark", "manifest": manifest}


@dataclass
class Upload:
    version: str
    sent_at: float  # wall clock, seconds since the epoch, just before the request
    seconds: float
    status: str = ""  # the inspection's, once it ended
    queued_seconds: float = 0.0
    run_seconds: float = 0.0
    to_done_seconds: float = 0.0
    started_at: float = 0.0  # the inspection's, wall clock
    finished_at: float = 0.0
    error: str | None = None


def upload_once(
    client: httpx.Client, create_url: str, version: str, env: dict[str, str] | None = None
) -> Upload:
    sent_at = time.time()
    start = time.perf_counter()
    response = client.post(create_url, json=version_body(version, env or {}))
    seconds = time.perf_counter() - start
    row = ok(response, 201)
    if row["version"] != version:
        raise RuntimeError(f"created {row['version']}, not {version}")
    return Upload(version, sent_at, seconds)


def inspections(client: httpx.Client, plugin_id: str) -> dict[str, dict[str, Any]]:
    detail = ok(client.get(f"/api/v1/developer/plugins/{plugin_id}"))
    return {v["version"]: v["inspection"] for v in detail["versions"]}


def wait_for_inspections(
    client: httpx.Client, plugin_id: str, versions: list[str], seconds: float
) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while True:
        found = inspections(client, plugin_id)
        if all(found.get(v, {}).get("status") in FINISHED for v in versions):
            return found
        if time.monotonic() > deadline:
            left = [v for v in versions if found.get(v, {}).get("status") not in FINISHED]
            raise RuntimeError(f"{len(left)} inspection(s) did not end within {seconds:.0f} s")
        time.sleep(POLL_SECONDS)


def epoch(stamp: str) -> float:
    moment = datetime.fromisoformat(stamp)
    if moment.tzinfo is None:  # the service writes UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def time_uploads(workers: int, uploads: int, interval: float, work: Path) -> list[Upload]:
    """UPLOADS timed create-version requests, INTERVAL apart, against a fresh server; with
    inspection on, each upload's inspection times once every one has ended."""
    mode = "on" if workers else "off"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = server_env(work / f"data-{mode}", port, workers)
    serve = [sys.executable, "-m", "marketplace_client.main", "serve", "--port", str(port)]
    with running(serve, env, url, work / f"server-{mode}.log"):
        cli(env, "user", "create", "--email", ADMIN_EMAIL, "--password", PASSWORD,
            "--name", "Bench Admin", "--role", "SUPER_ADMIN")  # fmt: skip
        with httpx.Client(base_url=url, timeout=REQUEST_SECONDS) as client:
            admin_token = login(client, ADMIN_EMAIL)
            client.headers["Authorization"] = f"Bearer {verified_developer(client, admin_token)}"
            publish = {
                "pluginKey": PLUGIN_KEY,
                "name": "Inspection benchmark",
                "nameZh": "检查基准",
                "description": "A plugin that receives benchmark versions.",
                "descriptionZh": "接收基准版本的插件。",
                "type": "mcp",
            }
            plugin_id = ok(client.post("/api/v1/developer/plugins/publish", json=publish), 201)[
                "id"
            ]
            create_url = f"/api/v1/developer/plugins/{plugin_id}/create-version"
            # Warm-up, not counted; with inspection on, the inspector is warm and idle after.
            upload_once(client, create_url, "0.0.1")
            if workers:
                wait_for_inspections(client, plugin_id, ["0.0.1"], 120)
            done = []
            next_send = time.monotonic()
            for index in range(1, uploads + 1):
                time.sleep(max(0.0, next_send - time.monotonic()))
                next_send = time.monotonic() + interval
                done.append(upload_once(client, create_url, f"1.0.{index}", misbehaviour(index)))
            print(
                f"inspection {mode}: {uploads} uploads, median "
                f"{statistics.median(u.seconds for u in done) * 1000:.1f} ms",
                flush=True,
            )
            if workers:
                versions = [u.version for u in done]
                found = wait_for_inspections(client, plugin_id, versions, 60 + 30 * uploads)
                for upload in done:
                    shown = found[upload.version]
                    upload.status, upload.error = shown["status"], shown["error"]
                    started, finished = epoch(shown["startedAt"]), epoch(shown["finishedAt"])
                    upload.queued_seconds = started - upload.sent_at
                    upload.run_seconds = finished - started
                    upload.to_done_seconds = finished - upload.sent_at
                    upload.started_at, upload.finished_at = started, finished
                # Sleepers must fail (timed out); every other upload must be inspected.
                expected = {u.version: "failed" if "SLEEP" in misbehaviour(i) else "done"
                            for i, u in enumerate(done, start=1)}  # fmt: skip
                failed = [u for u in done if u.status != expected[u.version]]
                if failed:
                    raise RuntimeError(
                        f"{len(failed)} inspection(s) ended {failed[0].status}: {failed[0].error}"
                    )
    return done


# ---------------------------------------------------------------------------------------
# The benchmark


@dataclass
class Results:
    started_at: str
    machine: dict[str, Any]
    rounds: int
    uploads: int
    interval: float
    settle_seconds: float
    fixtures: list[str] = field(default_factory=list)
    skipped_fixtures: list[str] = field(default_factory=list)
    fixture_times: list[FixtureTimes] = field(default_factory=list)
    uploads_off: list[Upload] = field(default_factory=list)
    uploads_on: list[Upload] = field(default_factory=list)
    summary: dict[str, float] = field(default_factory=dict)


def bench(rounds: int, uploads: int, interval: float, work: Path) -> Results:
    limits = Limits()  # the service's defaults (job.limits_of with default settings)
    results = Results(
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        machine=machine(),
        rounds=rounds,
        uploads=uploads,
        interval=interval,
        settle_seconds=limits.settle_seconds,
    )
    unavailable = sandbox_available()
    if unavailable is not None:
        raise RuntimeError(f"{unavailable} (make tracer installs strace)")
    fixtures, results.skipped_fixtures = benign_fixtures()
    if not fixtures:
        raise RuntimeError(f"no benign fixture in {FIXTURES}")
    print(
        f"time per inspection: {len(fixtures)} benign fixtures x {rounds} rounds, "
        f"sandbox / plain seconds",
        flush=True,
    )
    results.fixture_times, left_out = anyio.run(time_inspections, fixtures, rounds, limits, work)
    results.skipped_fixtures += left_out
    results.fixtures = [t.name for t in results.fixture_times]
    print(
        f"upload latency: {uploads} create-version requests per mode, {interval:g} s apart",
        flush=True,
    )
    results.uploads_off = time_uploads(0, uploads, interval, work)
    results.uploads_on = time_uploads(1, uploads, interval, work)
    summarise(results)
    return results


def summarise(results: Results) -> None:
    sandbox = [s for t in results.fixture_times for s in t.sandbox]
    plain = [s for t in results.fixture_times for s in t.plain]
    settle = results.settle_seconds
    off = [u.seconds for u in results.uploads_off]
    on = [u.seconds for u in results.uploads_on]
    figures = {
        "sandbox_median": statistics.median(sandbox),
        "sandbox_p95": percentile(sandbox, 0.95),
        "plain_median": statistics.median(plain),
        "plain_p95": percentile(plain, 0.95),
        "upload_off_median": statistics.median(off),
        "upload_off_p95": percentile(off, 0.95),
        "upload_on_median": statistics.median(on),
        "upload_on_p95": percentile(on, 0.95),
        "to_done_median": statistics.median(u.to_done_seconds for u in results.uploads_on),
        "to_done_p95": percentile([u.to_done_seconds for u in results.uploads_on], 0.95),
        "queued_median": statistics.median(u.queued_seconds for u in results.uploads_on),
        "queued_p95": percentile([u.queued_seconds for u in results.uploads_on], 0.95),
        "run_median": statistics.median(u.run_seconds for u in results.uploads_on),
        "run_p95": percentile([u.run_seconds for u in results.uploads_on], 0.95),
    }
    figures["ratio"] = figures["sandbox_median"] / figures["plain_median"]
    figures["ratio_p95"] = figures["sandbox_p95"] / figures["plain_p95"]
    figures["ratio_without_settle"] = (figures["sandbox_median"] - settle) / (
        figures["plain_median"] - settle
    )
    figures["overhead_median"] = figures["sandbox_median"] - figures["plain_median"]
    # Uploads sent while an inspection (of an earlier one) was running.
    figures["uploads_beside_inspection"] = sum(
        any(o.started_at <= u.sent_at <= o.finished_at for o in results.uploads_on)
        for u in results.uploads_on
    )
    figures["upload_ratio"] = figures["upload_on_median"] / figures["upload_off_median"]
    figures["upload_ratio_p95"] = figures["upload_on_p95"] / figures["upload_off_p95"]
    results.summary = figures


def report(results: Results) -> str:
    f = results.summary

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.0f} ms"

    def pair(median: str, p95: str) -> str:
        return f"{ms(f[median])} / {ms(f[p95])}"

    runs = len(results.fixtures) * results.rounds
    rows = [
        (
            "inspection, sandbox (median / p95)",
            pair("sandbox_median", "sandbox_p95"),
            f"run_inspection, {len(results.fixtures)} fixtures x {results.rounds} = {runs} runs",
        ),
        (
            "same server, plain (median / p95)",
            pair("plain_median", "plain_p95"),
            "subprocess + the same probe, the baseline",
        ),
        (
            "ratio sandbox / plain",
            f"{f['ratio']:.2f}x",
            f"p95 {f['ratio_p95']:.2f}x; +{ms(f['overhead_median'])} a run",
        ),
        (
            "ratio without the settle",
            f"{f['ratio_without_settle']:.2f}x",
            f"the {results.settle_seconds:g} s settle taken out of both",
        ),
        (
            "upload, inspection off (median / p95)",
            pair("upload_off_median", "upload_off_p95"),
            f"create-version send -> 201, {results.uploads} uploads {results.interval:g} s "
            "apart; WORKERS=0, jobs queued, none run",
        ),
        (
            "upload, inspection on (median / p95)",
            pair("upload_on_median", "upload_on_p95"),
            f"MARKETPLACE_INSPECTION_WORKERS=1; {f['uploads_beside_inspection']:.0f} "
            "sent while an inspection ran",
        ),
        ("ratio on / off", f"{f['upload_ratio']:.2f}x", f"p95 {f['upload_ratio_p95']:.2f}x"),
        (
            "upload -> done (median / p95)",
            pair("to_done_median", "to_done_p95"),
            "finishedAt - request sent; one worker; 1 in 10 sleeps past the limit",
        ),
        ("  queued (median / p95)", pair("queued_median", "queued_p95"), "startedAt - sent"),
        (
            "  inspection run (median / p95)",
            pair("run_median", "run_p95"),
            "finishedAt - startedAt",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    value_width = max(len(r[1]) for r in rows)
    lines = [f"{n:<{width}}  {v:>{value_width}}  {note}".rstrip() for n, v, note in rows]
    lines.append("")
    lines.append("per fixture, median sandbox / plain:")
    for times in results.fixture_times:
        box, bare = statistics.median(times.sandbox), statistics.median(times.plain)
        lines.append(f"  {times.name:<24} {ms(box):>8} / {ms(bare):>7}  {box / bare:.2f}x")
    if results.skipped_fixtures:
        lines.append(f"skipped: {', '.join(results.skipped_fixtures)}")
    return "\n".join(lines)


def save(results: Results, output: Path | None) -> Path:
    text = json.dumps(asdict(results), indent=2, ensure_ascii=False) + "\n"
    if output is not None:
        output.write_text(text)
        return output
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.fromisoformat(results.started_at).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"inspect-{stamp}.json"
    path.write_text(text)
    (RESULTS / "inspect-latest.json").write_text(text)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Inspection benchmark (see the module docstring).")
    parser.add_argument(
        "--rounds", type=int, default=DEFAULT_ROUNDS, help="runs per fixture (default 3)"
    )
    parser.add_argument(
        "--uploads", type=int, default=DEFAULT_UPLOADS, help="uploads per mode (default 20)"
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=DEFAULT_INTERVAL,
        help="seconds between two uploads' sends (default 0.5)",
    )
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/")
    parser.add_argument("--output", type=Path, help="write the JSON here, not to bench/results/")
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= 50 or not 1 <= args.uploads <= 500 or not 0 <= args.interval <= 60:
        parser.error("--rounds must be 1-50, --uploads 1-500 and --interval 0-60")
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="bench-inspect-"))
    try:
        results = bench(args.rounds, args.uploads, args.interval, work)
    except KeyboardInterrupt:
        return 130
    except (RuntimeError, OSError, httpx.HTTPError, subprocess.SubprocessError) as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        for log in sorted(work.glob("server-*.log")):
            with contextlib.suppress(OSError):
                text = log.read_text(errors="replace")[-4000:]
                if text:
                    print(f"{log.name}:\n{text}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(report(results))
    print(f"\nbenchmark took {time.monotonic() - started:.0f} s")
    if not args.no_save:
        print(f"figures saved to {save(results, args.output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
