"""The strace parser (`inspection.trace`) on hand-written strace lines: no sandbox needed.

Lines are written as `strace -f -qq -xx -y --decode-pids=pidns` prints them: every string
and every descriptor's path in hex."""

from __future__ import annotations

from pathlib import Path

from marketplace.inspection.trace import SandboxView, TraceObserver, parse_dns_query

BWRAP = 100  # bwrap itself: strace's first process
INIT = 101  # bwrap's PID 1 in the sandbox
COMMAND = 102  # the command


def h(text: str | bytes) -> str:
    """A string as strace -xx prints it."""
    data = text.encode() if isinstance(text, str) else text
    return '"' + "".join(f"\\x{byte:02x}" for byte in data) + '"'


def fd(number: int | str, path: str) -> str:
    """A descriptor as strace -y -xx prints it."""
    return f"{number}<" + "".join(f"\\x{byte:02x}" for byte in path.encode()) + ">"


def observer(tmp_path: Path, cap: int = 200, protected: tuple[str, ...] = ()) -> TraceObserver:
    package = tmp_path / "package"
    package.mkdir(exist_ok=True)
    view = SandboxView("/plugin", "/home/inspect", "/tmp", str(package), protected)
    watcher = TraceObserver(view, cap)
    watcher.feed(
        "\n".join(
            [
                f"{BWRAP} execve({h('/opt/bwrap')}, [{h('bwrap')}], 0x7ffd /* 3 vars */) = 0",
                # bwrap builds the sandbox: none of this is the plugin's doing.
                f"{BWRAP} clone(child_stack=NULL, flags=CLONE_NEWNS|CLONE_NEWPID|SIGCHLD) = {INIT}",
                f"{INIT} mkdir({h('/newroot/usr')}, 0755) = 0",
                f"{INIT} openat(AT_FDCWD, {h('/proc/self/uid_map')}, O_RDWR) = 5",
                f"{INIT} clone(child_stack=NULL, flags=SIGCHLD) = 2 /* {COMMAND} in strace's PID NS */",
                "",
            ]
        ).encode()
    )
    return watcher


def feed(watcher: TraceObserver, *lines: str) -> dict[str, list[object]]:
    watcher.feed(("\n".join(lines) + "\n").encode())
    return watcher.observed()


def start(command: str = "/usr/bin/python3") -> str:
    return f"{COMMAND} execve({h(command)}, [{h(command)}], 0x1 /* 3 vars */) = 0"


def test_bwrap_building_the_sandbox_is_not_observed(tmp_path: Path) -> None:
    assert feed(observer(tmp_path), start()) == {
        "network": [],
        "filesWritten": [],
        "processes": [],
        "sensitiveReads": [],
    }


def test_path_probing_counts_once_as_the_attempt_that_succeeded(tmp_path: Path) -> None:
    seen = feed(
        observer(tmp_path),
        start(),
        f"{COMMAND} vfork() = 3 /* 103 in strace's PID NS */",
        f"103 execve({h('/usr/local/bin/curl')}, [{h('curl')}], 0x1) = -1 ENOENT (No such file or directory)",
        f"103 execve({h('/usr/bin/curl')}, [{h('curl')}], 0x1) = 0",
        f"{COMMAND} vfork() = 4 /* 104 in strace's PID NS */",
        f"104 execve({h('/usr/local/bin/wget')}, [{h('wget')}], 0x1) = -1 ENOENT (No such file or directory)",
        f"104 execve({h('/usr/bin/wget')}, [{h('wget')}], 0x1) = -1 ENOENT (No such file or directory)",
        f"104 execve({h('/bin/wget')}, [{h('wget')}], 0x1) = -1 ENOENT (No such file or directory)",
    )
    assert seen["processes"] == ["/usr/bin/curl", "/bin/wget"]


def test_the_command_and_its_interpreter_are_not_programs_run(tmp_path: Path) -> None:
    script = tmp_path / "package" / "server.js"
    watcher = observer(tmp_path)
    script.write_text("#!/usr/bin/env node\n")
    node = "/usr/bin/node"
    seen = feed(
        watcher,
        start("/plugin/server.js"),
        # env finds node on PATH, in the command's own process: the start.
        f"{COMMAND} execve({h('/usr/local/bin/node')}, [{h('node')}], 0x1) = -1 ENOENT (No such file or directory)",
        f"{COMMAND} execve({h(node)}, [{h('node')}, {h('/plugin/server.js')}], 0x1) = 0",
        f"{COMMAND} clone3({{flags=CLONE_VM|CLONE_THREAD|CLONE_SIGHAND, exit_signal=0}}, 88) = 2 /* 110 in strace's PID NS */",
        # A thread is not a fork: the command may still exec its interpreter...
        f"{COMMAND} clone(child_stack=NULL, flags=SIGCHLD) = 5 /* 105 in strace's PID NS */",
        # ...and a child running node again is the command re-executing its interpreter.
        f"105 execve({h(node)}, [{h('node')}, {h('worker.js')}], 0x1) = 0",
        f"{COMMAND} clone(child_stack=NULL, flags=SIGCHLD) = 6 /* 106 in strace's PID NS */",
        f"106 execve({h('/bin/sh')}, [{h('sh')}], 0x1) = 0",
    )
    assert seen["processes"] == ["/bin/sh"]


def test_after_the_command_forks_its_own_execs_are_listed(tmp_path: Path) -> None:
    seen = feed(
        observer(tmp_path),
        start(),
        f"{COMMAND} fork() = 7 /* 107 in strace's PID NS */",
        f"{COMMAND} execve({h('/usr/bin/env')}, [{h('env')}], 0x1) = 0",
    )
    assert seen["processes"] == ["/usr/bin/env"]


def test_an_unfinished_call_is_joined_with_its_resumption(tmp_path: Path) -> None:
    seen = feed(
        observer(tmp_path),
        start(),
        f"{COMMAND} openat({fd('AT_FDCWD', '/plugin')}, {h('/etc/shadow')}, O_RDONLY <unfinished ...>",
        f"{COMMAND} <... openat resumed>) = -1 ENOENT (No such file or directory)",
    )
    assert seen["sensitiveReads"] == ["/etc/shadow"]


def _query(name: str, qtype: int = 1) -> bytes:
    labels = b"".join(bytes([len(part)]) + part.encode() for part in name.split("."))
    return (
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
        + labels
        + b"\x00"
        + qtype.to_bytes(2, "big")
        + b"\x00\x01"
    )


def test_dns_queries_to_port_53_are_look_ups(tmp_path: Path) -> None:
    socket = fd(3, "socket:[4242]")
    other = fd(4, "socket:[4343]")
    seen = feed(
        observer(tmp_path),
        start(),
        f"{COMMAND} connect({socket}, {{sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr({h('127.0.0.1')})}}, 16) = 0",
        f"{COMMAND} sendmmsg({socket}, [{{msg_hdr={{msg_name=NULL, msg_iov=[{{iov_base={h(_query('Evil.Example.com'))}, iov_len=34}}]}}}}, "
        f"{{msg_hdr={{msg_name=NULL, msg_iov=[{{iov_base={h(_query('evil.example.com', 28))}, iov_len=34}}]}}}}], 2, MSG_NOSIGNAL) = 2",
        f"{COMMAND} sendto({socket}, {h(_query('localhost'))}, 27, 0, NULL, 0) = 27",
        # The same bytes to another port are no look-up.
        f"{COMMAND} connect({other}, {{sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr({h('127.0.0.1')})}}, 16) = 0",
        f"{COMMAND} write({other}, {h(_query('not-dns.example.com'))}, 37) = 37",
        # Go writes its query on a connected socket; TCP carries a length first.
        f"{COMMAND} connect({fd(5, 'socket:[99]')}, {{sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr({h('127.0.0.1')})}}, 16) = 0",
        f"{COMMAND} write({fd(5, 'socket:[99]')}, {h(len(_query('go.example.org')).to_bytes(2, 'big') + _query('go.example.org'))}, 34) = 34",
    )
    assert seen["network"] == [
        {"host": "evil.example.com", "port": None},
        {"host": "go.example.org", "port": None},
    ]


def test_connections_beyond_loopback_are_recorded_once(tmp_path: Path) -> None:
    sock = fd(3, "socket:[1]")
    seen = feed(
        observer(tmp_path),
        start(),
        f"{COMMAND} connect({sock}, {{sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr({h('93.184.216.34')})}}, 16) = -1 ENETUNREACH (Network is unreachable)",
        f"{COMMAND} connect({sock}, {{sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr({h('93.184.216.34')})}}, 16) = -1 ENETUNREACH (Network is unreachable)",
        f"{COMMAND} connect({sock}, {{sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, {h('::ffff:10.0.0.8')}, &sin6_addr), sin6_scope_id=0}}, 28) = -1 ENETUNREACH (Network is unreachable)",
        f"{COMMAND} connect({sock}, {{sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, {h('::1')}, &sin6_addr), sin6_scope_id=0}}, 28) = 0",
        f"{COMMAND} connect({sock}, {{sa_family=AF_INET, sin_port=htons(5432), sin_addr=inet_addr({h('127.0.0.1')})}}, 16) = -1 ECONNREFUSED (Connection refused)",
        f"{COMMAND} sendto({sock}, {h('x')}, 1, 0, {{sa_family=AF_INET, sin_port=htons(123), sin_addr=inet_addr({h('198.51.100.9')})}}, 16) = 1",
    )
    assert seen["network"] == [
        {"host": "93.184.216.34", "port": 443},
        {"host": "10.0.0.8", "port": 80},
        {"host": "198.51.100.9", "port": 123},
    ]


def test_relative_writes_follow_the_working_directory_into_children(tmp_path: Path) -> None:
    seen = feed(
        observer(tmp_path),
        start(),
        f"{COMMAND} chdir({h('/var/lib')}) = 0",
        f"{COMMAND} mkdir({h('app')}, 0777) = -1 EROFS (Read-only file system)",
        f"{COMMAND} vfork( <unfinished ...>",
        # The child runs before vfork returns: it shares the parent's directory.
        f"108 unlink({h('stale.pid')}) = -1 ENOENT (No such file or directory)",
        f"{COMMAND} <... vfork resumed>) = 8 /* 108 in strace's PID NS */",
        f"{COMMAND} openat({fd('AT_FDCWD', '/tmp')}, {h('scratch')}, O_WRONLY|O_CREAT, 0666) = 3",
        f"{COMMAND} openat({fd(9, '/etc')}, {h('motd')}, O_WRONLY|O_TRUNC) = -1 EROFS (Read-only file system)",
        f"{COMMAND} rename({h('/tmp/a')}, {h('/usr/lib/b')}) = -1 EROFS (Read-only file system)",
        f"{COMMAND} openat(AT_FDCWD, {h('/dev/null')}, O_WRONLY) = 3",
        f"{COMMAND} openat(AT_FDCWD, {h('/proc/self/comm')}, O_WRONLY) = 3",
        f"{COMMAND} openat(AT_FDCWD, {h('/home/inspect/.cache/x')}, O_WRONLY|O_CREAT, 0666) = 3",
        f"{COMMAND} openat(AT_FDCWD, {h('/etc/hosts')}, O_RDONLY|O_CLOEXEC) = 3",
    )
    assert seen["filesWritten"] == ["/var/lib/app", "/var/lib/stale.pid", "/etc/motd", "/usr/lib/b"]


def test_a_symlink_made_in_temp_is_followed(tmp_path: Path) -> None:
    seen = feed(
        observer(tmp_path),
        start(),
        f"{COMMAND} symlinkat({h('/root/.ssh')}, AT_FDCWD, {h('/tmp/keys')}) = 0",
        f"{COMMAND} openat(AT_FDCWD, {h('/tmp/keys/id_ed25519')}, O_RDONLY) = -1 ENOENT (No such file or directory)",
        f"{COMMAND} symlink({h('../etc/cron.d/x')}, {h('/tmp/job')}) = 0",
        f"{COMMAND} openat(AT_FDCWD, {h('/tmp/job')}, O_WRONLY|O_CREAT, 0644) = -1 ENOENT (No such file or directory)",
    )
    assert seen["sensitiveReads"] == ["/tmp/keys/id_ed25519"]
    assert seen["filesWritten"] == ["/etc/cron.d/x"]


def test_sensitive_paths_in_any_home_and_protected_paths(tmp_path: Path) -> None:
    watcher = observer(tmp_path, protected=("/srv/marketplace/data",))
    paths = [
        "/home/inspect/.aws/config",
        "/root/.config/gcloud/credentials.db",
        "/home/carol/.config/google-chrome/Default/Cookies",
        "/home/carol/.cursor/mcp.json",
        "/work/project/.vscode/mcp.json",
        "/root/.codeium/windsurf/mcp_config.json",
        "/plugin/.env.local",
        "/etc/ssh/ssh_host_ed25519_key",
        "/srv/marketplace/data/secret.key",
        # Not secrets:
        "/etc/ssh/ssh_host_ed25519_key.pub",
        "/home/inspect/.config/app.json",
        "/plugin/environment.py",
        "/srv/marketplace/database",
    ]
    seen = feed(
        watcher,
        start(),
        *(
            f"{COMMAND} openat(AT_FDCWD, {h(path)}, O_RDONLY) = -1 ENOENT (No such file or directory)"
            for path in paths
        ),
    )
    assert seen["sensitiveReads"] == paths[:9]


def test_each_category_keeps_at_most_its_cap(tmp_path: Path) -> None:
    seen = feed(
        observer(tmp_path, cap=3),
        start(),
        *(
            f"{COMMAND} openat(AT_FDCWD, {h(f'/var/x{i}')}, O_WRONLY|O_CREAT, 0644) = -1 ENOENT (No such file or directory)"
            for i in range(50)
        ),
    )
    assert seen["filesWritten"] == ["/var/x0", "/var/x1", "/var/x2"]


def test_traced_bytes_cannot_forge_a_line(tmp_path: Path) -> None:
    """Buffers are hex: a newline and a fake call inside one stay inside it."""
    forged = f'\n{COMMAND} execve("/usr/bin/curl", ["curl"], 0x1) = 0\n'
    seen = feed(
        observer(tmp_path),
        start(),
        f"{COMMAND} write({fd(1, 'pipe:[5]')}, {h(forged)}, {len(forged)}) = {len(forged)}",
    )
    assert seen["processes"] == []


def test_an_overlong_line_is_dropped_and_the_next_ones_read(tmp_path: Path) -> None:
    watcher = observer(tmp_path)
    watcher.feed((start() + "\n").encode())
    watcher.feed(f"{COMMAND} write({fd(1, 'pipe:[5]')}, ".encode() + b"x" * 100_000)
    watcher.feed(b", 1) = 1\n")
    seen = feed(
        watcher,
        f"{COMMAND} openat(AT_FDCWD, {h('/etc/shadow')}, O_RDONLY) = -1 ENOENT (No such file or directory)",
    )
    assert seen["sensitiveReads"] == ["/etc/shadow"]


def test_dns_query_names_are_parsed_strictly() -> None:
    assert parse_dns_query(_query("a.b.example")) == "a.b.example"
    response = bytearray(_query("a.example"))
    response[2] |= 0x80
    assert parse_dns_query(bytes(response)) is None
    assert parse_dns_query(b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n") is None
    assert parse_dns_query(_query("exfil\x01data.example")) == "exfil\\001data.example"
