"""A live marketplace for end-to-end tests: a real server, an administrator, a verified
developer, the CLI run as a subprocess against it, and admin reads of the server's state.
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.server import COMMAND, LiveServer, live_server, server_env
from tests.e2e.topology import EMBEDDED, BlobView, Topology
from tests.helpers import ok
from tests.invariants import broken_invariants
from tests.migrations import run_now

PASSWORD = "e2e-password-1"
ADMIN_EMAIL = "admin@example.com"
DEVELOPER_EMAIL = "dev@example.com"
SVG_ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16">'
    '<rect width="16" height="16" fill="teal"/></svg>\n'
)


@dataclass
class Market:
    server: LiveServer
    admin_token: str
    developer_token: str
    work: Path
    topology: Topology

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def blobs(self) -> BlobView:
        return self.topology.blob_view(self.server.data_dir)

    @property
    def database_url(self) -> str:
        return self.topology.env.get(
            "MARKETPLACE_DATABASE_URL",
            f"sqlite+aiosqlite:///{self.server.data_dir.resolve() / 'marketplace.db'}",
        )

    def broken_invariants(self) -> list[str]:
        """DESIGN.md's invariants over the server's whole state ([] when they hold), and
        no upload temp file left behind."""
        broken = run_now(self.database_url, broken_invariants(self.blob_files()))
        uploads = self.server.data_dir / "uploads"
        if uploads.exists():
            broken += [f"temp file left: {p.name}" for p in uploads.glob("upload-*.part")]
        return broken

    def blob_files(self) -> set[str]:
        """The keys of every stored blob (local files or S3 objects)."""
        return self.blobs.keys()

    def corrupt_blob(self, sha256: str) -> None:
        """Change the stored bytes of a blob behind the service's back, keeping its size."""
        key = f"{sha256[:2]}/{sha256[2:4]}/{sha256}"
        content = bytearray(self.blobs.read(key))
        content[len(content) // 2] ^= 0xFF
        self.blobs.write(key, bytes(content))

    def client_env(self, **extra: str) -> dict[str, str]:
        """The CLI's environment: its own config and plugin folders, never the user's."""
        env = dict(self.server.env)
        env.update(
            HOME=str(self.work / "home"),
            MARKETPLACE_CONFIG_DIR=str(self.work / "config"),
            MARKETPLACE_PLUGINS_DIR=str(self.work / "plugins-installed"),
        )
        env.update(extra)
        return env

    def cli(
        self,
        *args: str,
        token: str | None = None,
        stdin: str | None = None,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """`marketplace ARGS` against this server, with `--token` when one is given."""
        full = list(args)
        if token is not None:
            full += ["--backend", self.url, "--token", token]
        return subprocess.run(
            [*COMMAND, *full],
            env=dict(env) if env is not None else self.client_env(),
            cwd=cwd or self.work,
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    def new_user(self, name: str) -> str:
        """A plain USER account (the plugin center's user); returns its token."""
        _register(self.url, f"{name}@example.com", name)
        return _login(self.url, f"{name}@example.com")

    def as_admin(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.cli(*args, token=self.admin_token, **kwargs)

    def as_developer(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.cli(*args, token=self.developer_token, **kwargs)

    # --- the server's state, read back over HTTP with the admin token ---------------------

    def request(self, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        return ok(httpx.request(method, self.url + path, headers=headers, **kwargs), status)

    def find_plugin(self, plugin_key: str) -> dict[str, Any] | None:
        items = self.request("GET", "/api/v1/admin/plugins", params={"search": plugin_key})
        found = [p for p in items["items"] if p["pluginKey"] == plugin_key]
        return found[0] if found else None

    def plugin(self, plugin_key: str) -> dict[str, Any]:
        data: dict[str, Any] = self.request("GET", f"/api/v1/admin/plugins/{plugin_key}")
        return data

    def versions(self, plugin_key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.request(
            "GET", f"/api/v1/admin/plugins/{plugin_key}/versions"
        )["items"]
        return items

    def version(self, plugin_key: str, version: str) -> dict[str, Any]:
        [found] = [v for v in self.versions(plugin_key) if v["version"] == version]
        return found

    def download_info(self, version_id: str) -> dict[str, Any]:
        data: dict[str, Any] = self.request(
            "GET", f"/api/v1/admin/plugins/versions/{version_id}/download"
        )
        return data

    def download_package(self, version_id: str) -> bytes:
        """The bytes the service serves for a tarball version (through its presigned URL)."""
        info = self.download_info(version_id)
        response = httpx.get(info["url"])
        assert response.status_code == 200, response.text
        return response.content


def package_members(package: bytes) -> dict[str, bytes]:
    """Every regular file of a .tar.gz, by name."""
    with tarfile.open(fileobj=io.BytesIO(package), mode="r:gz") as tar:
        return {
            member.name: tar.extractfile(member).read()  # type: ignore[union-attr]
            for member in tar.getmembers()
            if member.isfile()
        }


def write_plugin(
    parent: Path,
    key: str,
    *,
    files: Mapping[str, str | bytes] | None = None,
    folder: str | None = None,
    **manifest: Any,
) -> Path:
    """A plugin folder `parent/<folder or key>` with manifest.json and its files."""
    document: dict[str, Any] = {
        "id": key,
        "version": "1.0.0",
        "name": f"{key} plugin",
        "description": f"The {key} plugin, for end-to-end tests",
        "type": "tool",
        "category": "utility",
        "main": "index.js",
    }
    document.update(manifest)
    if files is None:
        files = {"index.js": f"export default function {key.replace('-', '_')}() {{}}\n"}
        if document["main"] == "":
            files = {}
    target = parent / (folder or key)
    target.mkdir(parents=True, exist_ok=True)
    (target / "manifest.json").write_text(json.dumps(document, indent=2), encoding="utf-8")
    for name, content in files.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return target


def _register(url: str, email: str, name: str) -> dict[str, Any]:
    account = {"email": email, "password": PASSWORD, "name": name}
    user: dict[str, Any] = ok(httpx.post(f"{url}/api/v1/auth/register", json=account), 201)["user"]
    return user


def _login(url: str, email: str) -> str:
    data = ok(httpx.post(f"{url}/api/v1/auth/login", json={"email": email, "password": PASSWORD}))
    token: str = data["accessToken"]
    return token


def _create_admin(server: LiveServer) -> str:
    """The first SUPER_ADMIN, made from the command line as on a new install."""
    created = server.cli(
        "user", "create", "--email", ADMIN_EMAIL, "--password", PASSWORD,
        "--name", "Admin", "--role", "SUPER_ADMIN", check=False,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    return _login(server.url, ADMIN_EMAIL)


def _create_verified_developer(url: str, admin_token: str) -> str:
    """A developer the way one comes to exist: register, become a developer, get verified."""
    user = _register(url, DEVELOPER_EMAIL, "Dev")
    token = _login(url, DEVELOPER_EMAIL)
    mine = {"Authorization": f"Bearer {token}"}
    ok(httpx.post(f"{url}/api/v1/developer/register", json={"displayName": "Dev"}, headers=mine))
    ok(httpx.post(f"{url}/api/v1/developer/identity", json={"realName": "Dev"}, headers=mine))
    review = f"{url}/api/v1/admin/developers/{user['id']}/identity/review"
    admin = {"Authorization": f"Bearer {admin_token}"}
    assert ok(httpx.post(review, json={"approved": True}, headers=admin))["status"] == "verified"
    return token


@contextmanager
def running_market(root: Path, topology: Topology = EMBEDDED, **extra_env: str) -> Iterator[Market]:
    """A server under `root/data` (in `topology`) with an administrator and a verified
    developer."""
    data_dir = root / "data"
    env = {**topology.env, **extra_env}
    if topology.needs_upgrade:
        upgraded = subprocess.run(
            [*COMMAND, "db", "upgrade"],
            env=server_env(data_dir, 0, **env),
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert upgraded.returncode == 0, upgraded.stderr
    with live_server(data_dir, serve_args=topology.serve_args, **env) as server:
        admin_token = _create_admin(server)
        developer_token = _create_verified_developer(server.url, admin_token)
        work = root / "work"
        work.mkdir()
        yield Market(server, admin_token, developer_token, work, topology)
