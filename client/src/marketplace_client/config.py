"""Where the tool keeps its files, which backend it talks to and with which token.

Resolution order: `--backend` / `MARKETPLACE_BACKEND`, then the backend of the last
`marketplace login`, then http://127.0.0.1:8000. `--token` / `MARKETPLACE_TOKEN`, then the
token stored for that backend by `marketplace login`. Tokens are stored per backend, so a
token is never sent to a server it was not issued by.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from marketplace_client.errors import CliError

DEFAULT_BACKEND = "http://127.0.0.1:8000"
CREDENTIALS_FILE = "credentials.json"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def config_dir() -> Path:
    """$MARKETPLACE_CONFIG_DIR, else $XDG_CONFIG_HOME/marketplace, else ~/.config/marketplace."""
    override = os.environ.get("MARKETPLACE_CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    return _xdg_base("XDG_CONFIG_HOME", Path(".config")) / "marketplace"


def plugins_dir() -> Path:
    """Default install folder: `$MARKETPLACE_PLUGINS_DIR`, else the XDG data folder."""
    override = os.environ.get("MARKETPLACE_PLUGINS_DIR")
    if override:
        return Path(override).expanduser()
    return _xdg_base("XDG_DATA_HOME", Path(".local/share")) / "marketplace" / "plugins"


def _xdg_base(variable: str, fallback: Path) -> Path:
    value = os.environ.get(variable)
    # The XDG specification says relative values are to be ignored.
    if value and Path(value).is_absolute():
        return Path(value)
    return Path.home() / fallback


def normalize_backend(url: str) -> str:
    cleaned = url.strip().rstrip("/")
    try:
        parsed = httpx.URL(cleaned)
    except httpx.InvalidURL as exc:
        raise CliError("BAD_BACKEND", f"invalid backend URL {url!r}: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise CliError("BAD_BACKEND", f"backend must be an http(s) URL, got {url!r}")
    return cleaned


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (0600), atomically (temp file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # mkstemp creates the file with mode 0600 from the start.
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        temp.chmod(0o600)
        temp.replace(path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.strptime(value, TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


@dataclass(frozen=True)
class StoredLogin:
    """What `marketplace login` left for one backend (older files lack the last two)."""

    token: str
    email: str | None
    refresh_token: str | None
    expires_at: datetime | None


@contextmanager
def file_lock(lock_path: Path) -> Iterator[None]:
    """An exclusive lock across processes (flock on `lock_path`), for read-modify-write of
    a shared file; not re-entrant."""
    try:
        import fcntl
    except ImportError:  # no fcntl (Windows): one process at a time is the user's care
        yield
        return
    with open(lock_path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class CredentialStore:
    """credentials.json: `{"default": url, "backends": {url: {token, refreshToken,
    expiresAt, email, savedAt}}}`, mode 0600."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else config_dir() / CREDENTIALS_FILE

    def _load(self) -> dict[str, Any]:
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"default": None, "backends": {}}
        except (OSError, ValueError) as exc:
            raise CliError("CONFIG_UNREADABLE", f"cannot read {self.path}: {exc}") from exc
        if not isinstance(document, dict) or not isinstance(document.get("backends"), dict):
            raise CliError("CONFIG_UNREADABLE", f"{self.path} is not a credentials file")
        return document

    def _write(self, document: dict[str, Any]) -> None:
        write_private(self.path, json.dumps(document, indent=2, sort_keys=True) + "\n")

    def default_backend(self) -> str | None:
        value = self._load().get("default")
        return value if isinstance(value, str) else None

    def login_for(self, backend: str) -> StoredLogin | None:
        entry = self._load()["backends"].get(backend)
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            return None
        email, refresh = entry.get("email"), entry.get("refreshToken")
        return StoredLogin(
            token=entry["token"],
            email=email if isinstance(email, str) else None,
            refresh_token=refresh if isinstance(refresh, str) and refresh else None,
            expires_at=_parse_time(entry.get("expiresAt")),
        )

    def token_for(self, backend: str) -> str | None:
        login = self.login_for(backend)
        return login.token if login is not None else None

    def save(
        self,
        backend: str,
        token: str,
        email: str,
        *,
        refresh_token: str | None = None,
        expires_in: int | None = None,
    ) -> None:
        """Store a login for `backend` and make it the default backend."""
        with self.locked():
            self._save_unlocked(backend, token, email, refresh_token, expires_in)

    def _save_unlocked(
        self,
        backend: str,
        token: str,
        email: str,
        refresh_token: str | None,
        expires_in: int | None,
    ) -> None:
        document = self._load()
        document["default"] = backend
        now = datetime.now(UTC)
        document["backends"][backend] = {
            "token": token,
            "refreshToken": refresh_token,
            "expiresAt": _timestamp(now + timedelta(seconds=expires_in))
            if expires_in is not None
            else None,
            "email": email,
            "savedAt": _timestamp(now),
        }
        self._write(document)

    def rotate(
        self, backend: str, used: str, token: str, refresh_token: str, expires_in: int
    ) -> None:
        """Replace a login's pair by the one a refresh of `used` answered (the old one is
        revoked); only while that login is still the one stored."""
        document = self._load()
        entry = document["backends"].get(backend)
        if not isinstance(entry, dict) or entry.get("refreshToken") != used:
            return  # logged out or logged in again meanwhile: the newer login stays
        now = datetime.now(UTC)
        entry.update(
            token=token,
            refreshToken=refresh_token,
            expiresAt=_timestamp(now + timedelta(seconds=expires_in)),
            savedAt=_timestamp(now),
        )
        self._write(document)

    def remove(self, backend: str) -> bool:
        with self.locked():  # not in the middle of another command's refresh
            document = self._load()
            if backend not in document["backends"]:
                return False
            del document["backends"][backend]
            if document.get("default") == backend:
                document["default"] = None
            self._write(document)
            return True

    def remove_if_empty(self) -> bool:
        """Delete the file once it holds no login; True when it was deleted."""
        if not self.path.exists() or self._load()["backends"]:
            return False
        self.path.unlink()
        return True

    @contextmanager
    def locked(self) -> Iterator[None]:
        """One refresh at a time across processes: a refresh token works once (rotation),
        and presenting a rotated one again revokes the whole login on the server."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with file_lock(self.path.with_name(self.path.name + ".lock")):
            yield


@dataclass(frozen=True)
class Credentials:
    backend: str
    token: str | None
    # True when the token is the one `marketplace login` stored (it can be refreshed).
    from_login: bool = False

    def require_token(self) -> str:
        if not self.token:
            raise CliError(
                "NOT_LOGGED_IN",
                f"no token for {self.backend}: run `marketplace login`, "
                "or pass --token / set MARKETPLACE_TOKEN",
            )
        return self.token


def resolve_backend(backend: str | None, store: CredentialStore | None = None) -> str:
    if backend:
        return normalize_backend(backend)
    stored = (store or CredentialStore()).default_backend()
    return normalize_backend(stored or DEFAULT_BACKEND)


def resolve_credentials(
    backend: str | None, token: str | None, store: CredentialStore | None = None
) -> Credentials:
    """Backend and token from options/environment (already merged by Typer), else the store."""
    store = store or CredentialStore()
    resolved = resolve_backend(backend, store)
    if token:
        return Credentials(resolved, token)
    stored = store.token_for(resolved)
    return Credentials(resolved, stored, from_login=stored is not None)
