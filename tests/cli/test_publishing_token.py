"""Publishing with a `mkt_pat_` token (--token or MARKETPLACE_TOKEN), the token's refusals
said as such, and the secret scan before anything is packed or sent."""

from __future__ import annotations

from pathlib import Path

from .fake_api import FakeApi, error
from .helpers import BACKEND, CATEGORIES, Invoke, make_plugin, stdout_json

DEV = "/api/v1/developer/plugins"
PAT = "mkt_pat_" + "Q" * 43
AWS_KEY = "AKIAQ3ZLBN5TJ2HVX7PW"  # an access key id's shape (AWS's ...EXAMPLE is a sample)


def developer_group(fake: FakeApi) -> None:
    """The developer group's answers, without /auth/me (a token may not call it)."""
    fake.ok("GET", "/api/v1/plugins/categories", {"items": [{"key": k} for k in CATEGORIES]})
    fake.on("GET", f"{DEV}/demo-plugin", error(404, "PLUGIN_NOT_FOUND", "Plugin does not exist"))
    plugin = {"id": "p-1", "pluginKey": "demo-plugin", "type": "tool", "reviewStatus": "pending"}
    fake.ok("POST", f"{DEV}/publish", plugin, status=201)
    fake.ok("POST", f"{DEV}/p-1/upload-version", {"id": "v-1"}, status=201)


def test_publish_with_a_token_option_uses_the_developer_group_without_asking_who(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    developer_group(fake)
    args = ["publish", str(make_plugin(tmp_path)), "--backend", BACKEND, "--token", PAT]
    result = invoke(args, auth=False)
    assert result.exit_code == 0, result.output
    assert ("GET", "/api/v1/auth/me") not in fake.calls()
    assert fake.writes() == [("POST", f"{DEV}/publish"), ("POST", f"{DEV}/p-1/upload-version")]
    assert {r.headers["authorization"] for r in fake.requests} == {f"Bearer {PAT}"}


def test_publish_reads_the_token_from_the_environment(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    developer_group(fake)
    env = {"MARKETPLACE_TOKEN": PAT, "MARKETPLACE_BACKEND": BACKEND}
    result = invoke(["publish", str(make_plugin(tmp_path))], auth=False, env=env)
    assert result.exit_code == 0, result.output
    assert fake.find("POST", f"{DEV}/publish").headers["authorization"] == f"Bearer {PAT}"


def test_a_dead_token_is_said_to_be_refused(tmp_path: Path, fake: FakeApi, invoke: Invoke) -> None:
    fake.on(
        "GET",
        "/api/v1/plugins/categories",
        error(401, "UNAUTHORIZED", "Publishing token has expired"),
    )
    args = ["publish", str(make_plugin(tmp_path)), "--backend", BACKEND, "--token", PAT]
    result = invoke(args, auth=False)
    assert result.exit_code != 0
    assert (
        "UNAUTHORIZED: the server refused the publishing token (expired, deleted or revoked): "
        "Publishing token has expired; create a new one (POST /api/v1/auth/tokens) and pass it "
        "with --token or MARKETPLACE_TOKEN (HTTP 401)"
    ) in result.output
    assert fake.writes() == []


def test_a_token_without_the_scope_or_plugin_is_said_to_be_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    developer_group(fake)
    fake.on(
        "POST",
        f"{DEV}/publish",
        error(403, "FORBIDDEN", "This token is not allowed to publish this plugin"),
    )
    args = ["publish", str(make_plugin(tmp_path)), "--backend", BACKEND, "--token", PAT]
    result = invoke(args, auth=False)
    assert result.exit_code != 0
    assert (
        "FORBIDDEN: the publishing token does not allow this: This token is not allowed to "
        "publish this plugin (HTTP 403)"
    ) in result.output


def test_a_login_token_keeps_the_servers_own_words(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    fake.on("GET", "/api/v1/auth/me", error(401, "UNAUTHORIZED", "Invalid or expired token"))
    result = invoke(["publish", str(make_plugin(tmp_path))])
    assert result.exit_code != 0
    assert (
        "UNAUTHORIZED: Invalid or expired token; run `marketplace login`, or pass a new token "
        "with --token or MARKETPLACE_TOKEN (HTTP 401)"
    ) in result.output
    assert "publishing token" not in result.output


def test_publish_refuses_a_folder_holding_a_secret_before_any_request(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    # (A `.env` file is not packed at all: see test_pack's sensitive defaults.)
    folder = make_plugin(tmp_path, files={"config/app.conf": f"AWS_KEY={AWS_KEY}\nT={PAT}\n"})
    result = invoke(["publish", str(folder), "--backend", BACKEND, "--token", PAT], auth=False)
    assert result.exit_code != 0
    assert "SECRETS_FOUND: the plugin folder holds 2 secrets" in result.output
    assert "file:config/app.conf: holds what looks like a secret: AWS Access Key" in result.output
    assert "marketplace publishing token (mkt_…(51 chars)) on line 2" in result.output
    assert AWS_KEY not in result.output and PAT not in result.output.replace(f"--token {PAT}", "")
    assert fake.requests == []


def test_validate_reports_secrets_as_errors(tmp_path: Path, invoke: Invoke) -> None:
    folder = make_plugin(tmp_path, files={"lib/keys.js": f"export const k = '{AWS_KEY}';\n"})
    result = invoke(["validate", str(folder), "--json"], auth=False)
    assert result.exit_code == 1, result.output
    findings = stdout_json(result)["data"]["findings"]
    secret = [f for f in findings if f["code"] == "secret-found"]
    assert [(f["path"], f["severity"]) for f in secret] == [("file:lib/keys.js", "error")]
    assert AWS_KEY not in result.output
