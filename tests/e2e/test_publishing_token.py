"""CI publishing with a `mkt_pat_` token against a live server: through MARKETPLACE_TOKEN,
refused for another plugin, refused once deleted, and what the tool says each time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.market import Market, write_plugin
from tests.helpers import ok

pytestmark = pytest.mark.e2e


def issue(market: Market, body: dict[str, Any]) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {market.developer_token}"}
    response = httpx.post(f"{market.url}/api/v1/auth/tokens", json=body, headers=headers)
    data: dict[str, Any] = ok(response, 201)
    return data


def test_ci_publishes_with_a_scoped_token_and_is_refused_once_it_is_deleted(
    market: Market, tmp_path: Path
) -> None:
    token = issue(
        market,
        {"name": "ci", "scopes": ["publish"], "plugins": ["ci-token-ok"], "expiresInDays": 1},
    )
    env = market.client_env(MARKETPLACE_BACKEND=market.url, MARKETPLACE_TOKEN=token["token"])

    allowed = write_plugin(tmp_path, "ci-token-ok")
    result = market.cli("publish", str(allowed), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("Submitted for review: ci-token-ok 1.0.0")
    assert market.plugin("ci-token-ok")["reviewStatus"] == "pending"

    other = write_plugin(tmp_path, "ci-token-other")
    result = market.cli("publish", str(other), env=env)
    assert result.returncode == 1
    assert (
        "error: FORBIDDEN: the publishing token does not allow this: This token is not "
        "allowed to publish this plugin (HTTP 403)"
    ) in result.stderr
    assert market.find_plugin("ci-token-other") is None

    headers = {"Authorization": f"Bearer {market.developer_token}"}
    ok(httpx.delete(f"{market.url}/api/v1/auth/tokens/{token['id']}", headers=headers))
    result = market.cli("publish", str(allowed), "--version", "1.0.1", env=env)
    assert result.returncode == 1
    assert (
        "error: UNAUTHORIZED: the server refused the publishing token (expired, deleted or "
        "revoked): Publishing token has been revoked (deleted by its owner); create a new one "
        "(POST /api/v1/auth/tokens) and pass it with --token or MARKETPLACE_TOKEN (HTTP 401)"
    ) in result.stderr
    assert [v["version"] for v in market.versions("ci-token-ok")] == ["1.0.0"]
