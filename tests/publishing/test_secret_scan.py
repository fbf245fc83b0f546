"""Secret scanning of uploads (CONTRACT 11): a live publishing token in a package or an
inline manifest is revoked at once and the upload refused; other secrets (and tokens that
are not live) are error findings that reject the version. A secret is never shown."""

from __future__ import annotations

import json
from typing import Any

import httpx
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import AuditLog, PluginVersion, ScenarioVersion
from tests.accounts.tokens import expire, issue, listed
from tests.factories import Account, Factory
from tests.helpers import err, ok
from tests.packages.tarballs import file, manifest_file, package, tar_gz
from tests.plugins.helpers import config_manifest, publish
from tests.plugins.test_upload import tool_manifest, upload
from tests.scenarios import helpers as scenarios

LEAKED = "package contains a marketplace token; the token has been revoked"
AWS_KEY = "AKIAQ3ZLBN5TJ2HVX7PW"  # an access key id's shape (AWS's ...EXAMPLE is a sample)
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu5q7Rk2mZp9Lq7Rk2mZp9Lq7Rk2mZp9L\n"
    "-----END RSA PRIVATE KEY-----\n"
)


async def tool_plugin(client: httpx.AsyncClient, dev: Account) -> dict[str, Any]:
    return await publish(client, dev, type="tool", category="utility")


async def audit_text(sessions: async_sessionmaker[AsyncSession]) -> str:
    async with sessions() as session:
        rows = await session.scalars(select(AuditLog))
        return " ".join(f"{row.action} {row.note} {row.resource_id}" for row in rows)


async def version_count(sessions: async_sessionmaker[AsyncSession], plugin_id: str) -> int:
    async with sessions() as session:
        count = await session.scalar(
            select(func.count())
            .select_from(PluginVersion)
            .where(PluginVersion.plugin_id == plugin_id)
        )
        return int(count or 0)


async def assert_revoked_in_package(
    client: httpx.AsyncClient, pat_owner: Account, pat_id: str, pat_headers: dict[str, str]
) -> None:
    err(await client.get("/api/v1/developer/plugins", headers=pat_headers), 401, "UNAUTHORIZED")
    item = (await listed(client, pat_owner))[pat_id]
    assert item["revokedReason"] == "found in an uploaded package"
    assert item["revokedAt"] is not None


# ---------- a live publishing token ----------


async def test_package_with_a_live_token_is_refused_and_the_token_revoked(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    pat = await issue(client, dev, scopes=["publish"])
    # Deep in a file, past the first 64 KiB the other checks look at.
    script = b"// filler\n" * 20_000 + f'const TOKEN = "{pat.token}";\n'.encode()
    data = package(tool_manifest(plugin["pluginKey"], "1.0.0"), {"index.js": script})
    response = await upload(client, pat, plugin, data)  # type: ignore[arg-type]
    error = err(response, 400, "PLUGIN_PACKAGE_INVALID")
    assert error["message"] == LEAKED
    assert pat.token not in response.text
    await assert_revoked_in_package(client, dev, pat.id, pat.headers)
    assert await version_count(sessionmaker, plugin["id"]) == 0
    assert pat.token not in await audit_text(sessionmaker)


async def test_a_token_of_another_account_in_a_package_is_revoked_too(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, victim = await factory.developer(), await factory.developer()
    plugin = await tool_plugin(client, dev)
    stolen = await issue(client, victim, scopes=["read"])
    manifest = tool_manifest(plugin["pluginKey"], "1.0.0")
    data = package(manifest, {"index.js": b"x\n", "notes/.env": f"T={stolen.token}\n".encode()})
    err(await upload(client, dev, plugin, data), 400, "PLUGIN_PACKAGE_INVALID")
    await assert_revoked_in_package(client, victim, stolen.id, stolen.headers)


async def test_a_token_escaped_in_the_package_manifest_is_revoked(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    pat = await issue(client, dev)
    escaped = "".join(f"\\u{ord(c):04x}" for c in pat.token)
    manifest = json.dumps(tool_manifest(plugin["pluginKey"], "1.0.0", description="ESCAPED"))
    raw = manifest.replace("ESCAPED", escaped)
    data = tar_gz([manifest_file(raw.encode()), file("index.js", b"1\n")])
    error = err(await upload(client, dev, plugin, data), 400, "PLUGIN_PACKAGE_INVALID")
    assert error["message"] == LEAKED
    await assert_revoked_in_package(client, dev, pat.id, pat.headers)


async def test_inline_manifest_with_a_live_token_is_refused_and_the_revocation_kept(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    pat = await issue(client, dev, scopes=["publish"])
    manifest = config_manifest(
        plugin["pluginKey"], "1.0.0", mcp={"command": "npx", "args": ["x"], "env": {"T": pat.token}}
    )
    response = await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/create-version",
        json={"version": "1.0.0", "manifest": manifest},
        headers=pat.headers,
    )
    error = err(response, 400, "PLUGIN_PACKAGE_INVALID")
    assert error["message"] == LEAKED and pat.token not in response.text
    await assert_revoked_in_package(client, dev, pat.id, pat.headers)
    assert await version_count(sessionmaker, plugin["id"]) == 0


async def test_scenario_package_with_a_live_token_is_refused(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    dev = await factory.developer()
    scenario = await scenarios.publish(client, dev)
    pat = await issue(client, dev)
    data = tar_gz([file("scenario.yaml", f"token: {pat.token}\n".encode())])
    response = await scenarios.upload(client, dev, scenario["id"], data, "1.0.0")
    error = err(response, 400, "SCENARIO_VALIDATION_FAILED")
    assert error["message"] == LEAKED
    await assert_revoked_in_package(client, dev, pat.id, pat.headers)
    async with sessionmaker() as session:
        row = await session.scalar(
            select(ScenarioVersion).where(ScenarioVersion.scenario_id == scenario["id"])
        )
        assert row is not None and row.blob_key is None


async def test_scenario_metadata_with_a_live_token_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    pat = await issue(client, dev)
    body = scenarios.publish_body(description=f"use {pat.token} to deploy")
    response = await client.post(f"{scenarios.DEV}/publish", json=body, headers=dev.headers)
    error = err(response, 400, "SCENARIO_VALIDATION_FAILED")
    assert error["message"] == LEAKED
    await assert_revoked_in_package(client, dev, pat.id, pat.headers)
    err(
        await client.get(f"{scenarios.DEV}/{body['id']}", headers=dev.headers),
        404,
        "SCENARIO_NOT_FOUND",
    )


# ---------- other secrets, and tokens that are not live ----------


async def test_other_secrets_are_masked_error_findings_that_reject(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    files = {
        "index.js": f'const key = "{AWS_KEY}";\nconst gh = "{GITHUB_TOKEN}";\n'.encode(),
        "keys/id_rsa": PRIVATE_KEY.encode(),
        "logo.bin": b"\0binary " + AWS_KEY.encode(),  # binary: not read
    }
    data = package(tool_manifest(plugin["pluginKey"], "1.0.0"), files)
    response = await upload(client, dev, plugin, data)
    version = ok(response, 201)
    assert version["reviewStatus"] == "rejected"
    secrets = [f for f in version["findings"] if f["code"] == "secret-found"]
    assert {(f["path"], f["severity"]) for f in secrets} == {
        ("file:index.js", "error"),
        ("file:keys/id_rsa", "error"),
    }
    messages = " ".join(f["message"] for f in secrets)
    assert "AWS Access Key (AKIA…(20 chars)) on line 1" in messages
    assert "GitHub Token (ghp_…(40 chars)) on line 2" in messages
    assert "Private Key" in messages
    shown = response.text + await audit_text(sessionmaker)
    for secret in (AWS_KEY, GITHUB_TOKEN, "MIIEow"):
        assert secret not in shown
    assert "AKIA…(20 chars)" in version["reviewNote"]
    admin = await factory.admin()
    seen = await client.get(
        f"/api/v1/admin/plugins/versions/{version['id']}", headers=admin.headers
    )
    assert AWS_KEY not in ok(seen) and AWS_KEY not in seen.text


async def test_secret_in_an_inline_manifest_is_a_finding_at_its_path(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    env = {"AWS_ACCESS_KEY_ID": AWS_KEY}
    manifest = config_manifest(plugin["pluginKey"], "1.0.0", mcp={"command": "npx", "env": env})
    response = await client.post(
        f"/api/v1/developer/plugins/{plugin['id']}/create-version",
        json={"version": "1.0.0", "manifest": manifest},
        headers=dev.headers,
    )
    version = ok(response, 201)
    assert version["reviewStatus"] == "rejected"
    found = [f for f in version["findings"] if f["code"] == "secret-found"]
    assert [f["path"] for f in found] == ["mcp.env.AWS_ACCESS_KEY_ID"]
    # The stored manifest is the developer's own document; the finding and note are masked.
    assert AWS_KEY not in found[0]["message"] and AWS_KEY not in version["reviewNote"]


async def test_a_token_that_is_not_live_is_an_error_finding(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    dead = await issue(client, dev)
    await expire(sessionmaker, dead.id)
    unknown = "mkt_pat_" + "Z" * 43
    script = f"a = '{dead.token}'\nb = '{unknown}'\n".encode()
    data = package(tool_manifest(plugin["pluginKey"], "1.0.0"), {"index.js": script})
    response = await upload(client, dev, plugin, data)
    version = ok(response, 201)
    assert version["reviewStatus"] == "rejected"
    tokens = [f for f in version["findings"] if f["code"] == "marketplace-token"]
    assert [(f["path"], f["severity"]) for f in tokens] == [("file:index.js", "error")] * 2
    assert dead.token not in response.text and unknown not in response.text
    # Expired, not revoked: nothing was revoked by the upload.
    assert (await listed(client, dev))[dead.id]["revokedAt"] is None


async def test_ordinary_hashes_are_not_secrets(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    lock = "\n".join(
        f'"pkg{i}": "sha512-{"ab12" * 20}", "integrity": "{"0f" * 32}"' for i in range(50)
    )
    data = package(
        tool_manifest(plugin["pluginKey"], "1.0.0"),
        {"index.js": b"1\n", "package-lock.json": lock.encode()},
    )
    version = ok(await upload(client, dev, plugin, data), 201)
    assert version["reviewStatus"] == "pending"
    assert [f for f in version["findings"] if f["severity"] == "error"] == []
