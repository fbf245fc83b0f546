"""`GET /api/v1/keys` lists every key, retired ones included (CONTRACT 11)."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from marketplace.trust.keyring import Keyring, rotate_file, verify
from marketplace_rules.canonical import b64decode


async def test_keys_are_public_and_list_the_signing_key(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    keyring: Keyring = app.state.keyring
    response = await client.get("/api/v1/keys")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "public, max-age=300"
    [item] = response.json()["data"]["items"]
    assert set(item) == {"keyId", "algorithm", "publicKey", "createdAt", "retiredAt"}
    assert item["keyId"] == keyring.signing_key().key_id
    assert item["algorithm"] == "ed25519"
    assert item["retiredAt"] is None
    signed = keyring.sign(b"record")
    assert verify(b64decode(item["publicKey"]), b"record", b64decode(signed.signature))


async def test_a_rotated_key_stays_listed_as_retired(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    keyring: Keyring = app.state.keyring
    old = keyring.signing_key()
    assert keyring.path is not None
    fresh, _ = rotate_file(keyring.path)
    items = (await client.get("/api/v1/keys")).json()["data"]["items"]
    by_id = {item["keyId"]: item for item in items}
    assert set(by_id) == {old.key_id, fresh.key_id}
    assert by_id[old.key_id]["retiredAt"] is not None
    assert by_id[fresh.key_id]["retiredAt"] is None


async def test_keys_refuse_writes_with_the_envelope(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/v1/keys", json={})
    assert response.status_code == 405
    assert response.json()["success"] is False
    assert "GET" in response.headers["allow"]
