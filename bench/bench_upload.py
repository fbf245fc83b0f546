"""Upload benchmark: a ~100 MiB package over HTTP against the compute floor of the same file.

Starts `marketplace serve` from this checkout (SQLite, local blobs, rate limits off) in a
temporary data folder, creates an admin and one plugin, then for each run builds a
package of a 100 MiB random payload (so it does not compress) that differs from the
others only in its manifest version, and times on that same file

* the floor: read the file once, feed it to hashlib.sha256 and zlib.decompressobj (the
  least work any correct implementation must do), at the read size that is fastest on
  this machine, and also at 1 MiB reads for comparison;
* the transport: the same streamed request to a bare Starlette endpoint on the same
  uvicorn stack that only drains the body (what HTTP alone costs here; context, not a
  target);
* the upload: the streamed multipart POST to the admin upload endpoint, from the first
  byte sent until the 201 arrives,

while a thread samples the server's resident memory (VmRSS) every 20 ms. Prints a table
with PASS/FAIL against the targets (upload <= 2x the floor, RSS growth < 50 MB) and saves
the figures as JSON in bench/results/.

    make bench-upload                        # or: .venv/bin/python bench/bench_upload.py
    python bench/bench_upload.py --runs 3 --payload-mib 20    # a quicker look
    python bench/bench_upload.py --client httpx-files         # httpx's own multipart

Exit status: 0 when both targets hold, 1 when one does not, 2 when the run failed.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from common import REPO, RESULTS, cli, free_port, machine, running

KIB = 1024
MIB = 1024 * KIB
MB = 1000 * 1000  # the RSS target is in decimal megabytes: the stricter reading
TARGET_RATIO = 2.0
TARGET_RSS_GROWTH_MB = 50.0
# The floor reads in pieces of one of these sizes, whichever is fastest here: 1 MiB
# pieces make zlib allocate large output buffers and can double the floor.
FLOOR_CHUNKS = (64 * KIB, 256 * KIB, MIB)
FLOOR_CALIBRATION_ROUNDS = 3
CLIENT_CHUNK = MIB
SAMPLE_SECONDS = 0.02
REQUEST_SECONDS = 300.0

PLUGIN_KEY = "bench-upload"
ADMIN_EMAIL = "bench-admin@example.com"
ADMIN_PASSWORD = "bench-admin-password"  # noqa: S105 - a throwaway account in a temp folder

# The transport reference: the service's HTTP stack (uvicorn.run picks the same loop and
# parser as `serve`) with one endpoint that reads the body and throws it away.
DRAIN_SERVER = """
import sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

async def drain(request):
    async for _ in request.stream():
        pass
    return Response(status_code=201)

async def healthz(request):
    return Response(status_code=200)

app = Starlette(routes=[Route("/drain", drain, methods=["POST"]), Route("/healthz", healthz)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


# ---------------------------------------------------------------------------------------
# Package and floor


def write_payload(path: Path, size: int) -> None:
    """size random bytes, written in 1 MiB pieces (never held whole)."""
    with path.open("wb") as out:
        left = size
        while left:
            piece = os.urandom(min(MIB, left))
            out.write(piece)
            left -= len(piece)


def build_package(dest: Path, payload: Path, version: str) -> None:
    """manifest.json + index.js + the random payload, as a gzip level 1 tarball."""
    manifest = {
        "id": PLUGIN_KEY,
        "version": version,
        "main": "index.js",
        "category": "utility",
        "type": "tool",
        "description": "upload benchmark package",
    }
    small = {
        "manifest.json": json.dumps(manifest, indent=2).encode(),
        "index.js": b"export default function main() { return 'bench'; }\n",
    }
    with tarfile.open(dest, "w:gz", compresslevel=1) as tar:
        for name, data in small.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = int(time.time())
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
        tar.add(payload, arcname="assets/payload.bin", recursive=False)


def floor_once(path: Path, chunk_size: int) -> tuple[float, str]:
    """The compute floor: one read of the file, SHA-256 and gunzip of every byte."""
    start = time.perf_counter()
    hasher = hashlib.sha256()
    inflater = zlib.decompressobj(31)
    with path.open("rb", buffering=0) as src:
        while chunk := src.read(chunk_size):
            hasher.update(chunk)
            inflater.decompress(chunk)
    return time.perf_counter() - start, hasher.hexdigest()


def fastest_floor_chunk(path: Path) -> tuple[int, dict[int, float]]:
    """The read size that gives the lowest floor here (a lower floor is a harder target)."""
    times: dict[int, list[float]] = {size: [] for size in FLOOR_CHUNKS}
    for _ in range(FLOOR_CALIBRATION_ROUNDS):
        for size in FLOOR_CHUNKS:  # interleaved, so drift hits every size alike
            times[size].append(floor_once(path, size)[0])
    medians = {size: statistics.median(values) for size, values in times.items()}
    return min(medians, key=lambda size: medians[size]), medians


# ---------------------------------------------------------------------------------------
# Processes and their memory


def server_env(data_dir: Path, port: int, max_package_mb: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKETPLACE_")}
    src = str(REPO / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    env.update(
        MARKETPLACE_DATA_DIR=str(data_dir),
        MARKETPLACE_PUBLIC_URL=f"http://127.0.0.1:{port}",
        MARKETPLACE_RATE_LIMIT_ENABLED="false",
        MARKETPLACE_LOG_LEVEL="WARNING",
        MARKETPLACE_PLUGIN_PACKAGE_MAX_MB=str(max_package_mb),
    )
    return env


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in bytes."""
    values: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024  # reported in kB
    return values


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads, so far."""
    with open(f"/proc/{pid}/stat") as stat:
        # The command name in parentheses may contain spaces; the fields follow it.
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reset_peak(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux 4.0+, own processes); False if not possible."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


class RssSampler:
    """Samples one process's VmRSS in a thread; the highest value seen is kept."""

    def __init__(self, pid: int, interval: float = SAMPLE_SECONDS) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                rss = proc_status(self.pid)["VmRSS"]
            except (OSError, KeyError):
                return  # the process is gone
            self.peak = max(self.peak, rss)
            self.samples += 1
            self._stop.wait(self.interval)


# ---------------------------------------------------------------------------------------
# Requests


def ok(response: httpx.Response, status: int = 200) -> Any:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path} answered "
            f"{response.status_code}, expected {status}: {response.text[:500]}"
        )
    return response.json()["data"] if response.content else None


class StreamedForm:
    """A multipart/form-data body framed by hand: text fields, then the file read in
    CLIENT_CHUNK pieces as the request is sent. Its length is known up front."""

    def __init__(self, fields: dict[str, str], package: Path) -> None:
        self.boundary = f"bench-{secrets.token_hex(12)}"
        head = b"".join(
            f'--{self.boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
            f"{value}\r\n".encode()
            for name, value in fields.items()
        )
        self.head = (
            head
            + (
                f'--{self.boundary}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="{package.name}"\r\nContent-Type: application/gzip\r\n\r\n'
            ).encode()
        )
        self.tail = f"\r\n--{self.boundary}--\r\n".encode()
        self.package = package
        self.length = len(self.head) + package.stat().st_size + len(self.tail)

    @property
    def headers(self) -> dict[str, str]:
        return {
            "Content-Type": f"multipart/form-data; boundary={self.boundary}",
            "Content-Length": str(self.length),
        }

    def __iter__(self) -> Iterator[bytes]:
        yield self.head
        with self.package.open("rb", buffering=0) as src:
            while chunk := src.read(CLIENT_CHUNK):
                yield chunk
        yield self.tail


def post_package(
    client: httpx.Client, url: str, package: Path, fields: dict[str, str], kind: str
) -> tuple[float, httpx.Response]:
    """POST the package as a streamed form; the seconds until the response has arrived."""
    if kind == "httpx-files":  # httpx's encoder, as the CLI uses it: 64 KiB reads
        with package.open("rb") as body:
            start = time.perf_counter()
            response = client.post(
                url, data=fields, files={"file": (package.name, body, "application/gzip")}
            )
            return time.perf_counter() - start, response
    form = StreamedForm(fields, package)
    start = time.perf_counter()
    response = client.post(url, content=iter(form), headers=form.headers)
    return time.perf_counter() - start, response


# ---------------------------------------------------------------------------------------
# The benchmark


@dataclass
class Run:
    version: str
    package_bytes: int
    floor_seconds: float
    floor_1mib_seconds: float
    transport_seconds: float
    upload_seconds: float
    server_cpu_seconds: float


@dataclass
class Results:
    started_at: str
    machine: dict[str, Any]
    payload_bytes: int
    client: str
    floor_chunk_bytes: int = 0
    floor_calibration: dict[int, float] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    floor_median: float = 0.0
    floor_1mib_median: float = 0.0
    transport_median: float = 0.0
    upload_median: float = 0.0
    ratio: float = 0.0
    ratio_to_1mib_floor: float = 0.0
    transport_ratio: float = 0.0
    run_ratios: list[float] = field(default_factory=list)
    server_cpu_median: float = 0.0
    rss_baseline: int = 0
    rss_peak_sampled: int = 0
    rss_hwm: int = 0
    rss_hwm_reset: bool = False
    rss_samples: int = 0
    rss_growth: int = 0
    client_rss_growth: int = 0
    ratio_pass: bool = False
    rss_pass: bool = False


@dataclass
class Setup:
    work: Path
    payload: Path
    client_kind: str
    upload_url: str
    drain_url: str
    server_pid: int


def bench(runs: int, payload_bytes: int, client_kind: str, work: Path) -> Results:
    results = Results(
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        machine=machine(),
        payload_bytes=payload_bytes,
        client=client_kind,
    )
    payload = work / "payload.bin"
    print(f"writing {payload_bytes / MIB:.0f} MiB of random bytes ...", flush=True)
    write_payload(payload, payload_bytes)
    # Room for the tar headers and gzip framing on top of the incompressible payload.
    max_package_mb = max(100, -(-(payload_bytes + MIB) // MIB))
    port, drain_port = free_port(), free_port()
    env = server_env(work / "data", port, max_package_mb)
    url, drain_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{drain_port}"
    serve = [sys.executable, "-m", "marketplace_client.main", "serve", "--port", str(port)]
    drain = [sys.executable, "-c", DRAIN_SERVER, str(drain_port)]
    with (
        running(serve, env, url, work / "server.log") as server,
        running(drain, env, drain_url, work / "drain.log"),
    ):
        cli(env, "user", "create", "--email", ADMIN_EMAIL, "--password", ADMIN_PASSWORD,
            "--name", "Bench Admin", "--role", "SUPER_ADMIN")  # fmt: skip
        with httpx.Client(base_url=url, timeout=REQUEST_SECONDS) as client:
            login = {"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}
            token = ok(client.post("/api/v1/auth/login", json=login))["accessToken"]
            client.headers["Authorization"] = f"Bearer {token}"
            plugin = ok(
                client.post(
                    "/api/v1/admin/plugins",
                    json={
                        "pluginKey": PLUGIN_KEY,
                        "name": "Upload benchmark",
                        "nameZh": "上传基准",
                        "description": "A plugin that receives benchmark uploads.",
                        "descriptionZh": "接收基准上传的插件。",
                        "type": "tool",
                        "category": "utility",
                    },
                ),
                201,
            )
            setup = Setup(
                work=work,
                payload=payload,
                client_kind=client_kind,
                upload_url=f"{url}/api/v1/admin/plugins/{plugin['id']}/upload",
                drain_url=f"{drain_url}/drain",
                server_pid=server.pid,
            )
            measure(client, setup, runs, results)
    summarise(results)
    return results


def measure(client: httpx.Client, setup: Setup, runs: int, results: Results) -> None:
    pid = setup.server_pid
    # Warm-up: a small upload runs every code path once (imports, thread pools).
    warm_payload = setup.work / "warm.bin"
    write_payload(warm_payload, MIB)
    warm = setup.work / "warm.tar.gz"
    build_package(warm, warm_payload, "0.0.1")
    fields = {"version": "0.0.1", "changelog": "warm-up"}
    ok(post_package(client, setup.upload_url, warm, fields, setup.client_kind)[1], 201)
    ok(post_package(client, setup.drain_url, warm, fields, setup.client_kind)[1], 201)
    warm.unlink()

    client_base = proc_status(os.getpid())["VmRSS"]
    reset_peak(os.getpid())
    results.rss_baseline = proc_status(pid)["VmRSS"]
    results.rss_hwm_reset = reset_peak(pid)
    with RssSampler(pid) as sampler:
        for index in range(1, runs + 1):
            results.runs.append(one_run(client, setup, index, runs, results))
    status = proc_status(pid)
    results.rss_peak_sampled = max(sampler.peak, status["VmRSS"])
    results.rss_hwm = status["VmHWM"]
    results.rss_samples = sampler.samples
    results.client_rss_growth = proc_status(os.getpid())["VmHWM"] - client_base


def one_run(client: httpx.Client, setup: Setup, index: int, runs: int, results: Results) -> Run:
    version = f"1.0.{index}"
    package = setup.work / f"{PLUGIN_KEY}-{version}.tar.gz"
    build_package(package, setup.payload, version)
    try:
        if index == 1:
            chunk, results.floor_calibration = fastest_floor_chunk(package)
            results.floor_chunk_bytes = chunk
            shown = ", ".join(
                f"{size // KIB} KiB {seconds:.3f} s"
                for size, seconds in results.floor_calibration.items()
            )
            print(f"floor read size: {chunk // KIB} KiB ({shown})", flush=True)
        # Every measurement on the same file, one after the other, so all find it in the
        # page cache and any drift of the machine hits all of them.
        floor, sha256 = floor_once(package, results.floor_chunk_bytes)
        floor_1mib, _ = floor_once(package, MIB)
        fields = {"version": version, "changelog": "benchmark"}
        transport, drained = post_package(
            client, setup.drain_url, package, fields, setup.client_kind
        )
        ok(drained, 201)
        cpu_before = cpu_seconds(setup.server_pid)
        seconds, response = post_package(
            client, setup.upload_url, package, fields, setup.client_kind
        )
        server_cpu = cpu_seconds(setup.server_pid) - cpu_before
        row = ok(response, 201)
        size = package.stat().st_size
        if row["sha256"] != sha256 or row["size"] != size:
            raise RuntimeError(f"the server stored other bytes than sent for {version}")
    finally:
        package.unlink()
    print(
        f"run {index}/{runs}: floor {floor:.3f} s, transport {transport:.3f} s, "
        f"upload {seconds:.3f} s ({seconds / floor:.2f}x), server CPU {server_cpu:.2f} s",
        flush=True,
    )
    return Run(version, size, floor, floor_1mib, transport, seconds, server_cpu)


def summarise(results: Results) -> None:
    def median(name: str) -> float:
        return float(statistics.median(getattr(run, name) for run in results.runs))

    results.floor_median = median("floor_seconds")
    results.floor_1mib_median = median("floor_1mib_seconds")
    results.transport_median = median("transport_seconds")
    results.upload_median = median("upload_seconds")
    results.server_cpu_median = median("server_cpu_seconds")
    results.ratio = results.upload_median / results.floor_median
    results.ratio_to_1mib_floor = results.upload_median / results.floor_1mib_median
    results.transport_ratio = results.transport_median / results.floor_median
    results.run_ratios = [r.upload_seconds / r.floor_seconds for r in results.runs]
    # VmHWM catches a spike between two samples; without the reset it is an upper bound.
    peak = max(results.rss_peak_sampled, results.rss_hwm)
    results.rss_growth = max(0, peak - results.rss_baseline)
    results.ratio_pass = results.ratio <= TARGET_RATIO
    results.rss_pass = results.rss_growth < TARGET_RSS_GROWTH_MB * MB


def report(results: Results) -> str:
    def mb(value: int) -> str:
        return f"{value / MB:.1f} MB"

    def verdict(passed: bool) -> str:
        return "PASS" if passed else "FAIL"

    package_mib = results.runs[0].package_bytes / MIB
    hwm_note = "" if results.rss_hwm_reset else " (not reset: peak since start)"
    rows = [
        ("package", f"{package_mib:.2f} MiB", f"{len(results.runs)} runs, {results.client}"),
        (
            "floor median (sha256 + inflate)",
            f"{results.floor_median:.3f} s",
            f"reads of {results.floor_chunk_bytes // KIB} KiB",
        ),
        ("floor median with 1 MiB reads", f"{results.floor_1mib_median:.3f} s", ""),
        (
            "transport median (drain only)",
            f"{results.transport_median:.3f} s",
            f"{results.transport_ratio:.2f}x the floor; context, not a target",
        ),
        ("upload median (send -> 201)", f"{results.upload_median:.3f} s", ""),
        (
            "ratio upload / floor",
            f"{results.ratio:.2f}x",
            f"{verdict(results.ratio_pass)} (target <= {TARGET_RATIO:.0f}x)",
        ),
        (
            "ratio of each run",
            f"{min(results.run_ratios):.2f}-{max(results.run_ratios):.2f}x",
            f"median {statistics.median(results.run_ratios):.2f}x",
        ),
        ("ratio upload / 1 MiB-read floor", f"{results.ratio_to_1mib_floor:.2f}x", ""),
        ("upload throughput", f"{package_mib / results.upload_median:.0f} MiB/s", ""),
        ("server CPU per upload (median)", f"{results.server_cpu_median:.2f} s", "user + system"),
        ("server RSS baseline", mb(results.rss_baseline), ""),
        (
            "server RSS peak (sampled)",
            mb(results.rss_peak_sampled),
            f"{results.rss_samples} samples",
        ),
        ("server VmHWM" + hwm_note, mb(results.rss_hwm), ""),
        (
            "server RSS growth",
            mb(results.rss_growth),
            f"{verdict(results.rss_pass)} (target < {TARGET_RSS_GROWTH_MB:.0f} MB)",
        ),
        ("client RSS growth", mb(results.client_rss_growth), ""),
    ]
    width = max(len(r[0]) for r in rows)
    value_width = max(len(r[1]) for r in rows)
    lines = [
        f"{name:<{width}}  {value:>{value_width}}  {note}".rstrip() for name, value, note in rows
    ]
    overall = verdict(results.ratio_pass and results.rss_pass)
    lines.append(f"{'overall':<{width}}  {overall:>{value_width}}")
    return "\n".join(lines)


def save(results: Results, output: Path | None) -> Path:
    text = json.dumps(asdict(results), indent=2) + "\n"
    if output is not None:
        output.write_text(text)
        return output
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.fromisoformat(results.started_at).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"upload-{stamp}.json"
    path.write_text(text)
    (RESULTS / "upload-latest.json").write_text(text)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Upload benchmark (see the module docstring).")
    parser.add_argument("--runs", type=int, default=5, help="measured uploads (default 5)")
    parser.add_argument(
        "--payload-mib", type=int, default=100, help="random payload size (default 100)"
    )
    parser.add_argument(
        "--client",
        choices=("stream", "httpx-files"),
        default="stream",
        help="stream: the form framed by hand, the file sent in 1 MiB reads (default); "
        "httpx-files: httpx's multipart encoder (64 KiB reads), as the CLI uploads",
    )
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/")
    parser.add_argument("--output", type=Path, help="write the JSON here, not to bench/results/")
    args = parser.parse_args(argv)
    if not 1 <= args.runs <= 50 or not 1 <= args.payload_mib <= 1024:
        parser.error("--runs must be 1-50 and --payload-mib 1-1024")
    work = Path(tempfile.mkdtemp(prefix="bench-upload-"))
    try:
        results = bench(args.runs, args.payload_mib * MIB, args.client, work)
    except (RuntimeError, OSError, httpx.HTTPError, subprocess.SubprocessError) as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        for log in (work / "server.log", work / "drain.log"):
            if log.exists() and log.stat().st_size:
                print(f"{log.name}:\n{log.read_text(errors='replace')[-4000:]}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(report(results))
    if not args.no_save:
        print(f"\nfigures saved to {save(results, args.output)}")
    return 0 if results.ratio_pass and results.rss_pass else 1


if __name__ == "__main__":
    sys.exit(main())
