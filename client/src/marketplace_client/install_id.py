"""This client's install id (CONTRACT 16): `<config folder>/install-id`, one line.

A random id the update check sends, so that the service's staged rollout selects (or not)
the same installs every time: a new id on each run would move an install in and out of a
rollout. It is made once, on the first update check, and names nothing about the user. The
file is written with mode 0600 and created with a hard link from a finished temporary
file, so two commands starting together agree on one id and never read half a file. A
damaged file is an error, never silently replaced (the install would leave its rollout
group unnoticed); deleting it makes a new id.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

from marketplace_client.config import config_dir
from marketplace_client.errors import CliError

INSTALL_ID_FILE = "install-id"
MIN_LENGTH, MAX_LENGTH = 8, 128  # the service's bounds
ID_BYTES = 16  # 32 hex characters


def install_id_path() -> Path:
    return config_dir() / INSTALL_ID_FILE


def _read(path: Path) -> str | None:
    """The stored id; None when there is none yet."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CliError("CONFIG_UNREADABLE", f"cannot read {path}: {exc}") from exc
    if not (MIN_LENGTH <= len(text) <= MAX_LENGTH) or not text.isprintable() or " " in text:
        raise CliError(
            "CONFIG_UNREADABLE",
            f"{path} does not hold an install id ({MIN_LENGTH}-{MAX_LENGTH} characters); "
            "delete it and the next update check makes a new one",
        )
    return text


def _create(path: Path) -> None:
    """Write a new id unless another process wrote one first (link fails on an existing
    name, where a rename would replace it)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # mkstemp creates the file with mode 0600 from the start.
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(ID_BYTES) + "\n")
        try:
            os.link(temp, path)
        except FileExistsError:
            pass  # the other process's id stands
        except OSError:
            # A file system without hard links: a rename, unless an id appeared meanwhile.
            if not path.exists():
                temp.replace(path)
    finally:
        temp.unlink(missing_ok=True)


def install_id(path: Path | None = None) -> str:
    """The id kept in the configuration folder, made on first use."""
    path = path if path is not None else install_id_path()
    found = _read(path)
    if found is not None:
        return found
    try:
        _create(path)
    except OSError as exc:
        raise CliError("CONFIG_UNWRITABLE", f"cannot write {path}: {exc}") from exc
    made = _read(path)
    if made is None:  # removed between the two steps: nothing sensible to send
        raise CliError("CONFIG_UNWRITABLE", f"{path} disappeared as it was written")
    return made
