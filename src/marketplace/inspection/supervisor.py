"""The process the MCP client starts for one inspection (`python -m
marketplace.inspection.supervisor <spec.json>`).

It starts `strace ... bwrap ... -- <command>` (the argv the runner built) in a session of its
own, as the sandbox's user and under rlimits, with PR_SET_PDEATHSIG so that nothing outlives
it; relays its own stdin to the server and the server's stdout back, up to a byte cap; keeps
the end of stderr; stops the sandbox at the deadline, when its stdin closes, on a flood and
on SIGTERM; and turns strace's output into observations as it comes (`trace.TraceObserver`).
At the end it writes one JSON result (observations and how the run ended) where the runner
reads it. strace writes into a FIFO in the runner's work folder and the result goes there
too: the sandbox binds neither, so the inspected code can neither reach nor forge them.

Single-threaded on purpose: `preexec_fn` is only safe without threads.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from marketplace.inspection.trace import SandboxView, TraceObserver

STDERR_TAIL_BYTES = 4096
READ_CHUNK = 65536
# How much of the server's stdout may wait for the client before the relay stops reading.
PENDING_BYTES = 1024 * 1024
# After the sandbox is stopped: time for strace to write its last lines and exit, then for
# the pipes to drain. Milliseconds in practice; the bounds are for a strace that hangs.
STOP_GRACE_SECONDS = 1.0
DRAIN_SECONDS = 1.5
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
ORPHAN_REAP_SECONDS = 0.5


@dataclass(frozen=True)
class SupervisorSpec:
    """What the runner hands the supervisor (as JSON in the work folder)."""

    argv: list[str]
    env: dict[str, str]
    uid: int | None
    gid: int | None
    rlimits: dict[str, int]
    seconds: float
    output_bytes: int
    observations_per_category: int
    trace_fifo: str
    result_path: str
    view: dict[str, Any]

    def write(self, path: Path) -> None:
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            json.dump(asdict(self), out)

    @classmethod
    def read(cls, path: Path) -> SupervisorSpec:
        return cls(**json.loads(path.read_text(encoding="utf-8")))


@dataclass
class _Outcome:
    stopped_by: str | None = None  # deadline | flood | stdin-closed | sigterm
    exit_code: int | None = None
    spawn_error: str | None = None
    output_bytes: int = 0
    stderr_tail: bytearray = field(default_factory=bytearray)


def _child_setup(rlimits: dict[int, int], parent: int) -> Callable[[], None]:
    libc = ctypes.CDLL(None, use_errno=True)  # loaded before the fork

    def setup() -> None:
        # After the uid switch (subprocess does that first), which would clear it.
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)  # the supervisor already died
        for limit, value in rlimits.items():
            resource.setrlimit(limit, (value, value))

    return setup


def _tasks_of(uid: int) -> int:
    """Tasks (threads count) whose real uid is `uid`, as RLIMIT_NPROC counts them."""
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
        except (OSError, KeyError, ValueError, IndexError):
            continue
    return count


def _rlimits(requested: dict[str, int], uid: int) -> dict[int, int]:
    """Requested limits, never above what this process may grant.

    RLIMIT_NPROC counts every task of the uid, not only the sandbox's: the tasks the uid
    already has (the service's own threads, another inspection) are added, so the sandbox
    gets its allowance whoever else runs as that user.
    """
    limits: dict[int, int] = {}
    for name, value in requested.items():
        limit = getattr(resource, name)
        if limit == resource.RLIMIT_NPROC:
            value += _tasks_of(uid)
        _, hard = resource.getrlimit(limit)
        limits[limit] = value if hard == resource.RLIM_INFINITY else min(value, hard)
    return limits


def _children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (the kernel here may lack /proc/*/children)."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _reap_orphans() -> None:
    """Reap what was reparented to us (strace is already reaped: anything left is not)."""
    deadline = time.monotonic() + ORPHAN_REAP_SECONDS
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no child left
        if pid == 0:
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)


class Supervisor:
    def __init__(self, spec: SupervisorSpec) -> None:
        self.spec = spec
        view = SandboxView(**{**spec.view, "protected": tuple(spec.view["protected"])})
        self.observer = TraceObserver(view, spec.observations_per_category)
        self.outcome = _Outcome()
        self.selector = selectors.DefaultSelector()
        self.to_child = bytearray()
        self.to_client = bytearray()
        self.child: subprocess.Popen[bytes] | None = None
        self.stop_at: float | None = None
        self.deadline = time.monotonic() + spec.seconds
        self.terminated = False
        self.open_fds: set[int] = set()
        self.trace_fd = -1
        self.trace_keep: int | None = None
        self.child_in = -1
        self.child_out = -1

    # -- life cycle ------------------------------------------------------------------------

    def run(self) -> int:
        # bwrap's PID 1 can outlive the outer bwrap for a moment: it is then ours to reap,
        # not left a zombie of an init that may never reap (a service running as PID 1).
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        try:
            self._start()
            if self.child is not None:
                self._watch(wake_read)
        finally:
            self._reap()
            self.observer.close()
            self._write_result()
        return 0

    def _reap(self) -> None:
        """Nothing of the sandbox may outlive the supervisor, whatever ended the watch."""
        child = self.child
        if child is None:
            return
        self._stop_sandbox()
        try:
            child.wait(timeout=STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        if self.outcome.exit_code is None:
            self.outcome.exit_code = child.returncode
        _reap_orphans()
        # What strace wrote before it ended is still in the FIFO.
        if self.trace_keep is not None:
            os.close(self.trace_keep)
            self.trace_keep = None
        while self.trace_fd in self.open_fds and self._on_trace(self.trace_fd):
            pass

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.terminated = True

    def _start(self) -> None:
        spec = self.spec
        fifo = Path(spec.trace_fifo)
        try:
            os.mkfifo(fifo, 0o600)
            if spec.uid is not None and spec.gid is not None:
                os.chown(fifo, spec.uid, spec.gid)
            # Our own write end keeps the FIFO from reading as ended before strace opens it.
            self.trace_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            self.open_fds.add(self.trace_fd)
            self.trace_keep = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            self.outcome.spawn_error = f"no trace FIFO: {exc}"
            return
        identity: dict[str, Any] = {}
        if spec.uid is not None:
            identity = {"user": spec.uid, "group": spec.gid, "extra_groups": []}
        try:
            self.child = subprocess.Popen(  # noqa: S603 - the argv the runner built
                spec.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=spec.env,
                cwd="/",
                start_new_session=True,
                preexec_fn=_child_setup(
                    _rlimits(spec.rlimits, spec.uid if spec.uid is not None else os.getuid()),
                    os.getpid(),
                ),
                **identity,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self.outcome.spawn_error = f"{type(exc).__name__}: {exc}"

    def _watch(self, wake_read: int) -> None:
        child = self.child
        if child is None or child.stdin is None or child.stdout is None or child.stderr is None:
            return
        self.child_in = child.stdin.fileno()
        self.child_out = child.stdout.fileno()
        child_err = child.stderr.fileno()
        for fd in (0, 1, self.child_in, self.child_out, child_err):
            os.set_blocking(fd, False)
        self.open_fds |= {0, 1, self.child_in, self.child_out, child_err}
        self.selector.register(wake_read, selectors.EVENT_READ, self._on_wake)
        self.selector.register(0, selectors.EVENT_READ, self._on_stdin)
        self.selector.register(self.child_out, selectors.EVENT_READ, self._on_stdout)
        self.selector.register(child_err, selectors.EVENT_READ, self._on_stderr)
        self.selector.register(self.trace_fd, selectors.EVENT_READ, self._on_trace)
        readers = {self.trace_fd, self.child_out, child_err}
        while True:
            now = time.monotonic()
            if self.terminated:
                # The client gives up on us soon after SIGTERM: stop, and let _reap finish.
                self._stop("sigterm")
                return
            if now >= self.deadline:
                self._stop("deadline")
            if child.poll() is not None:
                self._child_exited()
                if not readers & self.open_fds and (not self.to_client or 1 not in self.open_fds):
                    return
            if self.stop_at is not None:
                if now > self.stop_at + STOP_GRACE_SECONDS and child.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child.pid, signal.SIGKILL)
                if now > self.stop_at + STOP_GRACE_SECONDS + DRAIN_SECONDS:
                    return
            self._update_interest()
            timeout = max(0.0, min(self.deadline - now, 0.2))
            for key, events in self.selector.select(timeout):
                if events & selectors.EVENT_WRITE:
                    self._on_writable(key.fd)
                else:
                    key.data(key.fd)

    def _child_exited(self) -> None:
        if self.outcome.exit_code is None and self.child is not None:
            self.outcome.exit_code = self.child.returncode
        # strace is gone: once the FIFO is drained it reads as ended.
        if self.trace_keep is not None:
            os.close(self.trace_keep)
            self.trace_keep = None
        if self.stop_at is None:
            self.stop_at = time.monotonic()
        self._close(self.child_in)
        self.to_child.clear()

    def _stop(self, reason: str) -> None:
        if self.stop_at is not None:
            return
        child = self.child
        if reason == "stdin-closed" and child is not None and self.child_out not in self.open_fds:
            # The server ended first (its stdout closed, then the client left): an exit.
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=STOP_GRACE_SECONDS)
            if child.returncode is not None:
                self._child_exited()
                return
        self.outcome.stopped_by = reason
        self.stop_at = time.monotonic()
        self._stop_sandbox()
        self._close(0)

    def _stop_sandbox(self) -> None:
        """Kill the sandbox's PID 1 (bwrap's second process: the namespace dies with it),
        else bwrap itself. The outer bwrap then reaps it and exits, and strace writes its
        last lines and exits by itself: nothing is orphaned, nothing lost from the trace
        (killed with the rest, strace would lose what it still buffers)."""
        child = self.child
        if child is None or child.poll() is not None:
            return
        outer = _children(child.pid)
        targets = [inner for pid in outer for inner in _children(pid)] or outer
        for pid in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not targets:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)

    # -- relaying ------------------------------------------------------------------------

    def _read(self, fd: int) -> bytes | None:
        """A chunk, b"" when nothing is ready, None at the end (and the fd is closed)."""
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return b""
        except OSError:
            data = b""
        if not data:
            self._close(fd)
            return None
        return data

    def _close(self, fd: int) -> None:
        if fd not in self.open_fds:
            return
        self.open_fds.discard(fd)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(fd)
        with contextlib.suppress(OSError):
            os.close(fd)

    def _on_wake(self, fd: int) -> None:
        with contextlib.suppress(OSError):
            os.read(fd, 512)

    def _on_stdin(self, fd: int) -> None:
        data = self._read(fd)
        if data is None:
            self._stop("stdin-closed")
        elif self.child_in in self.open_fds:
            self.to_child += data

    def _on_stdout(self, fd: int) -> None:
        data = self._read(fd)
        if not data:
            return
        allowed = self._count(len(data))
        if 1 in self.open_fds:
            self.to_client += data[:allowed]

    def _on_stderr(self, fd: int) -> None:
        data = self._read(fd)
        if not data:
            return
        self._count(len(data))
        tail = self.outcome.stderr_tail
        tail += data
        del tail[:-STDERR_TAIL_BYTES]

    def _count(self, size: int) -> int:
        """Bytes of this chunk within the output cap; over it the sandbox is stopped."""
        before = self.outcome.output_bytes
        self.outcome.output_bytes = before + size
        if self.outcome.output_bytes > self.spec.output_bytes:
            self._stop("flood")
        return max(0, min(size, self.spec.output_bytes - before))

    def _on_trace(self, fd: int) -> bool:
        data = self._read(fd)
        if data:
            self.observer.feed(data)
        return bool(data)

    def _update_interest(self) -> None:
        """Wait to write only where something is pending; stop reading a side that is behind."""
        if self.child_out not in self.open_fds and not self.to_client:
            self._close(1)
        self._interest(self.child_in, selectors.EVENT_WRITE if self.to_child else 0, None)
        self._interest(1, selectors.EVENT_WRITE if self.to_client else 0, None)
        stdin_full = len(self.to_child) > PENDING_BYTES
        client_full = len(self.to_client) > PENDING_BYTES
        self._interest(0, 0 if stdin_full else selectors.EVENT_READ, self._on_stdin)
        self._interest(self.child_out, 0 if client_full else selectors.EVENT_READ, self._on_stdout)

    def _interest(self, fd: int, events: int, handler: Callable[[int], object] | None) -> None:
        if fd not in self.open_fds:
            return
        registered = self.selector.get_map().get(fd)
        if registered is not None and not events:
            self.selector.unregister(fd)
        elif registered is None and events:
            self.selector.register(fd, events, handler)

    def _on_writable(self, fd: int) -> None:
        pending = self.to_child if fd == self.child_in else self.to_client
        try:
            written = os.write(fd, pending)
        except BlockingIOError:
            return
        except OSError:
            # The reader is gone (the server closed its stdin, the client left).
            pending.clear()
            self._close(fd)
            return
        del pending[:written]

    # -- result --------------------------------------------------------------------------

    def _write_result(self) -> None:
        outcome = self.outcome
        result = {
            "observed": self.observer.observed(),
            "sandboxStarted": self.observer.sandbox_started,
            "traceLines": self.observer.lines,
            "stoppedBy": outcome.stopped_by,
            "exitCode": outcome.exit_code,
            "spawnError": outcome.spawn_error,
            "outputBytes": outcome.output_bytes,
            "stderr": outcome.stderr_tail.decode("utf-8", "replace"),
        }
        path = Path(self.spec.result_path)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(result), encoding="utf-8")
        partial.replace(path)


def trial(argv: list[str], uid: int | None) -> int:
    """Run the availability check's sandbox (`argv`) as `uid`, and reap what it orphans."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)
    identity: dict[str, Any] = {}
    if uid is not None:
        identity = {"user": uid, "group": uid, "extra_groups": []}
    try:
        done = subprocess.run(argv, check=False, cwd="/", **identity)  # noqa: S603 - the runner's
    except OSError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    _reap_orphans()
    return done.returncode


USAGE = "usage: python -m marketplace.inspection.supervisor <spec.json> | --trial <uid|-> <argv>"


def main(argv: list[str]) -> int:
    if len(argv) > 3 and argv[1] == "--trial":
        return trial(argv[3:], None if argv[2] == "-" else int(argv[2]))
    if len(argv) != 2:
        print(USAGE, file=sys.stderr)
        return 2
    return Supervisor(SupervisorSpec.read(Path(argv[1]))).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
