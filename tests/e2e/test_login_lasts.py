"""Logins that last, against a live server: the stored pair, its renewal (before expiry and
on a 401), rotation, `whoami`, `logout` revoking on the server, and what a dead login says."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from marketplace.auth.tokens import create_access_token
from tests.e2e.market import DEVELOPER_EMAIL, PASSWORD, Market, write_plugin
from tests.e2e.server import free_port
from tests.helpers import ok

pytestmark = pytest.mark.e2e

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
LOGIN_EXPIRED = (
    "error: UNAUTHORIZED: Invalid or expired token; the stored login has expired or was "
    "revoked: run `marketplace login` (HTTP 401)"
)


def _login(market: Market, config: Path) -> dict[str, str]:
    """`marketplace login` as the developer into its own config folder; the CLI's env."""
    env = market.client_env(MARKETPLACE_CONFIG_DIR=str(config))
    result = market.cli(
        "login", "--backend", market.url, "--email", DEVELOPER_EMAIL, "--password-stdin",
        stdin=PASSWORD + "\n", env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return env


def _stored(config: Path, market: Market) -> dict[str, Any]:
    path = config / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    entry: dict[str, Any] = json.loads(path.read_text())["backends"][market.url]
    return entry


def _edit_stored(config: Path, market: Market, **changes: str) -> None:
    path = config / "credentials.json"
    document = json.loads(path.read_text())
    document["backends"][market.url].update(changes)
    path.write_text(json.dumps(document))


def _refresh_status(market: Market, refresh_token: str) -> int:
    body = {"refreshToken": refresh_token}
    return httpx.post(f"{market.url}/api/v1/auth/refresh", json=body).status_code


def _me(market: Market, token: str) -> httpx.Response:
    return httpx.get(f"{market.url}/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})


def _expired_access_token(market: Market) -> str:
    """A real access token of the developer, signed by the server, that expired a minute ago."""
    user_id = ok(_me(market, market.developer_token))["user"]["id"]
    secret = market.server.env.get("MARKETPLACE_SECRET_KEY")
    if secret is None:
        secret = (market.server.data_dir / "secret.key").read_text().strip()
    token, _ = create_access_token(user_id, secret, minutes=-1)
    assert _me(market, token).status_code == 401
    return token


def _in(minutes: float) -> str:
    return (datetime.now(UTC) + timedelta(minutes=minutes)).strftime(TIME_FORMAT)


def test_login_stores_the_refresh_token_and_the_expiry_0600(market: Market) -> None:
    config = market.work / "lasts-store"
    before = datetime.now(UTC).replace(microsecond=0)
    _login(market, config)

    entry = _stored(config, market)
    assert set(entry) == {"token", "refreshToken", "expiresAt", "email", "savedAt"}
    assert entry["email"] == DEVELOPER_EMAIL
    expires = datetime.strptime(entry["expiresAt"], TIME_FORMAT).replace(tzinfo=UTC)
    assert before + timedelta(minutes=59) <= expires <= before + timedelta(minutes=61)
    assert ok(_me(market, entry["token"]))["user"]["email"] == DEVELOPER_EMAIL
    assert PASSWORD not in (config / "credentials.json").read_text()


def test_a_login_near_its_expiry_is_renewed_first_and_the_pair_rotates(market: Market) -> None:
    config = market.work / "lasts-proactive"
    env = _login(market, config)
    old = _stored(config, market)
    _edit_stored(config, market, expiresAt=_in(0.5))  # inside the one-minute margin

    result = market.cli("whoami", env=env)

    assert result.returncode == 0, result.stderr
    new = _stored(config, market)
    assert new["token"] != old["token"] and new["refreshToken"] != old["refreshToken"]
    assert new["expiresAt"] > _in(58)
    assert result.stdout.splitlines() == [
        f"{DEVELOPER_EMAIL} (DEVELOPER) on {market.url}",
        f"Credential: login stored in {config / 'credentials.json'}, access token valid "
        f"until {new['expiresAt']}, renewed automatically",
    ]
    assert ok(_me(market, new["token"]))["user"]["email"] == DEVELOPER_EMAIL
    # The server rotated: the old refresh token is refused; presenting it again (a replay)
    # revokes the whole login, the new refresh token included.
    assert _refresh_status(market, old["refreshToken"]) == 401
    assert _refresh_status(market, new["refreshToken"]) == 401


def test_an_expired_access_token_is_renewed_on_401_and_the_publish_repeated(
    market: Market, tmp_path: Path
) -> None:
    config = market.work / "lasts-on-401"
    env = _login(market, config)
    old = _stored(config, market)
    # The file says an hour is left, the server says the token is dead (a shorter server
    # lifetime, a clock ahead): the 401 is what tells.
    expired = _expired_access_token(market)
    _edit_stored(config, market, token=expired)

    folder = write_plugin(tmp_path, "lasts-refreshed")
    result = market.cli("publish", str(folder), env=env)

    assert result.returncode == 0, result.stderr
    assert "lasts-refreshed 1.0.0" in result.stdout
    assert [v["version"] for v in market.versions("lasts-refreshed")] == ["1.0.0"]
    new = _stored(config, market)
    assert new["token"] not in (expired, old["token"])
    assert new["refreshToken"] != old["refreshToken"]
    assert ok(_me(market, new["token"]))["user"]["email"] == DEVELOPER_EMAIL


def test_a_login_whose_refresh_token_is_revoked_says_to_log_in_again(
    market: Market, tmp_path: Path
) -> None:
    config = market.work / "lasts-dead"
    env = _login(market, config)
    stored = _stored(config, market)
    ok(
        httpx.post(
            f"{market.url}/api/v1/auth/logout", json={"refreshToken": stored["refreshToken"]}
        )
    )
    expired = _expired_access_token(market)
    _edit_stored(config, market, token=expired)

    whoami = market.cli("whoami", env=env)
    folder = write_plugin(tmp_path, "lasts-dead-login")
    publish = market.cli("publish", str(folder), env=env)

    assert whoami.returncode == 1 and whoami.stdout == ""
    assert whoami.stderr.strip() == LOGIN_EXPIRED
    assert publish.returncode == 1
    assert LOGIN_EXPIRED in publish.stderr
    assert market.find_plugin("lasts-dead-login") is None
    # Nothing was renewed or lost: the file still holds what it held.
    assert _stored(config, market) == {**stored, "token": expired}


def test_logout_revokes_the_refresh_token_on_the_server_and_removes_the_file(
    market: Market,
) -> None:
    config = market.work / "lasts-logout"
    env = _login(market, config)
    stored = _stored(config, market)

    result = market.cli("logout", env=env)

    assert result.returncode == 0, result.stderr
    path = config / "credentials.json"
    assert result.stdout.strip() == (
        f"Logged out of {market.url}: refresh token revoked on the server; {path} removed"
    )
    assert not path.exists()
    assert _refresh_status(market, stored["refreshToken"]) == 401
    again = market.cli("logout", "--backend", market.url, env=env)
    assert again.returncode == 0
    assert again.stdout.strip() == f"No login was stored for {market.url}"
    whoami = market.cli("whoami", "--backend", market.url, env=env)
    assert whoami.returncode == 1
    assert whoami.stderr.strip() == (
        f"error: NOT_LOGGED_IN: no token for {market.url}: run `marketplace login`, "
        "or pass --token / set MARKETPLACE_TOKEN"
    )


def test_logout_with_the_server_unreachable_still_removes_the_login_and_says_so(
    market: Market,
) -> None:
    config = market.work / "lasts-offline"
    env = _login(market, config)
    stored = _stored(config, market)
    gone = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    path = config / "credentials.json"
    document = json.loads(path.read_text())
    document["backends"][gone] = document["backends"].pop(market.url)
    document["default"] = gone
    path.write_text(json.dumps(document))

    result = market.cli("logout", env=env)

    assert result.returncode == 1
    assert result.stdout.strip() == f"Logged out of {gone} on this machine only: {path} removed"
    assert result.stderr.startswith(
        "error: REVOKE_FAILED: the refresh token could not be revoked on the server "
        f"(NETWORK_ERROR: cannot reach {gone}: "
    )
    assert result.stderr.strip().endswith("); it stays valid there until it expires")
    assert not path.exists()
    # It was not revoked: the server still honours it (what the message warned about).
    assert _refresh_status(market, stored["refreshToken"]) == 200


def test_logout_keeps_the_logins_of_other_backends(market: Market) -> None:
    config = market.work / "lasts-two"
    env = _login(market, config)
    path = config / "credentials.json"
    document = json.loads(path.read_text())
    other = {"token": "t", "refreshToken": None, "expiresAt": None, "email": "x@y"}
    document["backends"]["http://other.test"] = other
    path.write_text(json.dumps(document))

    result = market.cli("logout", "--backend", market.url, env=env)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"Logged out of {market.url}: refresh token revoked on the server; "
        f"login removed from {path}"
    )
    assert json.loads(path.read_text())["backends"] == {"http://other.test": other}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
