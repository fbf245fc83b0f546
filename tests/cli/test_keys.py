"""`marketplace keys list|rotate`: the operator's view of the release-signing keyring."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from marketplace.config import get_settings
from marketplace.trust.keyring import Keyring, dump_keyring, new_key, parse_keyring
from marketplace_client.main import app

from .helpers import stdout_json


@pytest.fixture
def data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "data"
    monkeypatch.setenv("MARKETPLACE_DATA_DIR", str(folder))
    for name in ("MARKETPLACE_SIGNING_KEYS", "MARKETPLACE_SIGNING_KEYS_FILE"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield folder
    get_settings.cache_clear()


def run(*args: str) -> Result:
    get_settings.cache_clear()
    return CliRunner().invoke(app, ["keys", *args])


def test_list_shows_the_file_keyring_created_on_first_use(data_dir: Path) -> None:
    result = run("list", "--json")
    assert result.exit_code == 0, result.output
    data = stdout_json(result)["data"]
    keyring = Keyring(path=data_dir / "signing-keys.json")
    [key] = keyring.keys()
    assert data["source"] == str(data_dir / "signing-keys.json")
    assert [(i["keyId"], i["signing"], i["retiredAt"]) for i in data["items"]] == [
        (key.key_id, True, None)
    ]
    assert "privateKey" not in json.dumps(data)


def test_rotate_adds_a_signing_key_and_retires_the_old_one_in_the_file(data_dir: Path) -> None:
    assert run("list").exit_code == 0
    path = data_dir / "signing-keys.json"
    [old] = Keyring(path=path).keys()

    result = run("rotate")

    assert result.exit_code == 0, result.output
    keys = parse_keyring(path.read_text())
    assert len(keys) == 2 and keys[0].key_id == old.key_id
    assert keys[0].retired_at is not None
    assert keys[1].retired_at is None
    assert Keyring(path=path).signing_key().key_id == keys[1].key_id
    assert result.stdout == (f"new signing key {keys[1].key_id} in {path}; retired {old.key_id}\n")
    listed = stdout_json(run("list", "--json"))["data"]["items"]
    assert [(i["keyId"], i["signing"]) for i in listed] == [
        (old.key_id, False),
        (keys[1].key_id, True),
    ]
    assert listed[0]["retiredAt"] is not None


def test_rotate_with_the_keyring_in_a_setting_prints_it_for_the_operator(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime

    original = dump_keyring([new_key(datetime(2026, 1, 1, tzinfo=UTC))])
    monkeypatch.setenv("MARKETPLACE_SIGNING_KEYS", original)
    [old] = parse_keyring(original)

    result = run("rotate")

    assert result.exit_code == 0, result.output
    rotated = parse_keyring(result.stdout)
    assert len(rotated) == 2 and rotated[0].key_id == old.key_id
    assert rotated[0].retired_at is not None and rotated[1].retired_at is None
    assert "MARKETPLACE_SIGNING_KEYS holds the keyring and the service cannot write a setting" in (
        result.stderr
    )
    assert f"the new signing key is {rotated[1].key_id}" in result.stderr
    assert not (data_dir / "signing-keys.json").exists()


def test_a_broken_keyring_setting_is_one_line_and_exit_1(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARKETPLACE_SIGNING_KEYS", "not json")
    result = run("list")
    assert result.exit_code == 1
    assert result.stderr == (
        "error: KEYRING_INVALID: the signing keyring cannot be used: the keyring is not JSON\n"
    )
