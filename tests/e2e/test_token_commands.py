"""A publishing token (`mkt_pat_`) on every command that talks to the server, through
`--token` and through MARKETPLACE_TOKEN, and what `whoami` says about it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.market import Market, write_plugin
from tests.helpers import ok

pytestmark = pytest.mark.e2e

DEAD_TOKEN = (
    "error: UNAUTHORIZED: the server refused the publishing token (expired, deleted or "
    "revoked): Publishing token has been revoked (deleted by its owner); create a new one "
    "(POST /api/v1/auth/tokens) and pass it with --token or MARKETPLACE_TOKEN (HTTP 401)"
)


def _issue(market: Market, owner_token: str, **body: Any) -> dict[str, Any]:
    request = {"name": "cmd", "expiresInDays": 1, **body}
    headers = {"Authorization": f"Bearer {owner_token}"}
    response = httpx.post(f"{market.url}/api/v1/auth/tokens", json=request, headers=headers)
    data: dict[str, Any] = ok(response, 201)
    return data


def _delete(market: Market, owner_token: str, token_id: str) -> None:
    headers = {"Authorization": f"Bearer {owner_token}"}
    ok(httpx.delete(f"{market.url}/api/v1/auth/tokens/{token_id}", headers=headers))


def _env(market: Market, token: str) -> dict[str, str]:
    return market.client_env(MARKETPLACE_BACKEND=market.url, MARKETPLACE_TOKEN=token)


def test_whoami_names_a_publishing_token_from_the_option_or_the_environment(
    market: Market,
) -> None:
    pat = _issue(market, market.developer_token, scopes=["publish"])
    expected = [
        f"A live publishing token on {market.url} (the account behind it is not shown: "
        "account endpoints refuse publishing tokens)",
        "Credential: publishing token (mkt_pat_...) from --token or MARKETPLACE_TOKEN",
    ]

    by_option = market.cli("whoami", token=pat["token"])
    by_env = market.cli("whoami", env=_env(market, pat["token"]))

    assert by_option.returncode == 0, by_option.stderr
    assert by_option.stdout.splitlines() == expected
    assert by_env.returncode == 0, by_env.stderr
    assert by_env.stdout.splitlines() == expected
    assert pat["token"] not in by_option.stdout + by_env.stdout

    _delete(market, market.developer_token, pat["id"])
    dead = market.cli("whoami", env=_env(market, pat["token"]))
    assert dead.returncode == 1
    assert dead.stderr.strip() == DEAD_TOKEN


def test_whoami_with_an_access_token_names_the_account(market: Market) -> None:
    result = market.cli("whoami", token=market.admin_token)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"admin@example.com (SUPER_ADMIN) on {market.url}",
        "Credential: access token from --token or MARKETPLACE_TOKEN (not renewed)",
    ]
    bad = market.cli("whoami", token="not-a-token")
    assert bad.returncode == 1
    assert bad.stderr.strip() == (
        "error: UNAUTHORIZED: Invalid or expired token; run `marketplace login`, or pass a "
        "new token with --token or MARKETPLACE_TOKEN (HTTP 401)"
    )


def test_publish_and_publish_batch_take_a_token_by_option_and_environment(
    market: Market, tmp_path: Path
) -> None:
    pat = _issue(market, market.developer_token, scopes=["publish"])
    single = write_plugin(tmp_path / "one", "pat-option")
    batch_root = tmp_path / "batch"
    write_plugin(batch_root, "pat-env-batch")

    published = market.cli("publish", str(single), token=pat["token"])
    batch = market.cli("publish-batch", str(batch_root), env=_env(market, pat["token"]))

    assert published.returncode == 0, published.stderr
    assert [v["version"] for v in market.versions("pat-option")] == ["1.0.0"]
    assert batch.returncode == 0, batch.stderr
    assert [v["version"] for v in market.versions("pat-env-batch")] == ["1.0.0"]
    # Both went through the developer group as the token's owner.
    developer = ok(
        httpx.get(
            f"{market.url}/api/v1/auth/me",
            headers={"Authorization": f"Bearer {market.developer_token}"},
        )
    )["user"]["id"]
    assert market.plugin("pat-option")["ownerId"] == developer
    assert market.plugin("pat-env-batch")["ownerId"] == developer

    _delete(market, market.developer_token, pat["id"])
    refused = market.cli("publish-batch", str(batch_root), token=pat["token"])
    assert refused.returncode == 1
    assert DEAD_TOKEN in refused.stderr


def test_install_review_and_audit_take_a_read_token(market: Market, tmp_path: Path) -> None:
    folder = write_plugin(tmp_path / "src", "pat-install")
    assert market.as_admin("publish", str(folder)).returncode == 0
    reader = _issue(market, market.admin_token, scopes=["read"])
    target = tmp_path / "installed"

    installed = market.cli(
        "install", "pat-install", "--dir", str(target), env=_env(market, reader["token"])
    )
    listed = market.cli("review", "list", token=reader["token"])
    audited = market.cli("audit", "--dir", str(target), "--fix", token=reader["token"])

    assert installed.returncode == 0, installed.stderr
    assert (target / "pat-install" / "1.0.0" / "manifest.json").is_file()
    # Recording an install is an account write that tokens may not make: said, not fatal.
    assert (
        "warning: the install could not be reported: FORBIDDEN: the publishing token does not "
        "allow this"
    ) in installed.stderr
    assert listed.returncode == 0, listed.stderr
    assert audited.returncode == 0, audited.stderr
