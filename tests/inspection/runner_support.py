"""The sandbox runner's fixture servers (tests/inspection/fixtures/<name>/) and how a test
runs one.

Each fixture is a folder with the server's code and a `fixture.json`:

    about        one line
    mcp          the manifest's `mcp` declaration
    config       the manifest's `config` items (required keys run as placeholders)
    permissions  what the manifest declares
    shared       helper files from fixtures/_shared copied into the package (mcpserver.py)
    needs        programs the host must have on the sandbox's PATH (else the test skips)
    limits       Limits fields for this run
    expect       status; error (substrings); server (fields); tools, prompts (names) and
                 resources (URIs) in order; observed (every category, exact); unordered
                 (categories compared without their order)
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from marketplace.inspection.report import (
    ERROR_MAX_CHARS,
    SANDBOX_PATH,
    Limits,
    RunReport,
    Target,
)
from marketplace.inspection.runner import run_inspection

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = FIXTURES / "_shared"
# Shorter than the service's: the fixtures do what they do before they answer.
TEST_SETTLE_SECONDS = 0.2
MARKER_VARIABLE = "INSPECTION_TEST_MARKER"


@dataclass(frozen=True)
class Fixture:
    name: str
    folder: Path
    spec: dict[str, Any]

    @property
    def expect(self) -> dict[str, Any]:
        return dict(self.spec.get("expect", {}))

    def limits(self) -> Limits:
        overrides = {"settle_seconds": TEST_SETTLE_SECONDS, **self.spec.get("limits", {})}
        return replace(Limits(), **overrides)

    def missing(self) -> str | None:
        """Why this host cannot run the fixture, if it cannot."""
        for program in self.spec.get("needs", []):
            if shutil.which(program, path=SANDBOX_PATH) is None:
                return f"{program} is not installed (not on {SANDBOX_PATH})"
        return None

    def required_keys(self) -> tuple[str, ...]:
        items = self.spec.get("config", [])
        return tuple(item["key"] for item in items if item.get("required"))


def fixtures() -> list[Fixture]:
    return [
        fixture(folder.name)
        for folder in sorted(FIXTURES.iterdir())
        if (folder / "fixture.json").is_file()
    ]


def fixture(name: str) -> Fixture:
    folder = FIXTURES / name
    spec = json.loads((folder / "fixture.json").read_text(encoding="utf-8"))
    return Fixture(name=name, folder=folder, spec=spec)


def install(fixture: Fixture, root: Path) -> Path:
    """The fixture as the job unpacks a package: a folder of its own, shared helpers in."""
    package = root / "package"
    shutil.copytree(fixture.folder, package, symlinks=True)
    (package / "fixture.json").unlink()
    for name in fixture.spec.get("shared", []):
        shutil.copy2(SHARED / name, package / name)
    return package


@dataclass(frozen=True)
class Run:
    report: RunReport
    seconds: float
    workdir: Path
    marker: str


async def inspect(
    fixture: Fixture,
    root: Path,
    *,
    env: dict[str, str] | None = None,
    limits: Limits | None = None,
    protected: tuple[Path, ...] = (),
    marker: str | None = None,
) -> Run:
    """Run the fixture through `run_inspection`, as the job would, timed. Every process of
    the run carries a marker (in its environment) for `leftovers`."""
    package = install(fixture, root)
    workdir = root / "work"
    workdir.mkdir()
    marker = marker or uuid.uuid4().hex
    mcp = dict(fixture.spec["mcp"])
    mcp["env"] = {**mcp.get("env", {}), **(env or {}), MARKER_VARIABLE: marker}
    target = Target(
        package_dir=package,
        mcp=mcp,
        required_config_keys=fixture.required_keys(),
        protected_paths=protected,
    )
    started = time.monotonic()
    report = await run_inspection(target, limits or fixture.limits(), workdir)
    return Run(report, time.monotonic() - started, workdir, marker)


def leftovers(run: Run) -> list[str]:
    """Processes of the run still alive: the sandbox's (marker in their environment) and
    the supervisor, strace and bwrap (the work folder in their command line)."""
    return processes(run.marker, run.workdir)


def processes(marker: str, workdir: Path) -> list[str]:
    """Live processes carrying `marker` in their environment or `workdir` in their command."""
    found = []
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    folder = str(workdir).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ or folder in cmdline:
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry}: {command}")
    return found


def wait_for_no_leftovers(run: Run, seconds: float = 2.0) -> list[str]:
    """Leftovers once the kernel has had a moment to reap what was killed."""
    deadline = time.monotonic() + seconds
    while True:
        found = leftovers(run)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def assert_expected(report: RunReport, expect: dict[str, Any]) -> None:
    """The report matches a fixture's `expect` (this module's docstring)."""
    assert report.status == expect["status"], report.error
    if report.status == "failed":
        assert report.error is not None
        assert len(report.error) <= ERROR_MAX_CHARS
        assert "\n" not in report.error
        for part in expect.get("error", []):
            assert part in report.error, report.error
    else:
        assert report.error is None
    for key, value in expect.get("server", {}).items():
        assert report.server is not None
        assert report.server[key] == value
    if "tools" in expect:
        assert [tool["name"] for tool in report.tools] == expect["tools"]
    if "prompts" in expect:
        assert [prompt["name"] for prompt in report.prompts] == expect["prompts"]
    if "resources" in expect:
        assert [resource["uri"] for resource in report.resources] == expect["resources"]
    if "observed" in expect:
        observed = report.observed.to_json()
        expected = dict(expect["observed"])
        for category in expect.get("unordered", []):
            observed[category] = sorted(observed[category], key=json.dumps)
            expected[category] = sorted(expected[category], key=json.dumps)
        assert observed == expected
