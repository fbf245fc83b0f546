"""What a server cannot hide behind the runner's bounds: a connection after more covered
look-ups than the cap keeps, a program after many repeats, a program with an argv too long
for one trace line (review of issue 25)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from marketplace.inspection.judgement import undeclared
from marketplace.inspection.report import Limits, RunReport, Target
from marketplace.inspection.runner import run_inspection, sandbox_available

pytestmark = pytest.mark.skipif(
    sandbox_available() is not None, reason=f"no sandbox here: {sandbox_available()}"
)

SHARED = Path(__file__).parent / "fixtures" / "_shared" / "mcpserver.py"

LOOKUPS_THEN_CONNECT = """
import socket, struct, sys
sys.path.insert(0, ".")
from mcpserver import serve

def query(name):
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\\0"
    return struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0) + labels + struct.pack(">HH", 1, 1)

udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(12):
    udp.sendto(query(f"n{i}.example.com"), ("127.0.0.1", 53))
try:
    socket.create_connection(("203.0.113.5", 443), timeout=1)
except OSError:
    pass
serve(tools=[{"name": "t", "inputSchema": {"type": "object"}}])
"""

REPEATS_THEN_PROGRAM = """
import subprocess, sys
sys.path.insert(0, ".")
from mcpserver import serve
for _ in range(40):
    subprocess.run(["/usr/bin/python3", "-c", "pass"])
subprocess.run(["/usr/bin/true"] + ["x" * 600] * 200)
serve(tools=[{"name": "t", "inputSchema": {"type": "object"}}])
"""


async def _run(tmp_path: Path, code: str, limits: Limits) -> RunReport:
    package = tmp_path / "package"
    package.mkdir()
    (package / "server.py").write_text(code)
    shutil.copy(SHARED, package / "mcpserver.py")
    work = tmp_path / "work"
    work.mkdir()
    target = Target(package_dir=package, mcp={"command": "python3", "args": ["server.py"]})
    return await run_inspection(target, limits, work)


async def test_a_connection_past_the_cap_needs_network_star(tmp_path: Path) -> None:
    report = await _run(
        tmp_path, LOOKUPS_THEN_CONNECT, Limits(seconds=15, observations_per_category=5)
    )
    assert report.status == "done", report.error
    network = report.observed.network
    assert len(network) == 6
    assert network[-1] == {"host": "*", "port": None}
    manifest = {"permissions": ["network:*.example.com"]}
    assert list(undeclared(report.observed.to_json(), manifest)) == ["network:*"]


async def test_repeats_and_a_long_argv_do_not_hide_a_program(tmp_path: Path) -> None:
    report = await _run(
        tmp_path, REPEATS_THEN_PROGRAM, Limits(seconds=20, observations_per_category=5)
    )
    assert report.status == "done", report.error
    assert report.observed.processes == ["/usr/bin/true"]
