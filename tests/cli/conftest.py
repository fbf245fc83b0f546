from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from marketplace_client.context import Runtime
from marketplace_client.main import app

from .fake_api import FakeApi
from .helpers import BACKEND, TOKEN, Invoke


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Keep every test away from the real user's config, token and plugins."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MARKETPLACE_CONFIG_DIR", str(tmp_path / "config"))
    for name in (
        "MARKETPLACE_BACKEND",
        "MARKETPLACE_TOKEN",
        "MARKETPLACE_PLUGINS_DIR",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
    ):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "config"


@pytest.fixture
def fake() -> FakeApi:
    return FakeApi()


@pytest.fixture
def invoke(fake: FakeApi) -> Invoke:
    """Run the CLI against the fake service, with --backend/--token unless told otherwise."""

    def run(
        args: Sequence[str],
        *,
        auth: bool = True,
        interactive: bool = False,
        mcp_timeout: float = 10.0,
        input: str | None = None,
        env: dict[str, str] | None = None,
    ) -> Result:
        full = list(args)
        if auth:
            full += ["--backend", BACKEND, "--token", TOKEN]
        runtime = Runtime(
            transport=fake.transport, interactive=interactive, mcp_timeout=mcp_timeout
        )
        return CliRunner().invoke(app, full, obj=runtime, input=input, env=env)

    return run
