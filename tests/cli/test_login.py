from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from marketplace_client.config import (
    CredentialStore,
    config_dir,
    normalize_backend,
    plugins_dir,
    resolve_credentials,
)
from marketplace_client.errors import CliError

from .fake_api import FakeApi, envelope, error
from .helpers import BACKEND, Invoke, file_mode, stdout_json

LOGIN = "/api/v1/auth/login"


def login_ok(fake: FakeApi, token: str = "jwt-1") -> None:  # noqa: S107
    user = {"id": "u1", "email": "dev@example.com", "role": "DEVELOPER"}
    fake.ok("POST", LOGIN, {"accessToken": token, "refreshToken": "r", "user": user})


def test_login_asks_the_password_without_echo_and_stores_the_token_0600(
    fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    login_ok(fake)
    result = invoke(
        ["login", "--backend", BACKEND + "/", "--email", "dev@example.com"],
        auth=False,
        interactive=True,
        input="s3cret-pass\n",
    )
    assert result.exit_code == 0, result.output
    assert "s3cret-pass" not in result.output
    assert fake.find("POST", LOGIN).json == {"email": "dev@example.com", "password": "s3cret-pass"}
    path = isolated_env / "credentials.json"
    assert file_mode(path) == 0o600
    stored = json.loads(path.read_text())
    assert stored["default"] == BACKEND
    assert stored["backends"][BACKEND]["token"] == "jwt-1"
    assert "Logged in to http://market.test as dev@example.com (DEVELOPER)" in result.stdout


def test_login_reads_the_password_from_stdin_for_scripts(fake: FakeApi, invoke: Invoke) -> None:
    login_ok(fake)
    result = invoke(
        ["login", "--backend", BACKEND, "--email", "dev@example.com", "--password-stdin", "--json"],
        auth=False,
        input="from-stdin\n",
    )
    assert result.exit_code == 0, result.output
    assert fake.find("POST", LOGIN).json["password"] == "from-stdin"
    assert stdout_json(result)["data"]["role"] == "DEVELOPER"


def test_login_without_terminal_or_password_stdin_refuses_instead_of_hanging(
    fake: FakeApi, invoke: Invoke
) -> None:
    result = invoke(["login", "--backend", BACKEND, "--email", "a@b.c"], auth=False)
    assert result.exit_code == 1
    assert "--password-stdin" in result.stderr
    assert fake.requests == []


def test_failed_login_prints_the_service_code_and_message(
    fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    fake.on("POST", LOGIN, error(401, "UNAUTHORIZED", "Invalid e-mail or password"))
    result = invoke(
        ["login", "--backend", BACKEND, "--email", "a@b.c", "--password-stdin"],
        auth=False,
        input="wrong\n",
    )
    assert result.exit_code == 1
    assert result.stderr.strip() == ("error: UNAUTHORIZED: Invalid e-mail or password (HTTP 401)")
    assert not (isolated_env / "credentials.json").exists()


def test_stored_token_is_used_by_later_commands(fake: FakeApi, invoke: Invoke) -> None:
    login_ok(fake, token="stored-jwt")
    invoke(
        ["login", "--backend", BACKEND, "--email", "a@b.c", "--password-stdin"],
        auth=False,
        input="pw\n",
    )
    fake.on("GET", "/api/v1/plugins/download/demo-plugin/latest", error(404, "PLUGIN_NOT_FOUND"))
    result = invoke(["install", "demo-plugin"], auth=False)
    assert result.exit_code == 1
    request = fake.requests[-1]
    assert str(request.path) == "/api/v1/plugins/download/demo-plugin/latest"
    assert request.headers["authorization"] == "Bearer stored-jwt"


def test_logout_forgets_the_token(fake: FakeApi, invoke: Invoke) -> None:
    login_ok(fake)
    fake.ok("POST", "/api/v1/auth/logout", {})
    invoke(
        ["login", "--backend", BACKEND, "--email", "a@b.c", "--password-stdin"],
        auth=False,
        input="pw\n",
    )
    result = invoke(["logout"], auth=False)
    assert result.exit_code == 0
    assert "Logged out of http://market.test" in result.stdout
    assert fake.find("POST", "/api/v1/auth/logout").json == {"refreshToken": "r"}
    assert CredentialStore().token_for(BACKEND) is None


def test_token_and_backend_resolution_order(monkeypatch: pytest.MonkeyPatch) -> None:
    store = CredentialStore()
    store.save("http://a.test", "token-a", "a@x")
    store.save("http://b.test", "token-b", "b@x")
    # The last login is the default backend, with its own token.
    assert resolve_credentials(None, None) == resolve_credentials("http://b.test", None)
    assert resolve_credentials(None, None).token == "token-b"
    # A token is only used for the backend it was issued by.
    assert resolve_credentials("http://a.test/", None).token == "token-a"
    assert resolve_credentials("http://c.test", None).token is None
    # An explicit token wins.
    assert resolve_credentials("http://a.test", "explicit").token == "explicit"


def test_environment_variables_are_read_by_the_options(
    fake: FakeApi, invoke: Invoke, tmp_path: Path
) -> None:
    fake.on("GET", "/api/v1/plugins/download/demo-plugin/latest", error(404, "PLUGIN_NOT_FOUND"))
    result = invoke(
        ["install", "demo-plugin", "--dir", str(tmp_path / "p")],
        auth=False,
        env={"MARKETPLACE_BACKEND": "http://env.test", "MARKETPLACE_TOKEN": "env-token"},
    )
    assert result.exit_code == 1
    request = fake.requests[0]
    assert request.headers["host"] == "env.test"
    assert request.headers["authorization"] == "Bearer env-token"


def test_commands_needing_a_token_say_how_to_get_one(fake: FakeApi, invoke: Invoke) -> None:
    result = invoke(["install", "demo-plugin"], auth=False)
    assert result.exit_code == 1
    assert "NOT_LOGGED_IN" in result.stderr
    assert "marketplace login" in result.stderr
    assert fake.requests == []


def test_config_dir_honours_override_then_xdg(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert config_dir() == tmp_path / "config"
    monkeypatch.delenv("MARKETPLACE_CONFIG_DIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_dir() == tmp_path / "xdg" / "marketplace"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/ignored")
    assert config_dir() == Path.home() / ".config" / "marketplace"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert plugins_dir() == tmp_path / "data" / "marketplace" / "plugins"


@pytest.mark.parametrize("url", ["ftp://x", "not a url", "http://"])
def test_bad_backend_urls_are_refused(url: str) -> None:
    with pytest.raises(CliError):
        normalize_backend(url)


REFRESH = "/api/v1/auth/refresh"
ME_PATH = "/api/v1/auth/me"
DEV = {"id": "u1", "email": "dev@example.com", "role": "DEVELOPER"}


def _stored_login(expires_in: int = 3600) -> CredentialStore:
    store = CredentialStore()
    store.save(BACKEND, "old-access", "dev@example.com", refresh_token="old-refresh",
               expires_in=expires_in)  # fmt: skip
    return store


def _new_pair(token: str = "new-access", refresh: str = "new-refresh") -> dict[str, object]:  # noqa: S107 - test values
    return {"accessToken": token, "refreshToken": refresh, "expiresIn": 3600, "user": DEV}


def test_login_stores_the_refresh_token_and_the_expiry(
    fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    fake.ok("POST", LOGIN, _new_pair("jwt-1", "refresh-1"))
    result = invoke(
        ["login", "--backend", BACKEND, "--email", "dev@example.com", "--password-stdin"],
        auth=False,
        input="pw\n",
    )
    assert result.exit_code == 0, result.output
    entry = json.loads((isolated_env / "credentials.json").read_text())["backends"][BACKEND]
    assert (entry["token"], entry["refreshToken"]) == ("jwt-1", "refresh-1")
    login = CredentialStore().login_for(BACKEND)
    assert login is not None and login.expires_at is not None


def test_a_401_renews_the_stored_login_once_and_repeats_the_request(
    fake: FakeApi, invoke: Invoke
) -> None:
    _stored_login()
    fake.on("GET", ME_PATH, error(401, "UNAUTHORIZED", "Invalid or expired token"),
            envelope({"user": DEV}))  # fmt: skip
    fake.ok("POST", REFRESH, _new_pair())
    result = invoke(["whoami", "--backend", BACKEND, "--json"], auth=False)
    assert result.exit_code == 0, result.output
    assert fake.calls() == [("GET", ME_PATH), ("POST", REFRESH), ("GET", ME_PATH)]
    assert fake.find("POST", REFRESH).json == {"refreshToken": "old-refresh"}
    assert fake.requests[0].headers["authorization"] == "Bearer old-access"
    assert fake.requests[2].headers["authorization"] == "Bearer new-access"
    assert "authorization" not in fake.requests[1].headers
    login = CredentialStore().login_for(BACKEND)
    assert login is not None
    assert (login.token, login.refresh_token) == ("new-access", "new-refresh")
    data = stdout_json(result)["data"]
    assert (data["credential"], data["user"]["email"]) == ("login", "dev@example.com")


def test_a_login_refreshed_by_another_command_is_used_without_refreshing_again(
    fake: FakeApi, invoke: Invoke
) -> None:
    store = _stored_login()

    def meanwhile(request: httpx.Request) -> httpx.Response:
        # Another command rotated the pair while this request was on its way.
        store.rotate(BACKEND, "old-refresh", "their-access", "their-refresh", 3600)
        return error(401, "UNAUTHORIZED", "Invalid or expired token")

    fake.on("GET", ME_PATH, meanwhile, envelope({"user": DEV}))
    result = invoke(["whoami", "--backend", BACKEND], auth=False)
    assert result.exit_code == 0, result.output
    assert ("POST", REFRESH) not in fake.calls()
    assert fake.requests[-1].headers["authorization"] == "Bearer their-access"


def test_a_login_of_another_account_saved_meanwhile_is_neither_adopted_nor_overwritten(
    fake: FakeApi, invoke: Invoke
) -> None:
    store = _stored_login()

    def meanwhile(request: httpx.Request) -> httpx.Response:
        # The user logged in as another account while this command was running.
        store.save(BACKEND, "b-access", "b@example.com", refresh_token="b-refresh",
                   expires_in=3600)  # fmt: skip
        return error(401, "UNAUTHORIZED", "Invalid or expired token")

    fake.on("GET", ME_PATH, meanwhile)
    result = invoke(["whoami", "--backend", BACKEND], auth=False)
    assert result.exit_code == 1
    assert ("POST", REFRESH) not in fake.calls()
    assert all(r.headers.get("authorization") != "Bearer b-access" for r in fake.requests)
    login = CredentialStore().login_for(BACKEND)
    assert login is not None
    assert (login.email, login.token, login.refresh_token) == (
        "b@example.com",
        "b-access",
        "b-refresh",
    )


def test_a_rotation_of_a_refresh_token_no_longer_stored_changes_nothing() -> None:
    store = _stored_login()
    store.save(BACKEND, "b-access", "b@example.com", refresh_token="b-refresh", expires_in=60)

    store.rotate(BACKEND, "old-refresh", "a-new-access", "a-new-refresh", 3600)

    login = store.login_for(BACKEND)
    assert login is not None
    assert (login.email, login.token, login.refresh_token) == (
        "b@example.com",
        "b-access",
        "b-refresh",
    )


def test_a_refused_refresh_says_to_log_in_again_and_keeps_the_file(
    fake: FakeApi, invoke: Invoke
) -> None:
    _stored_login()
    fake.on("GET", ME_PATH, error(401, "UNAUTHORIZED", "Invalid or expired token"))
    fake.on("POST", REFRESH, error(401, "UNAUTHORIZED", "Invalid or expired refresh token"))
    result = invoke(["whoami", "--backend", BACKEND], auth=False)
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "error: UNAUTHORIZED: Invalid or expired token; the stored login has expired or was "
        "revoked: run `marketplace login` (HTTP 401)"
    )
    assert fake.calls().count(("POST", REFRESH)) == 1
    assert CredentialStore().token_for(BACKEND) == "old-access"


def test_logout_when_the_service_fails_removes_the_login_and_exits_1(
    fake: FakeApi, invoke: Invoke, isolated_env: Path
) -> None:
    _stored_login()
    fake.on("POST", "/api/v1/auth/logout", error(503, "SERVICE_UNAVAILABLE", "retry later"))
    result = invoke(["logout", "--backend", BACKEND], auth=False)
    assert result.exit_code == 1
    path = isolated_env / "credentials.json"
    assert result.stdout.strip() == f"Logged out of {BACKEND} on this machine only: {path} removed"
    assert result.stderr.strip() == (
        "error: REVOKE_FAILED: the refresh token could not be revoked on the server "
        "(SERVICE_UNAVAILABLE: retry later (HTTP 503)); it stays valid there until it expires"
    )
    assert not path.exists()
