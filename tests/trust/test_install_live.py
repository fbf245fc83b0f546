"""`marketplace install` against a live server: releases signed before `keys rotate` still
install, new approvals use the new key, and bytes changed in the blob store are refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.market import Market, running_market, write_plugin

pytestmark = pytest.mark.e2e

TRUST_EXIT = 3


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Market]:
    with running_market(tmp_path_factory.mktemp("trust-market")) as live:
        yield live


def release_key(market: Market, key: str, version: str) -> str:
    info = market.download_info(market.version(key, version)["id"])
    record: dict[str, Any] = info["release"]
    return str(record["keyId"])


def publish(market: Market, parent: Path, key: str, version: str) -> None:
    folder = write_plugin(parent, key, version=version, folder=f"{key}-{version}")
    result = market.as_admin("publish", str(folder))
    assert result.returncode == 0, result.stderr


def test_a_release_signed_before_a_rotation_still_installs(market: Market, tmp_path: Path) -> None:
    publish(market, tmp_path / "src", "rotating", "1.0.0")
    old_key = release_key(market, "rotating", "1.0.0")
    token = market.new_user("rotation-user")
    assert (
        market.cli("install", "rotating", "--dir", str(tmp_path / "a"), token=token).returncode == 0
    )

    rotated = market.server.cli("keys", "rotate")
    assert rotated.stdout.startswith("new signing key ")
    publish(market, tmp_path / "src", "rotating", "1.1.0")
    new_key = release_key(market, "rotating", "1.1.0")
    assert new_key != old_key
    assert release_key(market, "rotating", "1.0.0") == old_key

    for version in ("1.0.0", "1.1.0"):
        target = tmp_path / f"v{version}"
        args = ("install", "rotating", "--version", version, "--dir", str(target))
        result = market.cli(*args, token=token)
        assert result.returncode == 0, result.stderr
        assert (target / "rotating" / version / "manifest.json").is_file()
    pins = json.loads((market.work / "config" / "trusted-keys.json").read_text())
    assert {old_key, new_key} <= set(pins["backends"][market.url])


def blob_key(market: Market, key: str) -> str:
    sha256 = market.version(key, "1.0.0")["sha256"]
    return f"{sha256[:2]}/{sha256[2:4]}/{sha256}"


@pytest.mark.parametrize(
    ("change", "code"),
    [("swap", "CHECKSUM_MISMATCH"), ("truncate", "SIZE_MISMATCH")],
)
def test_bytes_changed_in_the_blob_store_after_approval_are_refused(
    market: Market, tmp_path: Path, change: str, code: str
) -> None:
    key = f"tampered-{change}"
    publish(market, tmp_path / "src", key, "1.0.0")
    blob = blob_key(market, key)
    data = market.blobs.read(blob)
    if change == "swap":
        market.blobs.write(blob, data[:-1] + bytes([data[-1] ^ 0xFF]))
    else:
        market.blobs.write(blob, data[:-5])
    target = tmp_path / "plugins"
    token = market.new_user(f"{change}-user")

    result = market.cli("install", key, "--dir", str(target), "--json", token=token)

    assert result.returncode == TRUST_EXIT, result.stderr
    assert json.loads(result.stdout)["error"]["code"] == code
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {code}: ")
    assert line.endswith("; nothing was installed")
    assert not target.exists()
