"""Leftovers of uploads that can no longer finish are told from live ones and removed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from marketplace.kit.tempfiles import new_temp_file, remove_abandoned, writer_pid


def _file(folder: Path, name: str, *, age: float = 0) -> Path:
    path = folder / name
    path.write_bytes(b"half an upload")
    if age:
        stamp = time.time() - age
        os.utime(path, (stamp, stamp))
    return path


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def live_pid() -> Iterator[int]:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield child.pid
    finally:
        child.kill()
        child.wait()


def test_new_temp_files_carry_this_process_id(tmp_path: Path) -> None:
    fd, path = new_temp_file(tmp_path)
    os.close(fd)
    assert path.parent == tmp_path
    assert path.name.startswith("upload-") and path.name.endswith(".part")
    assert writer_pid(path) == os.getpid()
    assert writer_pid(Path("upload-abcdef.part")) is None  # names of older releases


def test_a_dead_writers_file_goes_and_a_live_writers_stays(tmp_path: Path, live_pid: int) -> None:
    dead = _file(tmp_path, f"upload-{_dead_pid()}-x1.part")
    live = _file(tmp_path, f"upload-{live_pid}-x2.part")
    fd, own = new_temp_file(tmp_path)  # this process's live upload
    os.close(fd)
    assert remove_abandoned(tmp_path) == [dead]
    assert not dead.exists()
    assert live.exists() and own.exists()


def test_this_process_id_on_a_file_older_than_the_process_is_a_restarted_containers(
    tmp_path: Path,
) -> None:
    # A container restarts with the same pid: the file cannot be this process's own.
    before_start = _file(tmp_path, f"upload-{os.getpid()}-old.part", age=10 * 365 * 86400)
    assert remove_abandoned(tmp_path) == [before_start]


def test_age_removes_anything_stale_and_spares_other_files(tmp_path: Path, live_pid: int) -> None:
    stale_live = _file(tmp_path, f"upload-{live_pid}-s.part", age=7200)
    stale_legacy = _file(tmp_path, "upload-legacy.part", age=7200)
    young_legacy = _file(tmp_path, "upload-young.part")
    other = _file(tmp_path, "notes.txt", age=7200)
    assert remove_abandoned(tmp_path) == []  # without an age, no pid says they are dead
    removed = remove_abandoned(tmp_path, older_than_seconds=3600)
    assert sorted(removed) == sorted([stale_live, stale_legacy])
    assert young_legacy.exists() and other.exists()


def test_missing_folder_and_negative_age(tmp_path: Path) -> None:
    assert remove_abandoned(tmp_path / "absent") == []
    with pytest.raises(ValueError, match="must not be negative"):
        remove_abandoned(tmp_path, older_than_seconds=-1)
