"""Observations from strace's output (CONTRACT 13): what the sandboxed process tree tried.

The supervisor runs `strace -f -qq --seccomp-bpf -xx -y --decode-pids=pidns` over bwrap and
feeds its output here as it comes. Every string and every file-descriptor path is printed in
hex (`-xx`), so no byte of the traced program can forge a quote, a parenthesis or a line of
its own. Nothing is kept per line: the observer keeps bounded tables (processes, sockets,
symlinks) and at most `cap` distinct entries per category.

What is recorded, from attempts whether or not they succeed:

- network: `connect`, `sendto`, `sendmsg`, `sendmmsg` to an IPv4/IPv6 address that is not
  loopback (or unspecified) -> `{host: address, port}`. DNS look-ups: a datagram sent to
  port 53 (the sandbox's resolv.conf names 127.0.0.1, where nothing answers) is parsed as a
  DNS query -> `{host: name, port: None}`; `localhost` names are not look-ups.
- filesWritten: `open`/`openat`/`openat2` with a write flag, `creat`, and the
  mkdir/mknod/unlink/rmdir/rename/link/symlink/truncate families, outside the sandbox's
  HOME, temp folder and package folder; relative paths are resolved against the directory
  strace shows (`AT_FDCWD<cwd>`, a directory fd's path) or the tracked working directory
  (chdir/fchdir, inherited on fork). Devices and the process's own /proc entries
  (/dev/null, /dev/pts/*, /dev/shm/*, /proc/self/*, ...) and Python bytecode caches are
  not files written.
- sensitiveReads: any open of a sensitive path (`_is_sensitive`), whatever its mode, as the
  path was opened; a path is also checked after following the symlinks the observer can
  see (the package's, the system's, those the tree created in its temp folders) and the
  path strace shows for the opened descriptor.
- processes: programs executed after the command, by this rule:
    1. The command's own process (the first program the sandbox runs), until it first
       starts another process (a fork; threads do not count), is the command: what it
       executes then (a shebang's interpreter, `/usr/bin/env node`, a wrapper script's
       `exec`) is not listed, and every program it ran then (and, for a script, its
       shebang interpreter) becomes one of "the command's programs".
    2. Any later execution of one of the command's programs (the same file after
       following symlinks), in any process, is the command re-executing its interpreter
       (a worker child of the same Python, `child_process.fork` in Node) and is not listed.
    3. Everything else is listed, as the path passed to execve (resolved against the
       working directory). PATH probing is collapsed: per process, consecutive attempts
       of the same file name count once, as the attempt that succeeded, else the last.
"""

from __future__ import annotations

import ipaddress
import os
import posixpath
import re
import stat
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# The syscalls strace is asked to trace (with --seccomp-bpf only these stop the tracee).
TRACED_SYSCALLS = (
    "execve,execveat,clone,clone3,fork,vfork,chdir,fchdir,"
    "connect,sendto,sendmsg,sendmmsg,write,writev,"
    "open,openat,openat2,creat,mkdir,mkdirat,mknod,mknodat,unlink,unlinkat,rmdir,"
    "rename,renameat,renameat2,link,linkat,symlink,symlinkat,truncate"
)

MAX_LINE_BYTES = 64 * 1024
MAX_PIDS = 4096
# Calls left unfinished by a process that never resumes them (killed) must not pile up.
MAX_PENDING = 1024
MAX_PENDING_BYTES = 16 * 1024
MAX_SOCKETS = 4096
MAX_SYMLINKS = 1024
MAX_PATH_CHARS = 4096
SYMLINK_HOPS = 40
SHEBANG_BYTES = 256
SANDBOX_PATH_DIRS = ("/usr/local/bin", "/usr/bin", "/bin")

# Host folders the sandbox sees unchanged (read-only binds or the host's own symlinks).
SYSTEM_PREFIXES = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")

IGNORED_WRITE_PATHS = frozenset(
    {
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/tty",
        "/dev/ptmx",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
    }
)
IGNORED_WRITE_PREFIXES = (
    "/dev/pts/",
    "/dev/shm/",  # noqa: S108 - the sandbox's own tmpfs
    "/dev/fd/",
    "/dev/mqueue/",
    "/proc/self/",
    "/proc/thread-self/",
)

# Relative to a home folder (`~` = the sandbox's HOME, /root or /home/<anyone>).
HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".netrc",
    ".gnupg",
    ".azure",
    ".docker/config.json",
    ".kube/config",
    ".git-credentials",
    ".pgpass",
    ".config/gh/hosts.yml",
    # Browser profiles (cookies, saved passwords).
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".config/opera",
    "snap/firefox",
    "snap/chromium",
    ".var/app/org.mozilla.firefox",
    ".var/app/com.google.Chrome",
    # Other MCP clients' configuration (their servers' keys live there).
    ".cursor",
    ".config/Claude",
    ".claude.json",
    ".claude",
    ".codeium/windsurf",
    ".config/Code/User/mcp.json",
    ".gemini/settings.json",
    ".codex/config.toml",
)
# Anywhere in the tree.
SECRET_SUFFIXES = ("/.vscode/mcp.json", "/.cursor/mcp.json", "/claude_desktop_config.json")
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-")

_LINE = re.compile(r"^(\d+)\s+(.*)$")
_CALL = re.compile(r"^([a-z0-9_]+)\((.*)\)\s+=\s+(.*)$")
_RESUMED = re.compile(r"^<\.\.\. ([a-z0-9_]+) resumed>(.*)$")
_UNFINISHED = " <unfinished ...>"
_HEX_STRING = re.compile(r'"((?:\\x[0-9a-f]{2})*)"(\.\.\.)?')
_FD = re.compile(r"^(AT_FDCWD|-?\d+)(?:<((?:\\x[0-9a-f]{2})*)>)?$")
_HOST_PID = re.compile(r"/\* (\d+) in strace's PID NS \*/")
_INET = re.compile(
    r'sin_port=htons\((\d+)\), sin_addr=inet_addr\("((?:\\x[0-9a-f]{2})*)"\)'
    r'|sin6_port=htons\((\d+)\).*?inet_pton\(AF_INET6, "((?:\\x[0-9a-f]{2})*)"'
)
_OPENAT2_FLAGS = re.compile(r"flags=([A-Z0-9_|x]+)")
_WRITE_FLAGS = frozenset({"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND", "O_TMPFILE"})

# Which argument holds the path a write-family call changes (dirfd, path) by syscall.
_WRITTEN_ARG: dict[str, tuple[int | None, int]] = {
    "creat": (None, 0),
    "mkdir": (None, 0),
    "mkdirat": (0, 1),
    "mknod": (None, 0),
    "mknodat": (0, 1),
    "unlink": (None, 0),
    "unlinkat": (0, 1),
    "rmdir": (None, 0),
    "rename": (None, 1),
    "renameat": (2, 3),
    "renameat2": (2, 3),
    "link": (None, 1),
    "linkat": (2, 3),
    "symlink": (None, 1),
    "symlinkat": (1, 2),
    "truncate": (None, 0),
}
# The source of a rename or unlink is changed too.
_SOURCE_ARG: dict[str, tuple[int | None, int]] = {
    "rename": (None, 0),
    "renameat": (0, 1),
    "renameat2": (0, 1),
}
_CLONES = frozenset({"clone", "clone3", "fork", "vfork"})
_SENDS = frozenset({"sendto", "sendmsg", "sendmmsg", "write", "writev"})


def _unhex(text: str) -> bytes:
    return bytes.fromhex(text.replace("\\x", ""))


def _text(raw: bytes) -> str:
    # Paths are bytes; undecodable ones stay readable and distinct.
    return raw.decode("utf-8", "backslashreplace")[:MAX_PATH_CHARS]


def split_args(args: str) -> list[str]:
    """Top-level arguments of a strace call (strings are hex, so only brackets nest)."""
    parts: list[str] = []
    depth = 0
    start = 0
    for index, char in enumerate(args):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(args[start:index].strip())
            start = index + 1
    tail = args[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def _string(arg: str) -> str | None:
    match = _HEX_STRING.fullmatch(arg)
    if match is None:
        return None
    value = _text(_unhex(match.group(1)))
    return value + "..." if match.group(2) else value


def _fd_path(arg: str) -> tuple[str | None, str | None]:
    """(`AT_FDCWD` or the fd number, the path strace showed for it)."""
    match = _FD.match(arg)
    if match is None:
        return None, None
    shown = _text(_unhex(match.group(2))) if match.group(2) is not None else None
    return match.group(1), shown


def parse_dns_query(data: bytes) -> str | None:
    """The first question's name of a DNS query message (UDP, or TCP with its length)."""
    for payload in (data, data[2:]):
        name = _dns_name(payload)
        if name is not None:
            return name
    return None


def _dns_name(data: bytes) -> str | None:
    if len(data) < 17:
        return None
    flags = int.from_bytes(data[2:4], "big")
    questions = int.from_bytes(data[4:6], "big")
    if flags & 0x8000 or ((flags >> 11) & 0xF) != 0 or questions == 0:
        return None  # a response, not a standard query, or no question
    labels: list[str] = []
    offset = 12
    while True:
        if offset >= len(data):
            return None
        length = data[offset]
        offset += 1
        if length == 0:
            break
        if length > 63 or offset + length > len(data):
            return None
        label = data[offset : offset + length]
        offset += length
        labels.append(
            "".join(chr(b) if 0x21 <= b <= 0x7E and b != 0x2E else f"\\{b:03d}" for b in label)
        )
    if offset + 4 > len(data) or not labels:
        return None
    name = ".".join(labels).lower()
    return name if len(name) <= 1024 else None


def _is_local(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def _display_address(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _normalize(path: str) -> str:
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


@dataclass(frozen=True)
class SandboxView:
    """How the sandbox's paths look: the package folder, HOME, temp, and the host paths
    the observer may read to follow symlinks and shebangs (the package and the system)."""

    plugin_dir: str
    home: str
    tmp: str
    package_host_dir: str
    protected: tuple[str, ...] = ()

    def host_path(self, path: str) -> str | None:
        """The host path of a sandbox path the sandbox sees unchanged, else None."""
        if _under(path, self.plugin_dir):
            return self.package_host_dir + path[len(self.plugin_dir) :]
        if any(_under(path, prefix) for prefix in SYSTEM_PREFIXES):
            return path
        return None


@dataclass
class _Process:
    tgid: int
    cwd: str


@dataclass
class _ExecGroup:
    """One program start in one process: the PATH probing attempts of one file name."""

    name: str
    slot: int
    succeeded: bool


@dataclass
class _Category:
    cap: int
    items: dict[str, Any] = field(default_factory=dict)
    dropped: bool = False  # more distinct observations than the cap

    def add(self, key: str, value: Any) -> None:
        if key in self.items:
            return
        if len(self.items) < self.cap:
            self.items[key] = value
        else:
            self.dropped = True

    def values(self) -> list[Any]:
        return list(self.items.values())


class TraceObserver:
    """Turns strace's output, fed in chunks, into CONTRACT 13's observations."""

    def __init__(self, view: SandboxView, cap: int) -> None:
        self.view = view
        self.cap = cap
        self._buffer = bytearray()
        self._skipping = False  # inside a line longer than MAX_LINE_BYTES
        self._pending: dict[int, str] = {}
        self._root_pid: int | None = None
        self._start_pid: int | None = None
        self._excluded: set[int] = set()
        self._seen_before_start: set[int] = set()
        self._processes: OrderedDict[int, _Process] = OrderedDict()
        self._pending_clones: OrderedDict[int, None] = OrderedDict()
        self._sockets: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self._symlinks: OrderedDict[str, str] = OrderedDict()
        self._in_start_chain = True
        self._command_programs: set[str] = set()
        self._canonical_cache: dict[str, str] = {}
        self._exec_slots: list[str] = []
        self._listed: set[str] = set()  # paths that took a slot by a successful exec
        self._exec_groups: dict[int, _ExecGroup] = {}
        self.network = _Category(cap)
        self.files_written = _Category(cap)
        self.sensitive_reads = _Category(cap)
        self.lines = 0

    # -- input ---------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        self._buffer += data
        while True:
            newline = self._buffer.find(b"\n")
            if newline < 0:
                if len(self._buffer) > MAX_LINE_BYTES:
                    # A line this long is not one we need; drop it up to its end.
                    self._skipping = True
                    self._buffer.clear()
                return
            line = bytes(self._buffer[:newline])
            del self._buffer[: newline + 1]
            if self._skipping:
                self._skipping = False
                continue
            self._line(line.decode("ascii", "replace"))

    def close(self) -> None:
        if self._buffer and not self._skipping:
            self._line(bytes(self._buffer).decode("ascii", "replace"))
        self._buffer.clear()

    def observed(self) -> dict[str, list[Any]]:
        """The observations so far, in CONTRACT 13's JSON form."""
        processes = _Category(self.cap)
        for path in self._exec_slots:
            if path and self._canonical(path) not in self._command_programs:
                processes.add(path, path)
        # Hosts past the cap are unknown: they need `network:*`, which an entry for host `*`
        # says, so a server cannot hide a connection behind many covered look-ups.
        overflow = [{"host": "*", "port": None}] if self.network.dropped else []
        return {
            "network": self.network.values() + overflow,
            "filesWritten": self.files_written.values(),
            "processes": processes.values(),
            "sensitiveReads": self.sensitive_reads.values(),
        }

    @property
    def sandbox_started(self) -> bool:
        return self._start_pid is not None

    # -- lines ---------------------------------------------------------------------------

    def _line(self, line: str) -> None:
        match = _LINE.match(line)
        if match is None:
            return
        self.lines += 1
        pid = int(match.group(1))
        rest = match.group(2)
        if rest.startswith(("+++", "---")):
            return
        if rest.endswith(_UNFINISHED):
            head = rest[: -len(_UNFINISHED)]
            if len(head) <= MAX_PENDING_BYTES:
                self._pending[pid] = head
            if rest.startswith(("clone", "fork", "vfork")):
                self._pending_clones[pid] = None
                self._pending_clones.move_to_end(pid)
                while len(self._pending_clones) > MAX_PENDING:
                    self._pending_clones.popitem(last=False)
            while len(self._pending) > MAX_PENDING:
                self._pending.pop(next(iter(self._pending)))
            return
        resumed = _RESUMED.match(rest)
        if resumed is not None:
            self._pending_clones.pop(pid, None)
            head = self._pending.pop(pid, None)
            if head is None:
                return
            rest = head + resumed.group(2)
        call = _CALL.match(rest)
        if call is None:
            return
        self._call(pid, call.group(1), call.group(2), call.group(3))

    def _call(self, pid: int, name: str, args_text: str, result: str) -> None:
        if self._root_pid is None:
            self._root_pid = pid  # bwrap itself: strace's first line is its execve
        if self._start_pid is None:
            if name in ("execve", "execveat") and pid != self._root_pid:
                self._start(pid)
            else:
                self._seen_before_start.add(pid)
                return
        if pid in self._excluded:
            return
        process = self._process(pid)
        ok = not result.startswith(("-1", "?"))
        if name in _SENDS:
            # Most are writes to files and pipes: look at the first argument only.
            self._send(args_text)
        elif name in _CLONES:
            if ok:
                self._cloned(process, name, args_text, result)
        elif name in ("execve", "execveat"):
            self._exec(pid, process, name, split_args(args_text), ok)
        elif name in ("chdir", "fchdir"):
            if ok:
                self._chdir(process, name, split_args(args_text))
        elif name == "connect":
            self._connect(split_args(args_text))
        elif name in ("open", "openat", "openat2"):
            self._open(process, name, split_args(args_text), result if ok else None)
        elif name in _WRITTEN_ARG:
            self._written(process, name, split_args(args_text))

    def _start(self, pid: int) -> None:
        """The first execve not by bwrap's own process: the command starts."""
        self._start_pid = pid
        self._excluded = self._seen_before_start - {pid}
        self._seen_before_start = set()
        self._processes[pid] = _Process(tgid=pid, cwd=self.view.plugin_dir)

    def _process(self, pid: int) -> _Process:
        process = self._processes.get(pid)
        if process is None:
            # First seen before its parent's clone returned (vfork, threads): it shares
            # the working directory of the process that is cloning.
            cwd = self.view.plugin_dir
            for parent in reversed(self._pending_clones):
                known = self._processes.get(parent)
                if known is not None:
                    cwd = known.cwd
                    break
            process = _Process(tgid=pid, cwd=cwd)
            self._processes[pid] = process
            while len(self._processes) > MAX_PIDS:
                self._processes.popitem(last=False)
        return process

    # -- processes -----------------------------------------------------------------------

    def _cloned(self, parent: _Process, name: str, args: str, result: str) -> None:
        translated = _HOST_PID.search(result)
        try:
            child = int(translated.group(1)) if translated else int(result.split()[0])
        except ValueError:
            return
        thread = name in ("clone", "clone3") and "CLONE_THREAD" in args
        known = self._processes.get(child)
        if known is None:
            self._processes[child] = _Process(tgid=parent.tgid if thread else child, cwd=parent.cwd)
        elif thread:
            known.tgid = parent.tgid
        if not thread and parent.tgid == self._start_pid:
            self._in_start_chain = False

    def _exec(self, pid: int, process: _Process, name: str, args: list[str], ok: bool) -> None:
        if name == "execveat":
            path = self._resolve(process, args[0] if args else "", args[1] if len(args) > 1 else "")
            if path is None and len(args) > 1 and _string(args[1]) == "":
                path = self._dir_path(process, args[0])
        else:
            path = self._resolve(process, None, args[0] if args else "")
        if path is None:
            return
        if self._in_start_chain and process.tgid == self._start_pid:
            if ok:
                self._add_command_program(path)
            return
        base = posixpath.basename(path)
        group = self._exec_groups.get(pid)
        if group is not None and group.name == base and not group.succeeded:
            self._exec_slots[group.slot] = path
            group.succeeded = ok
            return
        # A program the command runs again, or one listed already, takes no slot: the slots
        # cannot be filled with repeats to hide the next program.
        if ok and (path in self._listed or self._canonical(path) in self._command_programs):
            self._exec_groups.pop(pid, None)
            return
        if len(self._exec_slots) >= 8 * self.cap:
            return
        if ok:
            self._listed.add(path)
        self._exec_slots.append(path)
        self._exec_groups[pid] = _ExecGroup(name=base, slot=len(self._exec_slots) - 1, succeeded=ok)
        if len(self._exec_groups) > MAX_PIDS:
            self._exec_groups.pop(next(iter(self._exec_groups)))

    def _add_command_program(self, path: str, depth: int = 0) -> None:
        canonical = self._canonical(path)
        if canonical in self._command_programs or depth > 4:
            return
        self._command_programs.add(canonical)
        for interpreter in self._shebang(canonical):
            self._add_command_program(interpreter, depth + 1)

    def _shebang(self, canonical: str) -> list[str]:
        """The interpreter (and for `env`, the program it runs) of a script, if readable."""
        host = self.view.host_path(canonical)
        if host is None:
            return []
        try:
            fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return []
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return []
            head = os.read(fd, SHEBANG_BYTES)
        except OSError:
            return []
        finally:
            os.close(fd)
        if not head.startswith(b"#!"):
            return []
        words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
        if not words or not words[0].startswith("/"):
            return []
        found = [words[0]]
        if posixpath.basename(words[0]) == "env":
            program = next((w for w in words[1:] if not w.startswith("-") and "=" not in w), None)
            if program is not None:
                found += self._on_path(program)
        return found

    def _on_path(self, program: str) -> list[str]:
        if "/" in program:
            return [program]
        for folder in SANDBOX_PATH_DIRS:
            candidate = f"{folder}/{program}"
            host = self.view.host_path(candidate)
            if host is not None and os.path.isfile(host) and os.access(host, os.X_OK):
                return [candidate]
        return []

    def _canonical(self, path: str) -> str:
        """The path after following the symlinks the observer can see."""
        cached = self._canonical_cache.get(path)
        if cached is not None:
            return cached
        parts = [part for part in path.split("/") if part]
        resolved: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == ".":
                continue
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = "/" + "/".join([*resolved, part])
            target = self._link_target(candidate) if hops < SYMLINK_HOPS else None
            if target is not None:
                hops += 1
                if target.startswith("/"):
                    resolved = []
                parts = [p for p in target.split("/") if p] + parts
                continue
            resolved.append(part)
        canonical = "/" + "/".join(resolved)
        if len(self._canonical_cache) < 4096:
            self._canonical_cache[path] = canonical
        return canonical

    def _link_target(self, path: str) -> str | None:
        created = self._symlinks.get(path)
        if created is not None:
            return created
        host = self.view.host_path(path)
        if host is None:
            return None
        try:
            return os.readlink(host)
        except OSError:
            return None

    # -- paths ---------------------------------------------------------------------------

    def _dir_path(self, process: _Process, fd_arg: str) -> str | None:
        fd, shown = _fd_path(fd_arg)
        if fd == "AT_FDCWD":
            if shown and shown.startswith("/"):
                process.cwd = shown
            return process.cwd
        if shown and shown.startswith("/"):
            return shown
        return None

    def _resolve(self, process: _Process, fd_arg: str | None, path_arg: str) -> str | None:
        path = _string(path_arg)
        if path is None:
            return None
        if fd_arg is not None:
            base = self._dir_path(process, fd_arg)  # also refreshes the cwd from AT_FDCWD<>
        else:
            base = process.cwd
        if path.startswith("/"):
            return _normalize(path)
        if not path or base is None:
            return None
        return _normalize(f"{base}/{path}")

    def _chdir(self, process: _Process, name: str, args: list[str]) -> None:
        if not args:
            return
        if name == "fchdir":
            _, shown = _fd_path(args[0])
            if shown and shown.startswith("/"):
                process.cwd = shown
            return
        path = self._resolve(process, None, args[0])
        if path is not None:
            process.cwd = path

    # -- files ---------------------------------------------------------------------------

    def _open(self, process: _Process, name: str, args: list[str], result: str | None) -> None:
        if name == "open":
            path = self._resolve(process, None, args[0] if args else "")
            flags = args[1] if len(args) > 1 else ""
        else:
            path = self._resolve(process, args[0] if args else "", args[1] if len(args) > 1 else "")
            flags = args[2] if len(args) > 2 else ""
            if name == "openat2":
                found = _OPENAT2_FLAGS.search(flags)
                flags = found.group(1) if found else ""
        if path is None:
            return
        opened = None
        if result is not None:
            _, shown = _fd_path(result.split(" ", 1)[0])
            opened = shown if shown and shown.startswith("/") else None
        candidates = self._candidates(path, opened)
        if any(self._is_sensitive(candidate) for candidate in candidates):
            self.sensitive_reads.add(path, path)
        if _WRITE_FLAGS.intersection(flags.split("|")):
            self._maybe_written(candidates)

    def _written(self, process: _Process, name: str, args: list[str]) -> None:
        for table in (_WRITTEN_ARG, _SOURCE_ARG):
            where = table.get(name)
            if where is None:
                continue
            fd_index, path_index = where
            if len(args) <= path_index:
                continue
            fd_arg = args[fd_index] if fd_index is not None else None
            path = self._resolve(process, fd_arg, args[path_index])
            if path is None:
                continue
            if name in ("symlink", "symlinkat") and table is _WRITTEN_ARG:
                target = _string(args[0])
                if target is not None:
                    self._remember_symlink(path, target)
            # These change the last component itself (truncate follows it, as open does).
            self._maybe_written(self._candidates(path, None, follow=name == "truncate"))

    def _remember_symlink(self, path: str, target: str) -> None:
        self._symlinks[path] = target
        self._canonical_cache.clear()
        while len(self._symlinks) > MAX_SYMLINKS:
            self._symlinks.popitem(last=False)

    def _candidates(self, path: str, opened: str | None, follow: bool = True) -> list[str]:
        found = [path]
        if follow:
            canonical = self._canonical(path)
        else:
            parent, base = posixpath.split(path)
            canonical = posixpath.join(self._canonical(parent), base)
        if canonical != path:
            found.append(canonical)
        if opened is not None and opened not in found:
            found.append(opened)
        return found

    def _maybe_written(self, candidates: Iterable[str]) -> None:
        for candidate in candidates:
            if self._outside(candidate):
                self.files_written.add(candidate, candidate)
                return

    def _outside(self, path: str) -> bool:
        view = self.view
        if any(_under(path, folder) for folder in (view.home, view.tmp, view.plugin_dir)):
            return False
        if path in IGNORED_WRITE_PATHS or path.startswith(IGNORED_WRITE_PREFIXES):
            return False
        # Python's bytecode cache next to a system module: a cache, not a change.
        return not ("/__pycache__" in path and _under(path, "/usr"))

    def _is_sensitive(self, path: str) -> bool:
        if any(_under(path, protected) for protected in self.view.protected):
            return True
        if path in SYSTEM_SECRETS or path.startswith("/etc/ssh/ssh_host_"):
            return not path.endswith(".pub")
        base = posixpath.basename(path)
        if base == ".env" or base.startswith(".env."):
            return True
        if path.endswith(SECRET_SUFFIXES):
            return True
        relative = self._in_home(path)
        return relative is not None and any(_under(relative, secret) for secret in HOME_SECRETS)

    def _in_home(self, path: str) -> str | None:
        home = self.view.home.rstrip("/")
        if path.startswith(home + "/"):
            return path[len(home) + 1 :]
        if path.startswith("/root/"):
            return path[len("/root/") :]
        if path.startswith("/home/"):
            parts = path.split("/", 3)
            return parts[3] if len(parts) == 4 else None
        return None

    # -- network -------------------------------------------------------------------------

    def _connect(self, args: list[str]) -> None:
        if len(args) < 2:
            return
        destination = self._address(args[1])
        if destination is None:
            return
        socket_id = _fd_path(args[0])[1]
        if socket_id is not None:
            self._sockets[socket_id] = destination
            self._sockets.move_to_end(socket_id)
            while len(self._sockets) > MAX_SOCKETS:
                self._sockets.popitem(last=False)
        self._record_connection(destination)

    def _send(self, args_text: str) -> None:
        socket_id = _fd_path(args_text.split(",", 1)[0])[1]
        if socket_id is None or not socket_id.startswith("socket:"):
            return  # a write to a file or pipe: not network
        explicit = [self._address(match.group(0)) for match in _INET.finditer(args_text)]
        destinations = [d for d in explicit if d is not None]
        if not destinations:
            connected = self._sockets.get(socket_id)
            destinations = [connected] if connected is not None else []
        for destination in destinations:
            self._record_connection(destination)
        if not any(port == 53 for _, port in destinations):
            return
        for match in _HEX_STRING.finditer(args_text):
            name_asked = parse_dns_query(_unhex(match.group(1)))
            if name_asked is not None and not _is_localhost(name_asked):
                self.network.add(f"dns:{name_asked}", {"host": name_asked, "port": None})

    def _address(self, text: str) -> tuple[str, int] | None:
        match = _INET.search(text)
        if match is None:
            return None
        if match.group(1) is not None:
            return _text(_unhex(match.group(2))), int(match.group(1))
        return _text(_unhex(match.group(4))), int(match.group(3))

    def _record_connection(self, destination: tuple[str, int]) -> None:
        address, port = destination
        if _is_local(address):
            return
        host = _display_address(address)
        self.network.add(f"ip:{host}:{port}", {"host": host, "port": port})


def _is_localhost(name: str) -> bool:
    return name == "localhost" or name.endswith(".localhost")
