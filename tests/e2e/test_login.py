"""`marketplace login` against a live server: the token file, and later commands using it."""

from __future__ import annotations

import json
import stat

import httpx
import pytest

from tests.e2e.market import ADMIN_EMAIL, DEVELOPER_EMAIL, PASSWORD, Market, write_plugin

pytestmark = pytest.mark.e2e


def test_login_stores_a_working_token_readable_only_by_its_owner(market: Market) -> None:
    config = market.work / "login-config"
    env = market.client_env(MARKETPLACE_CONFIG_DIR=str(config))
    result = market.cli(
        "login",
        "--backend",
        market.url,
        "--email",
        DEVELOPER_EMAIL,
        "--password-stdin",
        stdin=PASSWORD + "\n",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    credentials = config / "credentials.json"
    assert f"Logged in to {market.url} as {DEVELOPER_EMAIL} (DEVELOPER)" in result.stdout
    assert str(credentials) in result.stdout
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    document = json.loads(credentials.read_text())
    assert document["default"] == market.url
    token = document["backends"][market.url]["token"]
    assert PASSWORD not in credentials.read_text()
    me = httpx.get(f"{market.url}/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
    assert me.json()["data"]["user"]["email"] == DEVELOPER_EMAIL


def test_login_with_a_wrong_password_fails_and_stores_nothing(market: Market) -> None:
    config = market.work / "wrong-config"
    result = market.cli(
        "login",
        "--backend",
        market.url,
        "--email",
        ADMIN_EMAIL,
        "--password-stdin",
        stdin="not-the-password\n",
        env=market.client_env(MARKETPLACE_CONFIG_DIR=str(config)),
    )
    assert result.returncode == 1
    assert "error: UNAUTHORIZED" in result.stderr
    assert "(HTTP 401)" in result.stderr
    assert not (config / "credentials.json").exists()


def test_publish_uses_the_backend_and_token_stored_by_login(market: Market) -> None:
    config = market.work / "publish-config"
    env = market.client_env(MARKETPLACE_CONFIG_DIR=str(config))
    login = market.cli(
        "login",
        "--backend",
        market.url,
        "--email",
        ADMIN_EMAIL,
        "--password-stdin",
        stdin=PASSWORD + "\n",
        env=env,
    )
    assert login.returncode == 0, login.stderr
    folder = write_plugin(market.work / "login-plugins", "stored-login")
    result = market.cli("publish", str(folder), env=env)  # no --backend, no --token
    assert result.returncode == 0, result.stderr
    assert "Published: stored-login 1.0.0" in result.stdout
    assert market.plugin("stored-login")["latestVersion"] == "1.0.0"
