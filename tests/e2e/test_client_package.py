"""The client package on its own: built as a wheel from `client/`, installed into an empty
venv from its own hash-checked lock, with none of the service's dependencies, and used as an
author and a user would against a live service (CONTRACT 18)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.market import Market, write_plugin

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("client-package")]

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client"
# CONTRACT 18: what `pip install ./client` must not bring.
SERVER_DISTRIBUTIONS = {
    "fastapi",
    "sqlalchemy",
    "alembic",
    "asyncpg",
    "aiosqlite",
    "tantivy",
    "boto3",
    "botocore",
    "argon2-cffi",
    "prometheus-client",
    "marketplace",
}


def _run(*args: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [str(a) for a in args], capture_output=True, text=True, timeout=600, **kwargs
    )


@dataclass
class ClientVenv:
    root: Path

    @property
    def marketplace(self) -> Path:
        return self.root / "bin" / "marketplace"

    def installed(self) -> set[str]:
        """The distributions the venv's own Python sees (normalised names)."""
        code = (
            "import importlib.metadata, json\n"
            "print(json.dumps([d.metadata['Name'] for d in importlib.metadata.distributions()]))"
        )
        listed = _run(self.root / "bin" / "python", "-c", code)
        assert listed.returncode == 0, listed.stderr
        return {name.lower().replace("_", "-") for name in json.loads(listed.stdout)}


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> ClientVenv:
    work = tmp_path_factory.mktemp("client-package")
    # The wheel is built with this venv's hatchling (no build isolation: nothing unpinned).
    built = _run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "--quiet", "--wheel-dir", work / "dist", CLIENT,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    [wheel] = (work / "dist").glob("marketplace_client-*.whl")
    venv = ClientVenv(work / "venv")
    made = _run(sys.executable, "-m", "venv", "--without-pip", venv.root)
    assert made.returncode == 0, made.stderr
    # pip of this venv installs into the new one: no bootstrap download of pip.
    pip = (sys.executable, "-m", "pip", "--python", str(venv.root / "bin" / "python"))
    deps = _run(*pip, "install", "--quiet", "--require-hashes", "-r", CLIENT / "requirements.lock")
    assert deps.returncode == 0, deps.stderr
    own = _run(*pip, "install", "--quiet", "--no-deps", wheel)
    assert own.returncode == 0, own.stderr
    return venv


def _client_env(market: Market) -> dict[str, str]:
    env = market.client_env()
    env.pop("PYTHONPATH", None)  # only what the client venv has installed
    return env


def test_the_client_venv_has_none_of_the_services_dependencies(client_venv: ClientVenv) -> None:
    installed = client_venv.installed()

    assert "marketplace-client" in installed
    assert installed & SERVER_DISTRIBUTIONS == set()
    imported = _run(client_venv.root / "bin" / "python", "-c", "import marketplace")
    assert imported.returncode != 0
    assert "No module named 'marketplace'" in imported.stderr


def test_the_client_has_the_authors_commands_and_none_of_the_servers(
    client_venv: ClientVenv,
) -> None:
    shown = _run(client_venv.marketplace, "--help", env={"COLUMNS": "200", "PATH": "/usr/bin"})

    assert shown.returncode == 0, shown.stderr
    for command in ("login", "validate", "publish", "install", "search", "info", "status"):
        assert f" {command} " in shown.stdout, command
    for command in ("serve", "db", "user", "storage", "keys"):
        assert f" {command} " not in shown.stdout, command


def test_the_client_alone_validates_publishes_and_installs_against_a_live_service(
    client_venv: ClientVenv, market: Market, tmp_path: Path
) -> None:
    env = _client_env(market)
    folder = write_plugin(tmp_path / "src", "client-only-tool")
    backend = ("--backend", market.url)

    validated = _run(client_venv.marketplace, "validate", folder, env=env)
    assert validated.returncode == 0, validated.stdout + validated.stderr

    published = _run(
        client_venv.marketplace, "publish", folder, *backend, "--token", market.developer_token,
        env=env,
    )  # fmt: skip
    assert published.returncode == 0, published.stdout + published.stderr
    assert market.plugin("client-only-tool")["reviewStatus"] == "pending"

    approved = _run(
        client_venv.marketplace, "review", "approve-plugin", "client-only-tool", *backend,
        "--token", market.admin_token, env=env,
    )  # fmt: skip
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert market.plugin("client-only-tool")["reviewStatus"] == "approved"

    target = tmp_path / "installed"
    user = market.new_user("client-only-user")
    installed = _run(
        client_venv.marketplace, "install", "client-only-tool", "--dir", target, *backend,
        "--token", user, env=env,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    path = target / "client-only-tool" / "1.0.0"
    assert json.loads((path / "manifest.json").read_text())["id"] == "client-only-tool"
    registry = json.loads((target / "registry.json").read_text())
    assert registry["plugins"]["client-only-tool"]["version"] == "1.0.0"
