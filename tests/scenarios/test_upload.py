"""Scenario package uploads: streamed, size-limited, archive-checked, blob before row."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from marketplace.config import Settings
from marketplace.models import Scenario, ScenarioVersion
from marketplace.storage.base import blob_key
from tests.factories import Factory
from tests.helpers import err, field_names, ok
from tests.packages.tarballs import (
    file,
    hardlink,
    header_block,
    manifest_file,
    package,
    special,
    symlink,
    tar_gz,
)
from tests.plugins.test_upload import HOSTILE as PLUGIN_HOSTILE
from tests.scenarios.helpers import (
    ADMIN,
    DEV,
    approve,
    publish,
    scenario_package,
    upload,
)

MIB = 1024 * 1024


async def _versions(sessionmaker, scenario_id: str) -> dict[str, ScenarioVersion]:
    async with sessionmaker() as session:
        rows = await session.scalars(
            select(ScenarioVersion).where(ScenarioVersion.scenario_id == scenario_id)
        )
        return {v.version: v for v in rows}


async def _scenario(sessionmaker, scenario_id: str) -> Scenario:
    async with sessionmaker() as session:
        row = await session.get(Scenario, scenario_id)
        assert row is not None
        return row


async def _assert_nothing_stored(
    app: FastAPI, settings: Settings, sessionmaker, scenario_id: str
) -> None:
    versions = await _versions(sessionmaker, scenario_id)
    assert all(v.blob_key is None and v.sha256 is None for v in versions.values())
    row = await _scenario(sessionmaker, scenario_id)
    assert (row.sha256, row.size) == (None, None)
    assert [k async for k in app.state.blob_store.iter_keys()] == []
    uploads = settings.data_dir / "uploads"
    assert not uploads.exists() or list(uploads.iterdir()) == []


async def test_upload_attaches_package_to_newest_pending_version(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, sessionmaker
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    data = scenario_package(scenario["id"], "1.0.0")
    version = ok(await upload(client, dev, scenario["id"], data))
    digest = hashlib.sha256(data).hexdigest()
    assert (version["version"], version["reviewStatus"], version["isLatest"]) == (
        "1.0.0",
        "pending",
        False,
    )
    assert (version["sha256"], version["size"]) == (digest, len(data))
    assert await app.state.blob_store.exists(blob_key(digest))
    row = (await _versions(sessionmaker, scenario["id"]))["1.0.0"]
    assert (row.blob_key, row.sha256, row.size) == (blob_key(digest), digest, len(data))
    mine = ok(await client.get(f"{DEV}/{scenario['id']}", headers=dev.headers))
    assert (mine["sha256"], mine["size"]) == (digest, len(data))


async def test_upload_to_a_named_older_version(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    await publish(client, dev, id=scenario["id"], version="1.1.0")
    data = scenario_package(scenario["id"], "1.0.0")
    assert ok(await upload(client, dev, scenario["id"], data, "1.0.0"))["version"] == "1.0.0"
    versions = await _versions(sessionmaker, scenario["id"])
    assert versions["1.0.0"].sha256 == hashlib.sha256(data).hexdigest()
    assert versions["1.1.0"].sha256 is None
    # The scenario describes its newest version, which still has no package.
    assert (await _scenario(sessionmaker, scenario["id"])).sha256 is None


async def test_package_without_manifest_is_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    data = scenario_package(scenario["id"], "1.0.0", with_manifest=False)
    assert ok(await upload(client, dev, scenario["id"], data))["size"] == len(data)


async def test_package_inside_one_top_level_folder_is_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    data = package(
        {"id": scenario["id"], "version": "1.0.0"},
        {"scenario.yaml": b"steps: []\n"},
        prefix=f"{scenario['id']}/",
    )
    assert ok(await upload(client, dev, scenario["id"], data))["sha256"]


@pytest.mark.parametrize(
    ("manifest_change", "field"),
    [
        ({"id": "someone-else"}, "manifest.id"),
        ({"id": None}, "manifest.id"),
        ({"version": "9.9.9"}, "manifest.version"),
        ({"version": None}, "manifest.version"),
    ],
)
async def test_manifest_must_agree_with_id_and_version(
    client: httpx.AsyncClient,
    factory: Factory,
    app: FastAPI,
    settings: Settings,
    sessionmaker,
    manifest_change: dict[str, Any],
    field: str,
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    manifest = {"id": scenario["id"], "version": "1.0.0"} | manifest_change
    manifest = {k: v for k, v in manifest.items() if v is not None}
    error = err(
        await upload(client, dev, scenario["id"], package(manifest, {"a.txt": b"x"})),
        400,
        "SCENARIO_VALIDATION_FAILED",
    )
    assert field_names(error) == {field}
    await _assert_nothing_stored(app, settings, sessionmaker, scenario["id"])


async def test_manifest_id_differing_only_in_case_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    data = package({"id": scenario["id"].upper(), "version": "1.0.0"})
    err(await upload(client, dev, scenario["id"], data), 400, "SCENARIO_VALIDATION_FAILED")


# The plugin corpus minus what a scenario package may lack (a manifest at the root),
# plus a few more members that try to leave the package.
HOSTILE: dict[str, Any] = {
    **{
        kind: build
        for kind, build in PLUGIN_HOSTILE.items()
        if kind not in ("no manifest", "manifest two folders down")
    },
    "symlink absolute": lambda m: tar_gz([manifest_file(m), symlink("link", "/etc/passwd")]),
    "hardlink absolute": lambda m: tar_gz([manifest_file(m), hardlink("link", "/etc/passwd")]),
    "block device": lambda m: tar_gz([manifest_file(m), special("disk", b"4")]),
    "traversal without manifest": lambda m: tar_gz([file("a/../../evil", b"x")]),
    "symlink out without manifest": lambda m: tar_gz([symlink("up", "..")]),
    "manifest not an object": lambda m: tar_gz([manifest_file(b"[1, 2]")]),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_hostile_archive_is_refused_and_stores_nothing(
    client: httpx.AsyncClient,
    factory: Factory,
    app: FastAPI,
    sessionmaker,
    settings: Settings,
    kind: str,
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    data = HOSTILE[kind]({"id": scenario["id"], "version": "1.0.0"})
    err(await upload(client, dev, scenario["id"], data), 400, "SCENARIO_VALIDATION_FAILED")
    await _assert_nothing_stored(app, settings, sessionmaker, scenario["id"])


async def test_missing_file_is_named(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    error = err(
        await upload(client, dev, scenario["id"], None, "1.0.0"), 400, "SCENARIO_VALIDATION_FAILED"
    )
    assert error["message"] == "Scenario package file is required"
    assert field_names(error) == {"file"}


async def test_unknown_form_field_is_scenario_validation_failed(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, settings: Settings, sessionmaker
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    data = scenario_package(scenario["id"], "1.0.0")
    error = err(
        await upload(client, dev, scenario["id"], data, extra={"changelog": "x"}),
        400,
        "SCENARIO_VALIDATION_FAILED",
    )
    assert field_names(error) == {"changelog"}
    await _assert_nothing_stored(app, settings, sessionmaker, scenario["id"])


async def test_non_multipart_body_is_scenario_validation_failed(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    response = await client.post(
        f"{DEV}/{scenario['id']}/upload-package", json={"version": "1.0.0"}, headers=dev.headers
    )
    err(response, 400, "SCENARIO_VALIDATION_FAILED")


@pytest.mark.parametrize("version", ["2.0.0", "not-semver"])
async def test_version_field_must_name_a_version_of_the_scenario(
    client: httpx.AsyncClient, factory: Factory, version: str
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    data = scenario_package(scenario["id"], version)
    error = err(
        await upload(client, dev, scenario["id"], data, version), 400, "SCENARIO_VALIDATION_FAILED"
    )
    assert field_names(error) == {"version"}


async def test_a_version_takes_one_package_while_pending(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    first = scenario_package(scenario["id"], "1.0.0")
    ok(await upload(client, dev, scenario["id"], first))
    second = package({"id": scenario["id"], "version": "1.0.0"}, {"other.txt": b"y"})
    err(await upload(client, dev, scenario["id"], second), 409, "INVALID_STATE")
    # The refused bytes were stored first and removed again; the first package stays.
    keys = [k async for k in app.state.blob_store.iter_keys()]
    assert keys == [blob_key(hashlib.sha256(first).hexdigest())]
    await publish(client, dev, id=scenario["id"], version="1.1.0")
    await approve(client, admin, scenario["id"], "1.1.0")
    err(
        await upload(client, dev, scenario["id"], scenario_package(scenario["id"], "1.1.0")),
        409,
        "INVALID_STATE",
    )
    assert (await _versions(sessionmaker, scenario["id"]))["1.1.0"].blob_key is None


async def test_rejected_version_takes_no_package(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    versions = ok(await client.get(f"{ADMIN}/{scenario['id']}/versions", headers=admin.headers))
    ok(
        await client.post(
            f"{ADMIN}/versions/{versions['items'][0]['id']}/review",
            json={"approved": False, "reviewNote": "no"},
            headers=admin.headers,
        )
    )
    err(
        await upload(client, dev, scenario["id"], scenario_package(scenario["id"], "1.0.0")),
        409,
        "INVALID_STATE",
    )


async def test_taken_down_scenario_takes_no_package(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, settings: Settings, sessionmaker
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    ok(await client.delete(f"{DEV}/{scenario['id']}", headers=dev.headers))
    err(
        await upload(client, dev, scenario["id"], scenario_package(scenario["id"], "1.0.0")),
        409,
        "INVALID_STATE",
    )
    await _assert_nothing_stored(app, settings, sessionmaker, scenario["id"])


async def test_same_bytes_as_a_plugin_version_share_one_blob(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    data = scenario_package(scenario["id"], "1.0.0", with_manifest=False)
    other = await publish(client, dev)
    ok(await upload(client, dev, scenario["id"], data))
    ok(await upload(client, dev, other["id"], data))
    assert [k async for k in app.state.blob_store.iter_keys()] == [
        blob_key(hashlib.sha256(data).hexdigest())
    ]


# ---------- size limit ----------


async def test_declared_oversize_body_is_413_before_reading(
    settings: Settings, factory: Factory, client: httpx.AsyncClient, app: FastAPI, sessionmaker
) -> None:
    app.state.settings = settings.model_copy(update={"scenario_package_max_mb": 1})
    dev = await factory.developer()
    scenario = await publish(client, dev)
    pulled = 0

    async def body() -> Any:
        nonlocal pulled
        for _ in range(3):
            pulled += 1
            yield b"x" * MIB

    response = await client.post(
        f"{DEV}/{scenario['id']}/upload-package",
        content=body(),
        headers={
            **dev.headers,
            "content-type": "multipart/form-data; boundary=xyz",
            "content-length": str(3 * MIB),
        },
    )
    err(response, 413, "SCENARIO_PACKAGE_TOO_LARGE")
    assert pulled <= 1  # refused on the header; at most the transport's first chunk was read
    await _assert_nothing_stored(app, settings, sessionmaker, scenario["id"])


async def test_streamed_body_past_limit_is_413_without_reading_the_rest(
    settings: Settings, factory: Factory, client: httpx.AsyncClient, app: FastAPI, sessionmaker
) -> None:
    app.state.settings = settings.model_copy(update={"scenario_package_max_mb": 1})
    dev = await factory.developer()
    scenario = await publish(client, dev)
    # A valid tar stream (one 4 MiB member, stored uncompressed) that the inspector reads
    # without complaint, so the only thing wrong with it is its size.
    big = gzip.compress(header_block("big.bin", 4 * MIB) + b"\1" * (4 * MIB), 0, mtime=0)
    boundary = "b0undary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="s.tar.gz"\r\n'
        "Content-Type: application/gzip\r\n\r\n"
    ).encode()
    sent = 0

    async def body() -> Any:  # chunked: no Content-Length to refuse early
        nonlocal sent
        yield head
        for i in range(0, len(big), 64 * 1024):
            sent += 64 * 1024
            yield big[i : i + 64 * 1024]
        yield f"\r\n--{boundary}--\r\n".encode()

    response = await client.post(
        f"{DEV}/{scenario['id']}/upload-package",
        content=body(),
        headers={**dev.headers, "content-type": f"multipart/form-data; boundary={boundary}"},
    )
    err(response, 413, "SCENARIO_PACKAGE_TOO_LARGE")
    assert sent < 2 * MIB  # stopped near the limit, not at the end of the 4 MiB body
    await _assert_nothing_stored(app, settings, sessionmaker, scenario["id"])


async def test_package_of_exactly_the_limit_passes(
    settings: Settings, factory: Factory, client: httpx.AsyncClient, app: FastAPI
) -> None:
    app.state.settings = settings.model_copy(update={"scenario_package_max_mb": 1})
    dev = await factory.developer()
    scenario = await publish(client, dev)
    data = scenario_package(scenario["id"], "1.0.0")
    exact = data + b"\0" * (MIB - len(data))  # gzip allows zero padding after the member
    assert len(exact) == MIB
    assert ok(await upload(client, dev, scenario["id"], exact))["size"] == MIB
    over = exact + b"\0"
    other = await publish(client, dev)
    err(await upload(client, dev, other["id"], over), 413, "SCENARIO_PACKAGE_TOO_LARGE")


async def test_413_comes_after_ownership(
    settings: Settings, factory: Factory, client: httpx.AsyncClient, app: FastAPI
) -> None:
    app.state.settings = settings.model_copy(update={"scenario_package_max_mb": 1})
    owner, other = await factory.developer(), await factory.developer()
    scenario = await publish(client, owner)
    headers = {"content-type": "multipart/form-data; boundary=xyz", "content-length": str(3 * MIB)}
    err(
        await client.post(
            f"{DEV}/{scenario['id']}/upload-package",
            content=b"",
            headers={**other.headers, **headers},
        ),
        403,
        "SCENARIO_NOT_OWNED",
    )


async def test_concurrent_uploads_to_one_version_store_one_package(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, sessionmaker
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev)
    payloads = [
        package({"id": scenario["id"], "version": "1.0.0"}, {"a.txt": f"v{i}".encode()})
        for i in range(4)
    ]
    responses = await asyncio.gather(*(upload(client, dev, scenario["id"], p) for p in payloads))
    assert sorted(r.status_code for r in responses) == [200, 409, 409, 409]
    winner = next(r.json()["data"] for r in responses if r.status_code == 200)
    row = (await _versions(sessionmaker, scenario["id"]))["1.0.0"]
    assert row.sha256 == winner["sha256"]
    # The losers' blobs were removed again; only the winner's bytes remain.
    assert [k async for k in app.state.blob_store.iter_keys()] == [blob_key(winner["sha256"])]
