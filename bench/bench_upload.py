"""Upload benchmark: a ~100 MiB package over HTTP against the compute floor of the same file.

Starts `marketplace serve` from this checkout (SQLite, local blobs, rate limits off) in a
temporary data folder, creates an admin and one plugin, then for each run builds a
package of a 100 MiB random payload (so it does not compress) that differs from the
others only in its manifest version, and times

* the floor: read the file once, feed it to hashlib.sha256 and zlib.decompressobj (the
  least work any correct implementation must do), and
* the upload: a streamed multipart POST to the admin upload endpoint, from the first byte
  sent until the 201 arrives,

while a thread samples the server's resident memory (VmRSS) every 20 ms. Prints a table
with PASS/FAIL against the targets and saves the figures as JSON in bench/results/.

    make bench-upload                       # or: .venv/bin/python bench/bench_upload.py
    python bench/bench_upload.py --runs 3 --payload-mib 20   # a quicker look

Exit status: 0 when both targets hold, 1 when one does not, 2 when the run failed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import platform
import shutil
import socket
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

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"

MIB = 1024 * 1024
MB = 1000 * 1000  # the RSS target is in decimal megabytes: the stricter reading
TARGET_RATIO = 2.0
TARGET_RSS_GROWTH_MB = 50.0
FLOOR_CHUNK = MIB
SAMPLE_SECONDS = 0.02
START_SECONDS = 30.0
REQUEST_SECONDS = 300.0
CLI_SECONDS = 120.0

PLUGIN_KEY = "bench-upload"
ADMIN_EMAIL = "bench-admin@example.com"
ADMIN_PASSWORD = "bench-admin-password"  # noqa: S105 - a throwaway account in a temp folder


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


def floor_once(path: Path) -> tuple[float, str]:
    """The compute floor: one read of the file, SHA-256 and gunzip of every byte."""
    start = time.perf_counter()
    hasher = hashlib.sha256()
    inflater = zlib.decompressobj(31)
    with path.open("rb", buffering=0) as src:
        while chunk := src.read(FLOOR_CHUNK):
            hasher.update(chunk)
            inflater.decompress(chunk)
    return time.perf_counter() - start, hasher.hexdigest()


# ---------------------------------------------------------------------------------------
# Server process and its memory


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


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


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "marketplace.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"marketplace {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return done.stdout


@contextlib.contextmanager
def running_server(
    env: dict[str, str], port: int, log_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "marketplace.cli.main", "serve", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_healthy(process, f"http://127.0.0.1:{port}", log_path)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def wait_healthy(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early:\n{log_path.read_text(errors='replace')}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"server did not answer /healthz within {START_SECONDS:.0f} s")


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
# API steps


def ok(response: httpx.Response, status: int = 200) -> Any:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path} answered "
            f"{response.status_code}, expected {status}: {response.text[:500]}"
        )
    return response.json()["data"]


def upload(client: httpx.Client, plugin_id: str, package: Path, version: str) -> tuple[float, Any]:
    """A streamed multipart upload (httpx reads the file object in 64 KiB pieces)."""
    with package.open("rb") as body:
        start = time.perf_counter()
        response = client.post(
            f"/api/v1/admin/plugins/{plugin_id}/upload",
            data={"version": version, "changelog": "benchmark"},
            files={"file": (package.name, body, "application/gzip")},
            timeout=REQUEST_SECONDS,
        )
        elapsed = time.perf_counter() - start
    return elapsed, ok(response, 201)


# ---------------------------------------------------------------------------------------
# The benchmark


@dataclass
class Run:
    version: str
    package_bytes: int
    floor_seconds: float
    upload_seconds: float
    server_cpu_seconds: float


@dataclass
class Results:
    started_at: str
    machine: dict[str, Any]
    payload_bytes: int
    runs: list[Run] = field(default_factory=list)
    floor_median: float = 0.0
    upload_median: float = 0.0
    ratio: float = 0.0
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


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": model,
        "cpus": os.cpu_count(),
        "git": git_describe(),
    }


def git_describe() -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return done.stdout.strip()
    return ""


def bench(runs: int, payload_bytes: int, work: Path) -> Results:
    results = Results(
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        machine=machine(),
        payload_bytes=payload_bytes,
    )
    payload = work / "payload.bin"
    print(f"writing {payload_bytes / MIB:.0f} MiB of random bytes ...", flush=True)
    write_payload(payload, payload_bytes)
    # Room for the tar headers and gzip framing on top of the incompressible payload.
    max_package_mb = max(100, -(-(payload_bytes + MIB) // MIB))
    port = free_port()
    env = server_env(work / "data", port, max_package_mb)
    url = f"http://127.0.0.1:{port}"
    with running_server(env, port, work / "server.log") as server:
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
            measure(client, plugin["id"], server.pid, payload, runs, work, results)
    summarise(results)
    return results


def measure(
    client: httpx.Client,
    plugin_id: str,
    pid: int,
    payload: Path,
    runs: int,
    work: Path,
    results: Results,
) -> None:
    # Warm-up: a small upload runs every code path once (imports, thread pools).
    warm_payload = work / "warm.bin"
    write_payload(warm_payload, MIB)
    warm = work / "warm.tar.gz"
    build_package(warm, warm_payload, "0.0.1")
    upload(client, plugin_id, warm, "0.0.1")
    warm.unlink()

    client_base = proc_status(os.getpid())["VmRSS"]
    reset_peak(os.getpid())
    results.rss_baseline = proc_status(pid)["VmRSS"]
    results.rss_hwm_reset = reset_peak(pid)
    with RssSampler(pid) as sampler:
        for index in range(1, runs + 1):
            version = f"1.0.{index}"
            package = work / f"{PLUGIN_KEY}-{version}.tar.gz"
            build_package(package, payload, version)
            # Floor and upload of the same file, one after the other, so both find it in
            # the page cache and any drift of the machine hits both.
            floor_seconds, sha256 = floor_once(package)
            cpu_before = cpu_seconds(pid)
            upload_seconds, row = upload(client, plugin_id, package, version)
            server_cpu = cpu_seconds(pid) - cpu_before
            if row["sha256"] != sha256 or row["size"] != package.stat().st_size:
                raise RuntimeError(f"the server stored other bytes than sent for {version}")
            run = Run(version, package.stat().st_size, floor_seconds, upload_seconds, server_cpu)
            results.runs.append(run)
            print(
                f"run {index}/{runs}: floor {floor_seconds:.3f} s, upload "
                f"{upload_seconds:.3f} s ({upload_seconds / floor_seconds:.2f}x), "
                f"server CPU {server_cpu:.2f} s",
                flush=True,
            )
            package.unlink()
    status = proc_status(pid)
    results.rss_peak_sampled = max(sampler.peak, status["VmRSS"])
    results.rss_hwm = status["VmHWM"]
    results.rss_samples = sampler.samples
    results.client_rss_growth = proc_status(os.getpid())["VmHWM"] - client_base


def summarise(results: Results) -> None:
    results.floor_median = statistics.median(r.floor_seconds for r in results.runs)
    results.upload_median = statistics.median(r.upload_seconds for r in results.runs)
    results.ratio = results.upload_median / results.floor_median
    results.run_ratios = [r.upload_seconds / r.floor_seconds for r in results.runs]
    results.server_cpu_median = statistics.median(r.server_cpu_seconds for r in results.runs)
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

    package_mib = results.runs[0].package_bytes / MIB if results.runs else 0
    hwm_note = "" if results.rss_hwm_reset else " (not reset: peak since start)"
    rows = [
        ("package", f"{package_mib:.2f} MiB tar.gz, {len(results.runs)} runs", ""),
        ("floor median (sha256 + inflate)", f"{results.floor_median:.3f} s", ""),
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


def save(results: Results) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = results.started_at.replace(":", "").replace("-", "").replace("+0000", "Z")
    path = RESULTS / f"upload-{stamp}.json"
    text = json.dumps(asdict(results), indent=2) + "\n"
    path.write_text(text)
    (RESULTS / "upload-latest.json").write_text(text)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5, help="measured uploads (default 5)")
    parser.add_argument(
        "--payload-mib", type=int, default=100, help="random payload size (default 100)"
    )
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/")
    args = parser.parse_args(argv)
    if not 1 <= args.runs <= 50 or not 1 <= args.payload_mib <= 1024:
        parser.error("--runs must be 1-50 and --payload-mib 1-1024")
    work = Path(tempfile.mkdtemp(prefix="bench-upload-"))
    try:
        results = bench(args.runs, args.payload_mib * MIB, work)
    except (RuntimeError, OSError, httpx.HTTPError, subprocess.SubprocessError) as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        log = work / "server.log"
        if log.exists() and log.stat().st_size:
            print(f"server log:\n{log.read_text(errors='replace')[-4000:]}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(report(results))
    if not args.no_save:
        print(f"\nfigures saved to {save(results).relative_to(REPO)}")
    return 0 if results.ratio_pass and results.rss_pass else 1


if __name__ == "__main__":
    sys.exit(main())
