"""Findings on scenario versions (CONTRACT 12): computed at publish and again when the
package arrives, stored on the version, shown to the developer and the administrators;
an error rejects, warnings and infos wait for the reviewer."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import select

from marketplace.models import AuditLog, ScenarioVersion
from tests.factories import Account, Factory
from tests.helpers import ok
from tests.packages.tarballs import file, manifest_file, tar_gz
from tests.scenarios.helpers import (
    DEV,
    admin_versions,
    approve,
    publish,
    scenario_package,
    upload,
    version_id,
)

ELF = b"\x7fELF\x02\x01\x01\x00" + b"\0" * 56
FIRST = ("permissions-requested", "info", "permissions")


def brief(findings: list[dict[str, str]]) -> list[tuple[str, str, str]]:
    return [(f["code"], f["severity"], f["path"]) for f in findings]


async def developer_version(
    client: httpx.AsyncClient, dev: Account, scenario_id: str, version: str
) -> dict[str, Any]:
    detail = ok(await client.get(f"{DEV}/{scenario_id}", headers=dev.headers))
    (found,) = [v for v in detail["versions"] if v["version"] == version]
    return dict(found)


async def admin_version(
    client: httpx.AsyncClient, admin: Account, scenario_id: str, version: str
) -> dict[str, Any]:
    (found,) = [
        v for v in await admin_versions(client, admin, scenario_id) if v["version"] == version
    ]
    return found


async def stored(sessionmaker: Any, scenario_id: str, version: str) -> ScenarioVersion:
    async with sessionmaker() as session:
        row = await session.scalar(
            select(ScenarioVersion).where(
                ScenarioVersion.scenario_id == scenario_id, ScenarioVersion.version == version
            )
        )
        assert row is not None
        return row


async def test_publish_without_permissions_has_empty_findings(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev, permissions=[])
    assert scenario["versions"][0]["findings"] == []
    assert (await admin_version(client, admin, scenario["id"], "1.0.0"))["findings"] == []


async def test_first_version_lists_its_permissions_for_developer_and_admin(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    (version,) = scenario["versions"]
    assert brief(version["findings"]) == [FIRST]
    assert version["reviewStatus"] == "pending"
    assert (await developer_version(client, dev, scenario["id"], "1.0.0")) == version
    shown = await admin_version(client, admin, scenario["id"], "1.0.0")
    assert shown["findings"] == version["findings"]
    assert (await stored(sessionmaker, scenario["id"], "1.0.0")).findings == version["findings"]


async def test_new_version_is_compared_with_the_last_approved_one(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev, permissions=["filesystem:read"])
    await approve(client, admin, scenario["id"])

    newer = await publish(
        client,
        dev,
        id=scenario["id"],
        version="1.1.0",
        permissions=["filesystem:*", "network:*"],
    )
    version = await developer_version(client, dev, newer["id"], "1.1.0")
    assert version["reviewStatus"] == "pending" and newer["reviewStatus"] == "pending"
    assert brief(version["findings"]) == [
        ("permission-widened", "warning", "permissions[0]"),
        ("permission-added", "warning", "permissions[1]"),
    ]


async def test_package_findings_replace_the_publish_findings_and_wait_for_review(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev)
    data = tar_gz([file("scenario.yaml", b"steps: []\n"), file("tools/helper.txt", ELF)])
    version = ok(await upload(client, dev, scenario["id"], data), 200)

    assert version["reviewStatus"] == "pending" and version["sha256"]
    expected = [("file-native-binary", "warning", "file:tools/helper.txt"), FIRST]
    assert brief(version["findings"]) == expected
    shown = await admin_version(client, admin, scenario["id"], "1.0.0")
    assert shown["findings"] == version["findings"]
    assert (await stored(sessionmaker, scenario["id"], "1.0.0")).findings == version["findings"]
    ok(
        await client.post(
            f"/api/v1/admin/scenarios/versions/{shown['id']}/review",
            json={"approved": True},
            headers=admin.headers,
        )
    )


async def test_clean_package_keeps_the_version_pending(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev, permissions=[])
    data = scenario_package(scenario["id"], "1.0.0")
    version = ok(await upload(client, dev, scenario["id"], data), 200)
    assert (version["reviewStatus"], version["findings"]) == ("pending", [])


async def test_hidden_characters_in_the_package_manifest_reject(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await publish(client, dev, permissions=[])
    manifest = {"id": scenario["id"], "version": "1.0.0", "description": "Safe\u202etxt.exe"}
    data = tar_gz([manifest_file(manifest), file("scenario.yaml", b"steps: []\n")])
    version = ok(await upload(client, dev, scenario["id"], data), 200)

    assert version["reviewStatus"] == "rejected" and version["reviewedBy"] == "system"
    assert brief(version["findings"]) == [("hidden-characters", "error", "package.description")]
    assert "U+202E" in version["reviewNote"]
    detail = ok(await client.get(f"{DEV}/{scenario['id']}", headers=dev.headers))
    assert detail["reviewStatus"] == "rejected"
    vid = await version_id(client, admin, scenario["id"], "1.0.0")
    async with sessionmaker() as session:
        audit = (await session.scalars(select(AuditLog).where(AuditLog.resource_id == vid))).one()
        assert (audit.action, audit.trigger, audit.actor_id) == (
            "REVIEW_REJECT",
            "auto-validation",
            None,
        )


async def test_hidden_characters_in_a_package_file_name_reject(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    scenario = await publish(client, dev, permissions=[])
    data = tar_gz([file("scenario.yaml", b"steps: []\n"), file("run\u200b.yaml", b"x")])
    version = ok(await upload(client, dev, scenario["id"], data), 200)
    assert version["reviewStatus"] == "rejected"
    assert brief(version["findings"]) == [
        ("hidden-characters-in-file-name", "error", "file:run\u200b.yaml")
    ]
