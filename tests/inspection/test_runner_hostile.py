"""Hostile servers against the sandbox runner: each ends within its limit with a clear
error and leaves no process behind; the runner attack achieves nothing, and what of it is
in a contract category is recorded; the sandbox's network namespace keeps connections off
the host (and the test shows that, without it, they would arrive)."""

from __future__ import annotations

import os
import signal
import socket
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from marketplace.inspection import runner
from marketplace.inspection.runner import sandbox_available
from tests.inspection.runner_support import (
    Run,
    assert_expected,
    fixture,
    inspect,
    processes,
    wait_for_no_leftovers,
)

pytestmark = [
    pytest.mark.fault,
    pytest.mark.skipif(
        sandbox_available() is not None, reason=f"no sandbox here: {sandbox_available()}"
    ),
]

# Past the limit: the SDK's shutdown, strace's last lines, the supervisor's result.
MARGIN_SECONDS = 2.5

ATTEMPTS = {
    "read-secret-key",
    "read-signing-keys",
    "list-data-folder",
    "postgres-socket",
    "postgres-tcp",
    "service-port-on-loopback",
    "service-port-on-host-address",
    "kill-parent",
    "kill-everything",
    "ptrace-parent",
    "write-proc-1",
    "core-pattern",
    "escape-dotdot",
    "escape-dotdot-root",
    "forge-runner-result",
    "forge-trace",
    "become-root",
    "new-user-namespace",
    "mount",
    "write-package",
    "host-users",
    "host-homes",
    "host-root-folders",
}


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("hostile-sleep", "timed out: no answer to initialize within 3s"),
        ("hostile-flood", "stopped: the server wrote more than 2000000 bytes of output"),
        ("hostile-forkbomb", "timed out: no answer to initialize within 3s"),
    ],
)
async def test_hostile_server_ends_within_its_limit_and_leaves_nothing(
    name: str, reason: str, tmp_path: Path
) -> None:
    item = fixture(name)
    run = await inspect(item, tmp_path)
    assert run.seconds < item.limits().seconds + MARGIN_SECONDS
    assert_expected(run.report, item.expect)
    assert run.report.error is not None
    assert run.report.error.startswith(reason), run.report.error
    assert wait_for_no_leftovers(run) == []


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """The service's port, as a test stands it up: every host address, loopback too."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 0))  # noqa: S104 - the host's own addresses are what is tried
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def _connections(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            connection, _ = server.accept()
        except BlockingIOError:
            return count
        connection.close()
        count += 1


def _host_address() -> str:
    """A non-loopback address of this host (the route's source), else a documentation one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.254", 9))
            address = str(probe.getsockname()[0])
        except OSError:
            return "198.51.100.1"
    return "198.51.100.1" if address.startswith("127.") else address


async def _attack(tmp_path: Path, listener: socket.socket) -> tuple[Run, Path, str, int]:
    data = tmp_path / "data"
    data.mkdir()
    # World-readable: only the sandbox's mounts keep them out of reach.
    (data / "secret.key").write_text("service-secret")
    (data / "signing-keys.json").write_text('{"keys": ["private"]}')
    for path in (data, data / "secret.key", data / "signing-keys.json"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    port = int(listener.getsockname()[1])
    host = _host_address()
    run = await inspect(
        fixture("hostile-runner-attack"),
        tmp_path,
        env={
            "PROTECTED_DIR": str(data),
            "RUNNER_WORKDIR": str(tmp_path / "work"),
            "SERVICE_PORT": str(port),
            "HOST_IP": host,
        },
        protected=(data,),
    )
    return run, data, host, port


async def test_runner_attack_achieves_nothing(tmp_path: Path, listener: socket.socket) -> None:
    run, data, _, _ = await _attack(tmp_path, listener)
    report = run.report
    assert report.status == "done", report.error
    outcomes = {tool["name"]: tool["description"] for tool in report.tools}
    assert set(outcomes) == ATTEMPTS
    achieved = {name: text for name, text in outcomes.items() if not text.startswith("blocked")}
    assert achieved == {}
    assert _connections(listener) == 0
    assert (data / "secret.key").read_text() == "service-secret"
    sent = fixture("hostile-runner-attack").folder / "server.py"
    assert (tmp_path / "package" / "server.py").read_bytes() == sent.read_bytes()
    assert wait_for_no_leftovers(run) == []


async def test_runner_attack_is_recorded_where_the_contract_has_a_category(
    tmp_path: Path, listener: socket.socket
) -> None:
    run, data, host, port = await _attack(tmp_path, listener)
    observed = run.report.observed
    workdir = tmp_path / "work"
    assert {
        f"{data}/secret.key",
        f"{data}/signing-keys.json",
        str(data),
        "/etc/shadow",
        "/root/.ssh/id_rsa",
    } <= set(observed.sensitive_reads)
    assert {"/proc/1/oom_score_adj", "/proc/sys/kernel/core_pattern"} <= set(observed.files_written)
    forged = {f"{workdir}/result.json", f"{workdir}/trace.fifo"}
    if str(workdir).startswith("/tmp/"):
        # In the sandbox that is a path in its own temp folder (where the attempt failed).
        assert not forged & set(observed.files_written)
    else:
        assert forged <= set(observed.files_written)
    # Its own package folder is not "outside"; loopback is not the network.
    assert "/plugin/server.py" not in observed.files_written
    assert observed.network == [{"host": host, "port": port}]
    assert observed.processes == []


async def test_without_the_network_namespace_the_attack_would_reach_the_host(
    tmp_path: Path, listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control for test_runner_attack_achieves_nothing: the same run with bwrap told to
    keep the host's network gets its connection through, so that test would fail."""
    build = runner._bwrap_argv

    def shared_network(*args: object, **kwargs: object) -> list[str]:
        argv = build(*args, **kwargs)  # type: ignore[arg-type]
        return [*argv[:2], "--share-net", *argv[2:]]

    monkeypatch.setattr(runner, "_bwrap_argv", shared_network)
    run, _, _, _ = await _attack(tmp_path, listener)
    outcomes = {tool["name"]: tool["description"] for tool in run.report.tools}
    assert outcomes["service-port-on-loopback"].startswith("ACHIEVED")
    assert _connections(listener) >= 1


async def _signal_supervisor(tmp_path: Path, signum: int) -> Run:
    """Run hostile-sleep and send its supervisor `signum` once the server has started."""
    item = fixture("hostile-sleep")
    marker = uuid.uuid4().hex
    runs: list[Run] = []
    # Longer than the fixture's own limit: the signal ends the run, and on a loaded machine
    # the sandbox may take seconds to start; the run's own deadline must not come first.
    limits = replace(item.limits(), seconds=30)

    async def inspection() -> None:
        runs.append(await inspect(item, tmp_path, marker=marker, limits=limits))

    async with anyio.create_task_group() as group:
        group.start_soon(inspection)
        with anyio.fail_after(limits.seconds):
            while True:
                live = processes(marker, tmp_path / "work")
                sandboxed = [line for line in live if "server.py" in line]
                supervisors = [line for line in live if "inspection.supervisor" in line]
                if sandboxed and supervisors:
                    break
                await anyio.sleep(0.05)
        await anyio.sleep(0.3)  # its look-up is done
        os.kill(int(supervisors[0].split(":")[0]), signum)
    [run] = runs
    assert run.seconds < limits.seconds
    assert wait_for_no_leftovers(run) == []
    return run


async def test_killing_the_supervisor_takes_the_sandbox_with_it(tmp_path: Path) -> None:
    """PR_SET_PDEATHSIG on strace and bwrap's --die-with-parent: nothing outlives it."""
    run = await _signal_supervisor(tmp_path, signal.SIGKILL)
    assert run.report.status == "failed"
    assert run.report.error == "the inspection supervisor gave no result"


async def test_a_terminated_supervisor_still_reports_what_it_saw(tmp_path: Path) -> None:
    run = await _signal_supervisor(tmp_path, signal.SIGTERM)
    assert run.report.status == "failed"
    assert run.report.error == "stopped: the inspection was terminated"
    assert run.report.observed.network == [{"host": "sleeper.example.com", "port": None}]
