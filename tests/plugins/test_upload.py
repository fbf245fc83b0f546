"""Package uploads through the API: the pipeline, its refusals, the blob, concurrency."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import tarfile
import zlib
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from marketplace.config import Settings
from marketplace.models import AuditLog, PluginVersion
from marketplace.storage.base import blob_key
from tests.factories import Account, Factory
from tests.helpers import err, field_names, ok
from tests.packages.tarballs import (
    file,
    hardlink,
    manifest_file,
    package,
    special,
    symlink,
    tar_bytes,
    tar_gz,
)
from tests.plugins.helpers import publish, review_plugin

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82"
)


def tool_manifest(key: str, version: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": key,
        "version": version,
        "main": "index.js",
        "category": "utility",
        "type": "tool",
        **extra,
    }


def tool_package(key: str, version: str, **extra: Any) -> bytes:
    return package(tool_manifest(key, version, **extra), {"index.js": b"export default 1\n"})


async def upload(
    client: httpx.AsyncClient,
    account: Account,
    plugin: dict[str, Any],
    data: bytes | None,
    version: str | None = "1.0.0",
    *,
    admin: bool = False,
    extra: dict[str, str] | None = None,
) -> httpx.Response:
    path = (
        f"/api/v1/admin/plugins/{plugin['id']}/upload"
        if admin
        else f"/api/v1/developer/plugins/{plugin['id']}/upload-version"
    )
    fields = (
        {"changelog": "first"}
        | ({"version": version} if version is not None else {})
        | (extra or {})
    )
    files = {"file": ("plugin.tar.gz", data, "application/gzip")} if data is not None else None
    if files is None:
        # Still multipart, just without the file part.
        files = {"changelog": (None, "first")}
        fields.pop("changelog")
    return await client.post(path, data=fields, files=files, headers=account.headers)


async def tool_plugin(client: httpx.AsyncClient, dev: Account) -> dict[str, Any]:
    return await publish(client, dev, type="tool", category="utility")


async def test_developer_upload_creates_pending_version_with_sha256(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, sessionmaker
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    data = tool_package(plugin["pluginKey"], "1.0.0")
    version = ok(await upload(client, dev, plugin, data), 201)
    assert version["reviewStatus"] == "pending" and version["isLatest"] is False
    assert version["distribution"] == "tarball" and version["changelog"] == "first"
    assert version["sha256"] == hashlib.sha256(data).hexdigest() and version["size"] == len(data)
    assert version["manifest"]["id"] == plugin["pluginKey"]
    store = app.state.blob_store
    assert await store.exists(blob_key(version["sha256"]))
    async with sessionmaker() as session:
        row = await session.get(PluginVersion, version["id"])
        assert row is not None and row.blob_key == blob_key(version["sha256"])


async def test_upload_accepts_package_inside_one_top_level_folder(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    data = package(
        tool_manifest(plugin["pluginKey"], "1.0.0"),
        {"index.js": b"x"},
        prefix=f"{plugin['pluginKey']}/",
    )
    assert ok(await upload(client, dev, plugin, data), 201)["reviewStatus"] == "pending"


async def test_admin_upload_is_approved_and_current(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    admin = await factory.admin()
    plugin = ok(
        await client.post(
            "/api/v1/admin/plugins",
            json={
                "pluginKey": f"official-{hashlib.md5(str(id(client)).encode()).hexdigest()[:8]}",  # noqa: S324
                "name": "Official",
                "nameZh": "官方",
                "description": "d",
                "descriptionZh": "描述",
                "type": "tool",
            },
            headers=admin.headers,
        ),
        201,
    )
    version = ok(
        await upload(
            client, admin, plugin, tool_package(plugin["pluginKey"], "2.0.0"), "2.0.0", admin=True
        ),
        201,
    )
    assert (
        version["reviewStatus"] == "approved"
        and version["isLatest"] is True
        and version["reviewedBy"] == admin.id
    )
    detail = ok(await client.get(f"/api/v1/admin/plugins/{plugin['id']}", headers=admin.headers))
    assert detail["latestVersion"] == "2.0.0"
    async with sessionmaker() as session:
        audit = (
            await session.scalars(select(AuditLog).where(AuditLog.resource_id == version["id"]))
        ).one()
        assert (audit.action, audit.trigger, audit.actor_id) == (
            "REVIEW_APPROVE",
            "admin",
            admin.id,
        )


async def test_upload_then_plugin_approval_releases_it(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await tool_plugin(client, dev)
    ok(await upload(client, dev, plugin, tool_package(plugin["pluginKey"], "1.0.0")), 201)
    assert (
        ok(await review_plugin(client, admin, plugin["id"], approved=True))["latestVersion"]
        == "1.0.0"
    )


async def test_missing_file_is_package_required(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    error = err(await upload(client, dev, plugin, None), 400, "PLUGIN_PACKAGE_INVALID")
    assert error["message"] == "Plugin package file is required"


async def test_missing_version_field_is_named(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    error = err(
        await upload(client, dev, plugin, tool_package(plugin["pluginKey"], "1.0.0"), None),
        400,
        "VALIDATION_FAILED",
    )
    assert field_names(error) == {"version"}


async def test_unknown_form_field_is_named(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    response = await upload(
        client, dev, plugin, tool_package(plugin["pluginKey"], "1.0.0"), extra={"price": "5"}
    )
    err(response, 400, "VALIDATION_FAILED")
    assert "price" in response.text


async def test_non_multipart_body_is_refused(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    response = await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/upload-version",
        json={"version": "1.0.0"},
        headers=dev.headers,
    )
    err(response, 400, "VALIDATION_FAILED")


@pytest.mark.parametrize(
    ("manifest_change", "message"),
    [
        ({"id": "SOMEONE-ELSE"}, "manifest.id does not match plugin.pluginKey"),
        ({"version": "9.9.9"}, "manifest.version does not match requested version"),
    ],
)
async def test_upload_refuses_manifest_mismatch_with_seed_message(
    client: httpx.AsyncClient, factory: Factory, sessionmaker, manifest_change: dict, message: str
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    manifest = tool_manifest(plugin["pluginKey"], "1.0.0") | manifest_change
    error = err(
        await upload(client, dev, plugin, package(manifest, {"index.js": b"x"})),
        400,
        "PLUGIN_PACKAGE_INVALID",
    )
    assert error["message"] == message
    async with sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(PluginVersion)) == 0


async def test_upload_refuses_manifest_id_differing_only_in_case(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    manifest = tool_manifest(plugin["pluginKey"].upper(), "1.0.0")
    error = err(
        await upload(client, dev, plugin, package(manifest, {"index.js": b"x"})),
        400,
        "PLUGIN_PACKAGE_INVALID",
    )
    assert error["message"] == "manifest.id does not match plugin.pluginKey"


async def test_upload_refuses_invalid_category(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    data = package(tool_manifest(plugin["pluginKey"], "1.0.0", category="toys"), {"index.js": b"x"})
    assert (
        err(await upload(client, dev, plugin, data), 400, "PLUGIN_INVALID_CATEGORY")["message"]
        == 'Invalid category "toys"'
    )


async def test_upload_refuses_duplicate_version(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    ok(await upload(client, dev, plugin, tool_package(plugin["pluginKey"], "1.0.0")), 201)
    err(
        await upload(client, dev, plugin, tool_package(plugin["pluginKey"], "1.0.0")),
        409,
        "PLUGIN_VERSION_EXISTS",
    )


async def test_upload_with_empty_main_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    data = package(tool_manifest(plugin["pluginKey"], "1.0.0", main=""), {})
    err(await upload(client, dev, plugin, data), 400, "PLUGIN_PACKAGE_INVALID")


async def test_upload_with_findings_is_auto_rejected(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    manifest = tool_manifest(
        plugin["pluginKey"],
        "1.0.0",
        main="dist/missing.js",
        icon="icon/icon.png",
        contributes={"ui": {"entry": "ui.js"}},
        permissions=[],
    )
    version = ok(await upload(client, dev, plugin, package(manifest, {"index.js": b"x"})), 201)
    assert version["reviewStatus"] == "rejected" and version["reviewedBy"] == "system"
    for fragment in ("dist/missing.js", "ui.js", "ui.render", "icon/icon.png"):
        assert fragment in version["reviewNote"]
    async with sessionmaker() as session:
        audit = (
            await session.scalars(select(AuditLog).where(AuditLog.resource_id == version["id"]))
        ).one()
        assert (audit.trigger, audit.actor_id) == ("auto-validation", None)


HOSTILE: dict[str, Any] = {
    "path traversal": lambda m: tar_gz([manifest_file(m), file("../evil.js", b"x")]),
    "absolute path": lambda m: tar_gz([manifest_file(m), file("/etc/evil", b"x")]),
    "symlink out": lambda m: tar_gz([manifest_file(m), symlink("link", "../../etc/passwd")]),
    "hardlink out": lambda m: tar_gz([manifest_file(m), hardlink("link", "../outside")]),
    "char device": lambda m: tar_gz([manifest_file(m), special("dev", b"3")]),
    "fifo": lambda m: tar_gz([manifest_file(m), special("fifo", b"6")]),
    "no manifest": lambda m: tar_gz([file("index.js", b"x")]),
    "manifest not json": lambda m: tar_gz([manifest_file(b"{not json")]),
    "two manifests": lambda m: tar_gz([manifest_file(m), manifest_file(m, "./manifest.json")]),
    "manifest two folders down": lambda m: tar_gz([manifest_file(m, "a/b/manifest.json")]),
    "names differing in case": lambda m: tar_gz(
        [manifest_file(m), file("Index.js"), file("index.js")]
    ),
    "not gzip": lambda m: b"plain text, not a tarball",
    "truncated gzip": lambda m: tar_gz([manifest_file(m), file("index.js", b"x" * 5000)])[:-40],
    "gzip bomb": lambda m: _bomb(m),
}


def _bomb(manifest: dict[str, Any]) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [compressor.compress(tar_bytes([manifest_file(manifest)])[:-1024])]
    header = tarfile.TarInfo("zeros.bin")
    header.size = 4 * 1024**3
    parts.append(compressor.compress(header.tobuf()))
    chunk = b"\0" * (1024 * 1024)
    for _ in range(200):
        parts.append(compressor.compress(chunk))
    parts.append(compressor.flush())
    return b"".join(parts)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_hostile_archive_is_refused_and_creates_nothing(
    client: httpx.AsyncClient,
    factory: Factory,
    app: FastAPI,
    sessionmaker,
    settings: Settings,
    kind: str,
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    data = HOSTILE[kind](tool_manifest(plugin["pluginKey"], "1.0.0"))
    err(await upload(client, dev, plugin, data), 400, "PLUGIN_PACKAGE_INVALID")
    async with sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(PluginVersion)) == 0
    assert [k async for k in app.state.blob_store.iter_keys()] == []
    assert list((settings.data_dir / "uploads").iterdir()) == []


async def test_declared_oversize_body_is_413_before_reading(
    settings: Settings, factory: Factory, client: httpx.AsyncClient, app: FastAPI
) -> None:
    app.state.settings = settings.model_copy(update={"plugin_package_max_mb": 1})
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    chunks_sent = 0

    async def body() -> Any:
        nonlocal chunks_sent
        for _ in range(3):
            chunks_sent += 1
            yield b"x" * (1024 * 1024)

    response = await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/upload-version",
        content=body(),
        headers={
            **dev.headers,
            "content-type": "multipart/form-data; boundary=xyz",
            "content-length": str(3 * 1024 * 1024),
        },
    )
    error = err(response, 413, "PLUGIN_PACKAGE_TOO_LARGE")
    assert error["details"] == {
        "limit": 1024 * 1024,
        "size": 3 * 1024 * 1024,
        "sizeMeasured": "content-length",
    }
    assert error["message"] == (
        "Plugin package is too large: 3145728 bytes (content-length), the limit is 1048576 bytes"
    )


async def test_streamed_body_past_limit_is_413(
    settings: Settings, factory: Factory, client: httpx.AsyncClient, app: FastAPI, sessionmaker
) -> None:
    app.state.settings = settings.model_copy(update={"plugin_package_max_mb": 1})
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    big = gzip.compress(b"\0" * 10, mtime=0) + bytes(range(256)) * 8192  # 2 MiB of file part
    boundary = "b0undary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="version"\r\n\r\n1.0.0\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.tar.gz"\r\n'
        "Content-Type: application/gzip\r\n\r\n"
    ).encode()

    async def body() -> Any:  # chunked: no Content-Length to refuse early
        yield head
        for i in range(0, len(big), 65536):
            yield big[i : i + 65536]
        yield f"\r\n--{boundary}--\r\n".encode()

    response = await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/upload-version",
        content=body(),
        headers={**dev.headers, "content-type": f"multipart/form-data; boundary={boundary}"},
    )
    error = err(response, 413, "PLUGIN_PACKAGE_TOO_LARGE")
    # Chunked: the file part was cut once past the limit; size is what had arrived of it.
    assert (error["details"]["limit"], error["details"]["sizeMeasured"]) == (
        1024 * 1024,
        "file-read-so-far",
    )
    assert 1024 * 1024 < error["details"]["size"] <= 1024 * 1024 + 65536
    async with sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(PluginVersion)) == 0


async def test_upload_by_another_developer_is_403_not_owned(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, other = await factory.developer(), await factory.developer()
    plugin = await tool_plugin(client, owner)
    data = tool_package(plugin["pluginKey"], "1.0.0")
    err(await upload(client, other, plugin, data), 403, "PLUGIN_NOT_OWNED")


async def test_upload_by_an_unverified_developer_is_403(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, unverified = await factory.developer(), await factory.developer(verified=False)
    plugin = await tool_plugin(client, owner)
    data = tool_package(plugin["pluginKey"], "1.0.0")
    err(await upload(client, unverified, plugin, data), 403, "DEVELOPER_NOT_VERIFIED")


async def test_upload_to_a_missing_plugin_is_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    data = tool_package("missing-plugin", "1.0.0")
    err(await upload(client, owner, {"id": "missing-plugin"}, data), 404, "PLUGIN_NOT_FOUND")


async def test_admin_upload_by_a_developer_is_403_forbidden(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    plugin = await tool_plugin(client, owner)
    data = tool_package(plugin["pluginKey"], "1.0.0")
    err(await upload(client, owner, plugin, data, admin=True), 403, "FORBIDDEN")


async def test_concurrent_uploads_of_one_version_give_one_201(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, sessionmaker
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    payloads = [
        package(tool_manifest(plugin["pluginKey"], "1.0.0"), {"index.js": f"v{i}".encode()})
        for i in range(5)
    ]
    responses = await asyncio.gather(*(upload(client, dev, plugin, p) for p in payloads))
    assert sorted(r.status_code for r in responses) == [201, 409, 409, 409, 409]
    winner = next(r.json()["data"] for r in responses if r.status_code == 201)
    async with sessionmaker() as session:
        rows = list(await session.scalars(select(PluginVersion)))
    assert [r.sha256 for r in rows] == [winner["sha256"]]
    # Losers' blobs were removed again; only the winner's bytes remain.
    assert [k async for k in app.state.blob_store.iter_keys()] == [blob_key(winner["sha256"])]


async def test_admin_download_serves_exact_bytes_of_pending_version(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await tool_plugin(client, dev)
    data = tool_package(plugin["pluginKey"], "1.0.0")
    version = ok(await upload(client, dev, plugin, data), 201)
    info = ok(
        await client.get(
            f"/api/v1/admin/plugins/versions/{version['id']}/download", headers=admin.headers
        )
    )
    assert (
        info["distribution"] == "tarball"
        and info["sha256"] == version["sha256"]
        and info["size"] == len(data)
    )
    blob = await client.get(info["url"].removeprefix("http://test"))
    assert blob.status_code == 200 and blob.content == data
    err(
        await client.get(
            f"/api/v1/admin/plugins/versions/{version['id']}/download", headers=dev.headers
        ),
        403,
        "FORBIDDEN",
    )


async def test_admin_delete_removes_versions_and_unreferenced_blob(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI, sessionmaker
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await tool_plugin(client, dev)
    version = ok(await upload(client, dev, plugin, tool_package(plugin["pluginKey"], "1.0.0")), 201)
    ok(await client.delete(f"/api/v1/admin/plugins/{plugin['id']}", headers=admin.headers))
    async with sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(PluginVersion)) == 0
    assert not await app.state.blob_store.exists(blob_key(version["sha256"]))
    err(
        await client.get(f"/api/v1/admin/plugins/{plugin['id']}", headers=admin.headers),
        404,
        "PLUGIN_NOT_FOUND",
    )


async def test_icon_upload_stores_data_url(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    response = await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/icon",
        files={"file": ("icon.svg", PNG, "image/svg+xml")},
        headers=dev.headers,
    )
    data = ok(response)
    assert data["icon"].startswith("data:image/png;base64,")
    detail = ok(await client.get(f"/api/v1/developer/plugins/{plugin['id']}", headers=dev.headers))
    assert detail["icon"] == data["icon"]


@pytest.mark.parametrize(
    "content",
    [
        b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>",
        b"<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'/>",
        b"GIF89a not allowed",
        b"plain text",
    ],
)
async def test_icon_upload_refuses_unsafe_or_unknown_content(
    client: httpx.AsyncClient, factory: Factory, content: bytes
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    response = await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/icon",
        files={"file": ("icon.png", content, "image/png")},
        headers=dev.headers,
    )
    err(response, 400, "PLUGIN_ICON_INVALID")
    assert (
        ok(await client.get(f"/api/v1/developer/plugins/{plugin['id']}", headers=dev.headers))[
            "icon"
        ]
        is None
    )


async def test_icon_over_256_kib_is_413(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    big = PNG + b"\0" * (256 * 1024)
    response = await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/icon",
        files={"file": ("icon.png", big, "image/png")},
        headers=dev.headers,
    )
    err(response, 413, "PLUGIN_ICON_TOO_LARGE")


async def test_icon_exactly_256_kib_passes(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    exact = PNG + b"\0" * (256 * 1024 - len(PNG))
    response = await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/icon",
        files={"file": ("icon.png", exact, "image/png")},
        headers=dev.headers,
    )
    assert ok(response)["icon"].startswith("data:image/png;base64,")


async def test_icon_upload_by_another_developer_is_403_not_owned(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, other = await factory.developer(), await factory.developer()
    plugin = await tool_plugin(client, owner)
    err(
        await client.post(
            f"/api/v1/developer/plugins/{plugin['id']}/icon",
            files={"file": ("i.png", PNG, "image/png")},
            headers=other.headers,
        ),
        403,
        "PLUGIN_NOT_OWNED",
    )


async def test_icon_upload_without_a_file_is_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    plugin = await tool_plugin(client, owner)
    err(
        await client.post(
            f"/api/v1/developer/plugins/{plugin['id']}/icon",
            files={"x": (None, "y")},
            headers=owner.headers,
        ),
        400,
        "VALIDATION_FAILED",
    )


async def test_admin_sets_the_icon_of_any_developers_plugin(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, admin = await factory.developer(), await factory.admin()
    plugin = await tool_plugin(client, owner)
    assert ok(
        await client.post(
            f"/api/v1/admin/plugins/{plugin['id']}/icon",
            files={"file": ("i.png", PNG, "image/png")},
            headers=admin.headers,
        )
    )["icon"]
