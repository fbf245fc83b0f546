"""When the host cannot run the sandbox, or the manifest names nothing it can run, the
runner says why in a failed report; it never raises. And the error line's shape."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from marketplace.inspection import runner
from marketplace.inspection.report import ERROR_MAX_CHARS, Limits, Target
from marketplace.inspection.runner import error_line, run_inspection, sandbox_available

needs_sandbox = pytest.mark.skipif(
    sandbox_available() is not None, reason=f"no sandbox here: {sandbox_available()}"
)


def _target(tmp_path: Path, command: str = "python3", **mcp: object) -> tuple[Target, Path]:
    package = tmp_path / "package"
    package.mkdir()
    (package / "server.py").write_text("print('hello')\n")
    workdir = tmp_path / "work"
    workdir.mkdir()
    return Target(package_dir=package, mcp={"command": command, **mcp}), workdir


async def test_without_strace_the_sandbox_is_unavailable_and_runs_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "STRACE_PATH", tmp_path / "strace")
    reason = sandbox_available()
    assert (
        reason == f"sandbox unavailable: strace is not installed ({tmp_path / 'strace'} is missing)"
    )
    target, workdir = _target(tmp_path)
    report = await run_inspection(target, Limits(), workdir)
    assert (report.status, report.error) == ("failed", reason)


async def test_without_bwrap_the_sandbox_is_unavailable_and_runs_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "bwrap_path", lambda: None)
    reason = sandbox_available()
    assert reason is not None
    assert reason.startswith("sandbox unavailable: bwrap is missing")
    target, workdir = _target(tmp_path)
    report = await run_inspection(target, Limits(), workdir)
    assert (report.status, report.error) == ("failed", reason)


@pytest.mark.skipif(not runner.STRACE_PATH.exists(), reason="strace is not installed")
async def test_a_bwrap_that_cannot_make_namespaces_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because "
        "the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    for folder in fake.parents:  # the sandbox's user (uid 65534 under root) runs it
        if folder == Path("/tmp"):
            break
        folder.chmod(folder.stat().st_mode | 0o001)
    monkeypatch.setattr(runner, "bwrap_path", lambda: fake)
    reason = sandbox_available()
    assert reason is not None
    assert reason.startswith("sandbox unavailable: bwrap: No permissions to create new namespace")
    target, workdir = _target(tmp_path)
    report = await run_inspection(target, Limits(), workdir)
    assert (report.status, report.error) == ("failed", reason)


@needs_sandbox
@pytest.mark.parametrize(
    ("mcp", "reason"),
    [
        (
            {"command": "no-such-server"},
            "command not found: 'no-such-server' is not on the sandbox's PATH "
            "(/usr/local/bin:/usr/bin:/bin)",
        ),
        ({"command": "./server.py"}, "the command './server.py' is not executable"),
        (
            {"command": "../outside"},
            "the command '../outside' is not in the sandbox "
            "(it sees the package at /plugin and the system's /usr)",
        ),
        ({"command": ""}, "the manifest's mcp.command is missing"),
        (
            {"transport": "http", "url": "https://example.com/mcp"},
            "not a stdio server: nothing to run",
        ),
        (
            {"command": "python3", "env": {"BAD=NAME": "x"}},
            "the environment variable 'BAD=NAME' cannot be set",
        ),
    ],
)
async def test_a_command_the_sandbox_cannot_run_fails_with_the_reason(
    tmp_path: Path, mcp: dict[str, object], reason: str
) -> None:
    package = tmp_path / "package"
    package.mkdir()
    (package / "server.py").write_text("print('hello')\n")
    workdir = tmp_path / "work"
    workdir.mkdir()
    report = await run_inspection(Target(package_dir=package, mcp=mcp), Limits(), workdir)
    assert (report.status, report.error) == ("failed", reason)


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="the package is shared with uid 65534 under root")
async def test_under_root_the_package_is_made_readable_by_the_sandbox_user(
    tmp_path: Path,
) -> None:
    package = tmp_path / "package"
    shutil.copytree(Path(__file__).parent / "fixtures" / "py-basic", package)
    shutil.copy(Path(__file__).parent / "fixtures" / "_shared" / "mcpserver.py", package)
    for path in package.iterdir():
        path.chmod(0o600)
    package.chmod(0o700)
    workdir = tmp_path / "work"
    workdir.mkdir(mode=0o700)
    target = Target(package_dir=package, mcp={"command": "python3", "args": ["server.py"]})
    report = await run_inspection(target, Limits(settle_seconds=0), workdir)
    assert report.status == "done", report.error
    assert [tool["name"] for tool in report.tools] == ["add", "now"]


def test_the_error_line_keeps_the_end_of_stderr_within_the_limit() -> None:
    stderr = "".join(f"line {i}\n" for i in range(500)) + "Error: the real cause\n"
    line = error_line("the server exited before answering initialize (exit status 1)", stderr)
    assert len(line) <= ERROR_MAX_CHARS
    assert line.startswith(
        "the server exited before answering initialize (exit status 1); stderr: …"
    )
    assert line.endswith("line 499 | Error: the real cause")
    assert "\n" not in line


def test_a_long_reason_still_leaves_room_for_stderr() -> None:
    line = error_line("x" * 2000, "the cause\x00\x1b[31m")
    assert len(line) <= ERROR_MAX_CHARS
    assert line.endswith("; stderr: the cause [31m")
    assert error_line("only a reason\nover two lines") == "only a reason | over two lines"
