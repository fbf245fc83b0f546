from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import LiveServer, live_server

pytestmark = pytest.mark.e2e


def test_serve_creates_data_folder_and_logs_in_user_made_by_cli(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with live_server(data_dir) as server:
        created = server.cli(
            "user",
            "create",
            "--email",
            "root@example.com",
            "--password",
            "s3cret-pass",
            "--name",
            "Root",
            "--role",
            "SUPER_ADMIN",
        )
        assert "created SUPER_ADMIN root@example.com" in created.stdout
        response = httpx.post(
            f"{server.url}/api/v1/auth/login",
            json={"email": "root@example.com", "password": "s3cret-pass"},
        )
        assert response.status_code == 200
        token = response.json()["data"]["accessToken"]
        me = httpx.get(f"{server.url}/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert me.json()["data"]["user"]["role"] == "SUPER_ADMIN"
        assert (data_dir / "marketplace.db").exists()
        key = (data_dir / "secret.key").read_text()
        assert len(key) >= 32
        assert (data_dir / "secret.key").stat().st_mode & 0o077 == 0


def test_secret_key_persists_across_restarts(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with live_server(data_dir) as server:
        server.cli(
            "user", "create", "--email", "a@example.com", "--password", "s3cret-pass", "--name", "A"
        )
        token = httpx.post(
            f"{server.url}/api/v1/auth/login",
            json={"email": "a@example.com", "password": "s3cret-pass"},
        ).json()["data"]["accessToken"]
    with live_server(data_dir) as server:
        me = httpx.get(f"{server.url}/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert me.status_code == 200


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for the `user create` refusals: each uses its own email."""
    with live_server(tmp_path_factory.mktemp("user-create") / "data") as live:
        yield live


def _user_create(
    server: LiveServer, email: str, password: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return server.cli(
        "user", "create", "--email", email, "--password", password, "--name", "B", *extra,
        check=False,
    )  # fmt: skip


def test_user_create_refuses_an_email_already_registered(server: LiveServer) -> None:
    assert _user_create(server, "b@example.com", "s3cret-pass").returncode == 0
    again = _user_create(server, "b@example.com", "s3cret-pass")
    assert again.returncode == 1
    assert "already registered" in again.stderr


def test_user_create_refuses_a_short_password_without_echoing_it(server: LiveServer) -> None:
    short = _user_create(server, "c@example.com", "short")
    assert short.returncode == 1
    assert short.stderr == "error: --password: must be at least 8 characters\n"
    assert short.stdout == ""
    login = {"email": "c@example.com", "password": "short"}
    assert httpx.post(f"{server.url}/api/v1/auth/login", json=login).status_code == 401


def test_user_create_lists_every_bad_option_at_once(server: LiveServer) -> None:
    long_password = "p" * 129
    bad = server.cli(
        "user", "create", "--email", "not-an-email", "--password", long_password, "--name", "",
        check=False,
    )  # fmt: skip
    assert bad.returncode == 1
    assert bad.stderr.splitlines() == [
        "error: --email: not a valid e-mail address (name@example.com)",
        "error: --password: must be at most 128 characters",
        "error: --name: must not be blank",
    ]
    assert long_password not in bad.stderr + bad.stdout


def test_user_create_refuses_verified_for_a_plain_user(server: LiveServer) -> None:
    verified_user = _user_create(server, "d@example.com", "s3cret-pass", "--verified")
    assert verified_user.returncode == 1
    assert "--verified" in verified_user.stderr
