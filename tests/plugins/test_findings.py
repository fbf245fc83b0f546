"""Findings on plugin versions (CONTRACT 12): computed on upload and create-version,
stored on the version, shown to the developer and the administrators; an error rejects,
warnings and infos wait for the reviewer."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import select

from marketplace.models import AuditLog, PluginVersion
from marketplace_rules.limits import FINDINGS_MAX
from tests.factories import Account, Factory
from tests.helpers import ok
from tests.packages.tarballs import Member, file, manifest_file, tar_gz
from tests.plugins.helpers import (
    admin_versions,
    create_version,
    publish,
    publish_body,
    review_version,
)
from tests.plugins.test_upload import tool_manifest, tool_plugin, upload

ELF = b"\x7fELF\x02\x01\x01\x00" + b"\0" * 56
DEV = "/api/v1/developer/plugins"


def executable(name: str, data: bytes = b"#!/bin/sh\n") -> Member:
    member = file(name, data)
    member.info.mode = 0o755
    return member


def tool_package_with(manifest: dict[str, Any], *members: Member) -> bytes:
    return tar_gz([manifest_file(manifest), file("index.js", b"export default 1\n"), *members])


def brief(findings: list[dict[str, str]]) -> list[tuple[str, str, str]]:
    return [(f["code"], f["severity"], f["path"]) for f in findings]


async def developer_version(
    client: httpx.AsyncClient, dev: Account, plugin_id: str, version_id: str
) -> dict[str, Any]:
    detail = ok(await client.get(f"{DEV}/{plugin_id}", headers=dev.headers))
    (found,) = [v for v in detail["versions"] if v["id"] == version_id]
    return dict(found)


async def admin_version(
    client: httpx.AsyncClient, admin: Account, plugin_id: str, version_id: str
) -> dict[str, Any]:
    (found,) = [v for v in await admin_versions(client, admin, plugin_id) if v["id"] == version_id]
    return found


async def stored_findings(sessionmaker: Any, version_id: str) -> list[dict[str, str]]:
    async with sessionmaker() as session:
        row = await session.get(PluginVersion, version_id)
        assert row is not None
        return list(row.findings)


async def test_clean_version_has_empty_findings_everywhere(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    version = await create_version(client, dev, plugin, "1.0.0")
    assert version["findings"] == [] and version["reviewStatus"] == "pending"
    assert (await developer_version(client, dev, plugin["id"], version["id"]))["findings"] == []
    assert (await admin_version(client, admin, plugin["id"], version["id"]))["findings"] == []
    queue = ok(await client.get("/api/v1/admin/plugins/versions/pending", headers=admin.headers))
    (queued,) = [v for v in queue["items"] if v["id"] == version["id"]]
    assert queued["findings"] == []


async def test_error_rejects_and_every_finding_is_kept(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await tool_plugin(client, dev)
    manifest = tool_manifest(plugin["pluginKey"], "1.0.0", main="dist/missing.js")
    data = tool_package_with(manifest, executable("bin/run.sh"))
    version = ok(await upload(client, dev, plugin, data), 201)

    assert version["reviewStatus"] == "rejected" and version["reviewedBy"] == "system"
    expected = [
        ("file-missing", "error", "main"),
        ("file-executable", "warning", "file:bin/run.sh"),
    ]
    assert brief(version["findings"]) == expected
    # The note lists the errors, as automatic validation always did; not the warnings.
    assert version["reviewNote"] == (
        "Automatic validation failed:\n- manifest.main names dist/missing.js, which is not in "
        "the package"
    )
    assert await stored_findings(sessionmaker, version["id"]) == version["findings"]
    shown = await admin_version(client, admin, plugin["id"], version["id"])
    assert shown["findings"] == version["findings"]
    async with sessionmaker() as session:
        audit = (
            await session.scalars(select(AuditLog).where(AuditLog.resource_id == version["id"]))
        ).one()
        assert (audit.action, audit.trigger) == ("REVIEW_REJECT", "auto-validation")


async def test_warnings_leave_the_version_pending_for_the_reviewer(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await tool_plugin(client, dev)
    manifest = tool_manifest(plugin["pluginKey"], "1.0.0", permissions=["fs.read"])
    data = tool_package_with(manifest, file("notes.txt", ELF), executable("bin/run.sh"))
    version = ok(await upload(client, dev, plugin, data), 201)

    assert (version["reviewStatus"], version["reviewNote"], version["reviewedBy"]) == (
        "pending",
        None,
        None,
    )
    expected = [
        ("file-executable", "warning", "file:bin/run.sh"),
        ("file-native-binary", "warning", "file:notes.txt"),
        ("permissions-requested", "info", "permissions"),
    ]
    assert brief(version["findings"]) == expected
    for shown in (
        await developer_version(client, dev, plugin["id"], version["id"]),
        await admin_version(client, admin, plugin["id"], version["id"]),
    ):
        assert shown["findings"] == version["findings"]
    async with sessionmaker() as session:
        audits = await session.scalars(
            select(AuditLog).where(AuditLog.resource_id == version["id"])
        )
        assert list(audits) == []
    # The reviewer can still approve it.
    approved = ok(await review_version(client, admin, version["id"], approved=True))
    assert approved["reviewStatus"] == "approved" and approved["findings"] == version["findings"]


async def test_new_version_is_compared_with_the_last_approved_one(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    first = await create_version(client, dev, plugin, "1.0.0", permissions=["fs.read"])
    assert brief(first["findings"]) == [("permissions-requested", "info", "permissions")]
    ok(await review_version(client, admin, first["id"], approved=True))

    second = await create_version(
        client,
        dev,
        plugin,
        "1.1.0",
        permissions=["fs.read", "network:*"],
        mcp={"command": "bash", "args": ["weather-mcp"]},
    )
    assert second["reviewStatus"] == "pending"
    assert [(f["code"], f["severity"], f["path"], f["message"]) for f in second["findings"]] == [
        (
            "permission-added",
            "warning",
            "permissions[1]",
            '"network:*" is new since the last approved version',
        ),
        ("mcp-launch-changed", "warning", "mcp.command", 'changed from "npx" to "bash"'),
    ]
    shown = await admin_version(client, admin, plugin["id"], second["id"])
    assert shown["findings"] == second["findings"]
    # The findings compare with the version the reviewer's diff compares with.
    diff = ok(
        await client.get(
            f"/api/v1/admin/plugins/versions/{second['id']}/diff", headers=admin.headers
        )
    )
    assert diff["base"]["id"] == first["id"] and diff["newPermissions"] == ["network:*"]


async def test_rejected_versions_are_not_the_base(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    first = await create_version(client, dev, plugin, "1.0.0", permissions=["fs.read"])
    ok(await review_version(client, admin, first["id"], approved=True))
    wide = await create_version(client, dev, plugin, "1.1.0", permissions=["fs.*"])
    ok(await review_version(client, admin, wide["id"], approved=False, reviewNote="too wide"))

    again = await create_version(client, dev, plugin, "1.2.0", permissions=["fs.*"])
    assert brief(again["findings"]) == [("permission-widened", "warning", "permissions[0]")]


async def test_the_current_version_is_the_base_even_when_a_higher_one_was_approved(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev)
    high = await create_version(client, dev, plugin, "2.0.0", permissions=["a", "b"])
    low = await create_version(client, dev, plugin, "1.5.0", permissions=["a"])
    ok(await review_version(client, admin, high["id"], approved=True))
    ok(await review_version(client, admin, low["id"], approved=True))  # now current

    third = await create_version(client, dev, plugin, "3.0.0", permissions=["a", "b"])
    assert brief(third["findings"]) == [("permission-added", "warning", "permissions[1]")]


async def test_admin_release_keeps_its_warnings_and_is_approved(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    body = publish_body(type="tool")
    plugin = ok(await client.post("/api/v1/admin/plugins", json=body, headers=admin.headers), 201)
    data = tool_package_with(tool_manifest(plugin["pluginKey"], "1.0.0"), file("lib.dll", b"x"))
    version = ok(await upload(client, admin, plugin, data, admin=True), 201)
    assert version["reviewStatus"] == "approved" and version["isLatest"] is True
    assert brief(version["findings"]) == [("file-native-binary", "warning", "file:lib.dll")]


async def test_stored_findings_are_capped(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    dev = await factory.developer()
    plugin = await tool_plugin(client, dev)
    scripts = [executable(f"bin/s{index:03}") for index in range(300)]
    data = tool_package_with(tool_manifest(plugin["pluginKey"], "1.0.0"), *scripts)
    version = ok(await upload(client, dev, plugin, data), 201)

    assert version["reviewStatus"] == "pending"
    findings = version["findings"]
    assert len(findings) == FINDINGS_MAX
    assert findings[-1] == {
        "code": "findings-more",
        "severity": "warning",
        "path": "",
        "message": "... and 101 more findings (101 warnings)",
    }
    assert await stored_findings(sessionmaker, version["id"]) == findings


async def test_hidden_characters_in_a_contributed_tool_reject(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    tools = [{"name": "forecast", "description": "Weather\u2066 forecast"}]
    version = await create_version(client, dev, plugin, "1.0.0", contributes={"tools": tools})
    assert version["reviewStatus"] == "rejected"
    assert brief(version["findings"]) == [
        ("hidden-characters", "error", "contributes.tools[0].description")
    ]
    assert "U+2066" in version["findings"][0]["message"]


async def test_nul_in_a_manifest_key_is_stored_visible_not_a_500(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    dev = await factory.developer()
    plugin = await publish(client, dev)
    version = await create_version(client, dev, plugin, "1.0.0", **{"odd\u0000key": "v"})
    assert version["reviewStatus"] == "rejected"
    (finding,) = version["findings"]
    assert (finding["code"], finding["path"]) == ("hidden-characters-in-key", "odd\ufffdkey")
    assert await stored_findings(sessionmaker, version["id"]) == version["findings"]
