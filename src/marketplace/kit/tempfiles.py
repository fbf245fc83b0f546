"""Temporary files of uploads in flight, named after the process that writes them.

A killed worker cannot delete its half-received upload. The name `upload-<pid>-<random>.part`
lets a later process tell such a leftover from a live upload of a sibling worker: the writer
is gone, or it is this very process and the file is older than its start (a container
restarts with the same pid). The uploads folder is local to one host (docs/deploy.md), so a
pid names a process of this host.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

PREFIX = "upload-"
SUFFIX = ".part"
_PROCESS_STARTED = time.time()


def new_temp_file(folder: Path) -> tuple[int, Path]:
    """A new temporary upload file in folder: (open descriptor, path)."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=f"{PREFIX}{os.getpid()}-", suffix=SUFFIX)
    return fd, Path(name)


def writer_pid(path: Path) -> int | None:
    """The pid in a temp file's name; None for names without one (older releases)."""
    middle = path.name.removeprefix(PREFIX).removesuffix(SUFFIX)
    pid, sep, _random = middle.partition("-")
    return int(pid) if sep and pid.isdigit() else None


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but another user's
        return True
    return True


def _abandoned(path: Path, modified: float, cutoff: float | None) -> bool:
    if cutoff is not None and modified <= cutoff:
        return True
    pid = writer_pid(path)
    if pid is None:
        return False  # no pid to ask about: only its age can tell
    if pid == os.getpid():
        return modified < _PROCESS_STARTED
    return not _process_alive(pid)


def remove_abandoned(
    folder: Path, *, older_than_seconds: float | None = None, now: float | None = None
) -> list[Path]:
    """Delete the temp files of uploads that can no longer finish; return what was removed.

    Always removes files whose writer process is gone; with older_than_seconds, also any
    temp file not written to for that long, whoever wrote it.
    """
    if older_than_seconds is not None and older_than_seconds < 0:
        raise ValueError("older_than_seconds must not be negative")
    cutoff = None if older_than_seconds is None else (now or time.time()) - older_than_seconds
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for path in sorted(folder.glob(f"{PREFIX}*{SUFFIX}")):
        with contextlib.suppress(FileNotFoundError):  # a live upload finished meanwhile
            if path.is_file() and _abandoned(path, path.stat().st_mtime, cutoff):
                path.unlink()
                removed.append(path)
    return removed
