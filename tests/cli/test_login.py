from __future__ import annotations

import json
from pathlib import Path

import pytest

from marketplace.cli.config import (
    CredentialStore,
    config_dir,
    normalize_backend,
    plugins_dir,
    resolve_credentials,
)
from marketplace.cli.errors import CliError

from .fake_api import FakeApi, error
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
