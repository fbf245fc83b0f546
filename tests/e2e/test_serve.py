from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.e2e.server import live_server

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


def test_user_create_refuses_duplicate_and_bad_input(tmp_path: Path) -> None:
    with live_server(tmp_path / "data") as server:
        server.cli(
            "user", "create", "--email", "b@example.com", "--password", "s3cret-pass", "--name", "B"
        )
        again = server.cli(
            "user",
            "create",
            "--email",
            "b@example.com",
            "--password",
            "s3cret-pass",
            "--name",
            "B",
            check=False,
        )
        assert again.returncode == 1
        assert "already registered" in again.stderr
        short = server.cli(
            "user",
            "create",
            "--email",
            "c@example.com",
            "--password",
            "x",
            "--name",
            "C",
            check=False,
        )
        assert short.returncode == 1
        assert "password" in short.stderr
        verified_user = server.cli(
            "user",
            "create",
            "--email",
            "d@example.com",
            "--password",
            "s3cret-pass",
            "--name",
            "D",
            "--verified",
            check=False,
        )
        assert verified_user.returncode == 1
        assert "--verified" in verified_user.stderr
