"""The signing keyring: created once, rotated without losing old keys, refused when broken."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import SecretStr

from marketplace.config import Settings
from marketplace.trust.keyring import (
    Keyring,
    KeyringError,
    dump_keyring,
    new_key,
    parse_keyring,
    rotate_file,
    rotate_inline,
    verify,
)
from marketplace_rules.canonical import b64decode, b64encode, canonical_json


def test_canonical_json_matches_the_contract() -> None:
    record = {"version": "1.0.0", "key": "插件", "size": 3, "a": [1, {"z": 1, "b": None}]}
    assert canonical_json(record) == (
        '{"a":[1,{"b":null,"z":1}],"key":"插件","size":3,"version":"1.0.0"}'.encode()
    )


def test_b64decode_refuses_what_is_not_standard_base64() -> None:
    assert b64decode(b64encode(b"\x00\xff")) == b"\x00\xff"
    for bad in ("not base64!", "YQ", "YQ==\n", "-_-_", "é"):
        with pytest.raises(ValueError, match="base64"):
            b64decode(bad)


def test_a_file_keyring_is_created_once_private_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "data" / "signing-keys.json"
    first = Keyring(path=path).signing_key()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = Keyring(path=path).signing_key()
    assert again.key_id == first.key_id
    assert not list(path.parent.glob(".*.tmp"))


def test_signatures_verify_with_the_listed_public_key(tmp_path: Path) -> None:
    keyring = Keyring(path=tmp_path / "k.json")
    signed = keyring.sign(b"payload")
    [listed] = keyring.listing()
    assert listed["keyId"] == signed.key_id
    assert listed["algorithm"] == "ed25519"
    assert listed["retiredAt"] is None
    public = b64decode(listed["publicKey"])
    assert len(public) == 32
    assert verify(public, b"payload", b64decode(signed.signature))
    assert not verify(public, b"payloaD", b64decode(signed.signature))
    assert not verify(public, b"payload", b"\x00" * 64)
    assert not verify(b"short", b"payload", b64decode(signed.signature))


def test_rotation_retires_the_old_key_which_still_verifies(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    keyring = Keyring(path=path)
    old = keyring.signing_key()
    old_signature = keyring.sign(b"release")
    fresh, retired = rotate_file(path)
    assert [key.key_id for key in retired] == [old.key_id]
    # The running keyring sees the rotation without a restart.
    assert keyring.signing_key().key_id == fresh.key_id != old.key_id
    listed = {item["keyId"]: item for item in keyring.listing()}
    assert listed[old.key_id]["retiredAt"] is not None
    assert listed[fresh.key_id]["retiredAt"] is None
    public_old = b64decode(listed[old.key_id]["publicKey"])
    assert verify(public_old, b"release", b64decode(old_signature.signature))
    assert keyring.sign(b"next").key_id == fresh.key_id


def test_inline_keyring_from_settings_and_its_rotation(tmp_path: Path) -> None:
    text = dump_keyring([new_key(_now())])
    settings = Settings(data_dir=tmp_path, signing_keys=SecretStr(text))
    keyring = Keyring.from_settings(settings)
    assert keyring.path is None
    assert not (tmp_path / "signing-keys.json").exists()
    rotated, fresh = rotate_inline(text)
    keys = parse_keyring(rotated)
    assert [key.key_id for key in keys][-1] == fresh.key_id
    assert keys[0].retired_at is not None
    assert Keyring(inline=rotated).signing_key().key_id == fresh.key_id


def test_settings_choose_the_file(tmp_path: Path) -> None:
    chosen = tmp_path / "shared" / "keys.json"
    keyring = Keyring.from_settings(Settings(data_dir=tmp_path, signing_keys_file=chosen))
    keyring.signing_key()
    assert chosen.exists()
    assert not (tmp_path / "signing-keys.json").exists()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"keys": []}',
        '{"keys": [1]}',
        '{"keys": [{"privateKey": "AAAA", "createdAt": "2026-01-01T00:00:00+00:00"}]}',
    ],
)
def test_broken_keyrings_are_refused_with_a_reason(text: str) -> None:
    with pytest.raises(KeyringError):
        Keyring(inline=text)


def test_a_mislabelled_or_fully_retired_keyring_is_refused() -> None:
    document = json.loads(dump_keyring([new_key(_now())]))
    document["keys"][0]["keyId"] = "0" * 16
    with pytest.raises(KeyringError, match="does not match"):
        Keyring(inline=json.dumps(document))
    document = json.loads(dump_keyring([new_key(_now())]))
    document["keys"][0]["retiredAt"] = "2026-01-01T00:00:00+00:00"
    with pytest.raises(KeyringError, match="retired"):
        Keyring(inline=json.dumps(document))


def test_processes_creating_the_keyring_together_agree_on_one_key(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    code = (
        "import sys; from pathlib import Path; from marketplace.trust.keyring import Keyring; "
        "print(Keyring(path=Path(sys.argv[1])).signing_key().key_id)"
    )
    children = [
        subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE)
        for _ in range(4)
    ]
    ids = {child.communicate(timeout=60)[0].decode().strip() for child in children}
    assert len(ids) == 1
    assert [key.key_id for key in parse_keyring(path.read_text())] == list(ids)


def _now() -> datetime:
    return datetime.now(UTC)
