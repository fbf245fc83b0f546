"""`marketplace install` refuses what the service did not sign (CONTRACT 11, issue 11).

Each refusal: exit code 3, one line `error: CODE: ...; nothing was installed`, the code in
`--json`, and nothing left behind: no plugin folder, no registry, no report, no temp files.
"""

from __future__ import annotations

import base64
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import Result

from marketplace_client.trust import KeyPins, verify_signed_record

from .fake_api import FakeApi
from .helpers import BACKEND, Invoke, base_manifest, stdout_json
from .signing import KEYS, FakeSigner, manifest_digest, release_fields
from .test_install import BLOB_PATH, BLOB_URL, DOWNLOAD, REPORT, package

TRUST_EXIT = 3


@pytest.fixture(autouse=True)
def own_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp folder of this test's own, to show the download scratch is removed."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def signer() -> FakeSigner:
    return FakeSigner()


def tarball_info(
    content: bytes, release: dict[str, Any] | None, **overrides: Any
) -> dict[str, Any]:
    info: dict[str, Any] = {
        "distribution": "tarball",
        "url": BLOB_URL,
        "sha256": hashlib.sha256(content).hexdigest(),
        "size": len(content),
        "expiresAt": "2026-11-22T08:15:00Z",
        "release": release,
    }
    info.update(overrides)
    return info


def tarball_release(content: bytes, **overrides: Any) -> dict[str, Any]:
    fields = release_fields(
        version="1.0.0",
        distribution="tarball",
        sha256=hashlib.sha256(content).hexdigest(),
        size=len(content),
    )
    fields.update(overrides)
    return fields


def serve(
    fake: FakeApi,
    signer: FakeSigner,
    info: dict[str, Any],
    blob: bytes | None = None,
    keys: dict[str, Any] | None = None,
) -> None:
    fake.ok("GET", KEYS, keys if keys is not None else signer.listing())
    signer.serve_log(fake)
    fake.ok("GET", DOWNLOAD, info)
    if blob is not None:
        fake.on("GET", BLOB_PATH, httpx.Response(200, content=blob))
    fake.ok("POST", REPORT, {"pluginId": "p-1", "version": "1.0.0"}, status=201)


def install(invoke: Invoke, root: Path, *extra: str) -> Result:
    return invoke(["install", "demo-plugin", "--dir", str(root), *extra])


def assert_refused(
    result: Result, fake: FakeApi, root: Path, temp: Path, code: str, message: str
) -> None:
    assert result.exit_code == TRUST_EXIT, result.output
    assert result.stderr == f"error: {code}: {message}; nothing was installed\n"
    assert not root.exists() or list(root.iterdir()) == []
    assert ("POST", REPORT) not in fake.calls()
    assert list(temp.iterdir()) == []


def tamper_payload(record: dict[str, Any], **changes: Any) -> dict[str, Any]:
    fields = json.loads(base64.b64decode(record["payload"]))
    fields.update(changes)
    payload = json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()
    return {**record, "payload": base64.b64encode(payload).decode()}


CONTENT = package()


def test_a_signed_tarball_installs_and_its_key_is_pinned(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, isolated_env: Path
) -> None:
    serve(fake, signer, tarball_info(CONTENT, signer.release(tarball_release(CONTENT))), CONTENT)
    result = install(invoke, tmp_path / "plugins")
    assert result.exit_code == 0, result.output
    pins = json.loads((isolated_env / "trusted-keys.json").read_text())
    assert set(pins["backends"][BACKEND]) == {signer.key_id(signer.keys[0])}


def test_a_tampered_payload_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, own_temp: Path
) -> None:
    record = tamper_payload(
        signer.release(tarball_release(CONTENT)), approvedAt="2030-01-01T00:00:00Z"
    )
    serve(fake, signer, tarball_info(CONTENT, record), CONTENT)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    key_id = signer.key_id(signer.keys[0])
    message = f"the signature of demo-plugin latest does not verify with key {key_id}"
    assert_refused(result, fake, root, own_temp, "SIGNATURE_INVALID", message)
    assert ("GET", BLOB_PATH) not in fake.calls()


def test_a_tampered_signature_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, own_temp: Path
) -> None:
    record = signer.release(tarball_release(CONTENT))
    raw = bytearray(base64.b64decode(record["signature"]))
    raw[0] ^= 1
    record["signature"] = base64.b64encode(bytes(raw)).decode()
    serve(fake, signer, tarball_info(CONTENT, record), CONTENT)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    key_id = signer.key_id(signer.keys[0])
    message = f"the signature of demo-plugin latest does not verify with key {key_id}"
    assert_refused(result, fake, root, own_temp, "SIGNATURE_INVALID", message)


def test_a_key_the_service_does_not_list_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, own_temp: Path
) -> None:
    stranger = FakeSigner()
    record = stranger.sign(tarball_release(CONTENT))
    serve(fake, signer, tarball_info(CONTENT, record), CONTENT)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = (
        f"demo-plugin latest is signed by key {stranger.key_id(stranger.keys[0])}, "
        f"which {BACKEND} does not list"
    )
    assert_refused(result, fake, root, own_temp, "KEY_UNKNOWN", message)


def test_a_missing_release_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, own_temp: Path
) -> None:
    serve(fake, signer, tarball_info(CONTENT, None), CONTENT)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = "the service sent no signed record for demo-plugin latest"
    assert_refused(result, fake, root, own_temp, "RELEASE_MISSING", message)


def test_release_of_an_old_key_still_installs_after_a_rotation_and_both_are_pinned(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, isolated_env: Path
) -> None:
    old_record = signer.release(tarball_release(CONTENT))
    signer.rotate()
    serve(fake, signer, tarball_info(CONTENT, old_record), CONTENT)
    assert install(invoke, tmp_path / "a").exit_code == 0
    new_record = signer.release(tarball_release(CONTENT))
    serve(fake, signer, tarball_info(CONTENT, new_record), CONTENT)
    result = install(invoke, tmp_path / "b")
    assert result.exit_code == 0, result.output
    pins = json.loads((isolated_env / "trusted-keys.json").read_text())
    assert set(pins["backends"][BACKEND]) == {signer.key_id(key) for key in signer.keys}


def test_a_pinned_key_the_service_stops_listing_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, own_temp: Path
) -> None:
    serve(fake, signer, tarball_info(CONTENT, signer.release(tarball_release(CONTENT))), CONTENT)
    assert install(invoke, tmp_path / "first").exit_code == 0
    fake.requests.clear()
    pinned = signer.key_id(signer.keys[0])
    signer.rotate()
    record = signer.release(tarball_release(CONTENT))
    serve(
        fake, signer, tarball_info(CONTENT, record), CONTENT, keys=signer.listing([signer.keys[1]])
    )
    root = tmp_path / "plugins"
    result = install(invoke, root)
    pins = Path(KeyPins().path)
    message = (
        f"key {pinned}, trusted earlier for {BACKEND}, is no longer listed by the service; "
        f"refusing (remove it from {pins} only if you know why)"
    )
    assert_refused(result, fake, root, own_temp, "KEY_WITHDRAWN", message)


def test_a_listed_key_whose_public_key_changed_is_refused(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, own_temp: Path
) -> None:
    serve(fake, signer, tarball_info(CONTENT, signer.release(tarball_release(CONTENT))), CONTENT)
    assert install(invoke, tmp_path / "first").exit_code == 0
    fake.requests.clear()
    key_id = signer.key_id(signer.keys[0])
    impostor = FakeSigner()
    listing = impostor.listing()
    listing["items"][0]["keyId"] = key_id  # same name, another key
    record = {**impostor.sign(tarball_release(CONTENT)), "keyId": key_id}
    serve(fake, signer, tarball_info(CONTENT, record), CONTENT, keys=listing)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = (
        f"key {key_id} listed by {BACKEND} is not the public key trusted earlier; "
        f"refusing (remove it from {KeyPins().path} only if you know why)"
    )
    assert_refused(result, fake, root, own_temp, "KEY_CHANGED", message)


def test_bytes_changed_after_signing_are_refused_by_checksum(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, own_temp: Path
) -> None:
    swapped = bytearray(CONTENT)
    swapped[-1] ^= 0xFF  # same size, other bytes
    serve(
        fake,
        signer,
        tarball_info(CONTENT, signer.release(tarball_release(CONTENT))),
        bytes(swapped),
    )
    root = tmp_path / "plugins"
    result = install(invoke, root)
    actual = hashlib.sha256(bytes(swapped)).hexdigest()
    message = (
        f"SHA256 of the download of demo-plugin latest is {actual}, its signed release says "
        f"{hashlib.sha256(CONTENT).hexdigest()}"
    )
    assert_refused(result, fake, root, own_temp, "CHECKSUM_MISMATCH", message)


def test_a_shorter_download_is_refused_by_size(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, own_temp: Path
) -> None:
    serve(
        fake, signer, tarball_info(CONTENT, signer.release(tarball_release(CONTENT))), CONTENT[:-10]
    )
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = (
        f"the download of demo-plugin latest is {len(CONTENT) - 10} bytes, its signed release "
        f"says {len(CONTENT)}"
    )
    assert_refused(result, fake, root, own_temp, "SIZE_MISMATCH", message)


def test_a_longer_download_is_refused_by_size(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, own_temp: Path
) -> None:
    serve(
        fake,
        signer,
        tarball_info(CONTENT, signer.release(tarball_release(CONTENT))),
        CONTENT + b"x" * 100,
    )
    root = tmp_path / "plugins"
    result = install(invoke, root)
    message = (
        f"the download of demo-plugin latest is larger than the {len(CONTENT)} bytes its "
        "signed release says"
    )
    assert_refused(result, fake, root, own_temp, "SIZE_MISMATCH", message)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("kind", "scenario"),
        ("key", "other-plugin"),
        ("distribution", "inline"),
        ("sha256", "0" * 64),
        ("size", 1),
    ],
)
def test_a_signed_field_differing_from_the_download_info_is_refused(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    own_temp: Path,
    field: str,
    value: Any,
) -> None:
    record = signer.release(tarball_release(CONTENT, **{field: value}))
    serve(fake, signer, tarball_info(CONTENT, record), CONTENT)
    root = tmp_path / "plugins"
    result = install(invoke, root, "--json")
    assert result.exit_code == TRUST_EXIT
    assert stdout_json(result)["error"]["code"] == "RELEASE_MISMATCH"
    assert f"the signed release of demo-plugin latest says {field} {value!r}" in result.stderr
    assert not root.exists()
    assert ("GET", BLOB_PATH) not in fake.calls()
    assert list(own_temp.iterdir()) == []


def test_a_requested_version_must_be_the_signed_one(
    tmp_path: Path, fake: FakeApi, invoke: Invoke, signer: FakeSigner, own_temp: Path
) -> None:
    record = signer.release(tarball_release(CONTENT))  # 1.0.0
    fake.ok("GET", KEYS, signer.listing())
    fake.ok("GET", "/api/v1/plugins/download/demo-plugin/2.0.0", tarball_info(CONTENT, record))
    root = tmp_path / "plugins"
    result = install(invoke, root, "--version", "2.0.0")
    assert result.exit_code == TRUST_EXIT
    assert result.stderr == (
        "error: RELEASE_MISMATCH: the signed release of demo-plugin 2.0.0 says version "
        "'1.0.0', the download information says '2.0.0'; nothing was installed\n"
    )
    assert not root.exists()


@pytest.mark.parametrize("distribution", ["config_only", "inline"])
def test_a_manifest_changed_after_signing_is_refused(
    tmp_path: Path,
    fake: FakeApi,
    invoke: Invoke,
    signer: FakeSigner,
    own_temp: Path,
    distribution: str,
) -> None:
    extra = {"mcp": {"command": "npx"}} if distribution == "config_only" else {"inlineCode": "ok()"}
    manifest = base_manifest(main="", **extra)
    sha256, size = manifest_digest(manifest)
    fields = release_fields(version="1.0.0", distribution=distribution, sha256=sha256, size=size)
    served = {**manifest, "main": "x.js"}  # same length, other bytes
    served_sha, _ = manifest_digest(served)
    info: dict[str, Any] = {
        "distribution": distribution,
        "manifest": served,
        "release": signer.release(fields),
    }
    serve(fake, signer, info)
    root = tmp_path / "plugins"
    result = install(invoke, root)
    assert result.exit_code == TRUST_EXIT
    assert result.stderr.startswith("error: SIZE_MISMATCH: the manifest of demo-plugin latest")
    served_same_size = {**manifest, "id": "demo-plugiN"}
    assert manifest_digest(served_same_size)[1] == size
    info["manifest"] = served_same_size
    fake.ok("GET", DOWNLOAD, info)
    result = install(invoke, root)
    digest = manifest_digest(served_same_size)[0]
    assert result.stderr == (
        f"error: CHECKSUM_MISMATCH: SHA256 of the manifest of demo-plugin latest is {digest}, "
        f"its signed release says {sha256}; nothing was installed\n"
    )
    assert not root.exists()
    assert served_sha != sha256


def test_verify_signed_record_returns_the_payload_bytes(
    fake: FakeApi, signer: FakeSigner, tmp_path: Path
) -> None:
    """The API `marketplace audit` reuses for the revocation list."""
    from marketplace_client.api import ApiClient

    fake.ok("GET", KEYS, signer.listing())
    record = signer.sign({"issuedAt": "2026-11-24T00:00:00Z", "items": []})
    pins = KeyPins(tmp_path / "pins.json")
    with ApiClient(BACKEND, transport=fake.transport) as api:
        payload = verify_signed_record(api, record, what="the revocation list", pins=pins)
    assert json.loads(payload) == {"issuedAt": "2026-11-24T00:00:00Z", "items": []}
    assert set(pins.pinned(BACKEND)) == {record["keyId"]}
