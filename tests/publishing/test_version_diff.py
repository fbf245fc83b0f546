"""GET /api/v1/admin/{plugins,scenarios}/versions/{id}/diff and GET .../versions/{id}:
the reviewer's view of a version against the last approved one (CONTRACT 12)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from marketplace.models import PluginVersion, ReviewStatus
from tests.factories import Account, Factory
from tests.helpers import err, ok
from tests.packages.tarballs import file, manifest_file, tar_gz
from tests.plugins.helpers import config_manifest, create_version, review_version
from tests.plugins.helpers import publish as publish_plugin
from tests.scenarios import helpers as scenarios

PLUGIN_VERSIONS = "/api/v1/admin/plugins/versions"
SCENARIO_VERSIONS = "/api/v1/admin/scenarios/versions"

INDEX_V1 = b"export default () => 1;\n"
INDEX_V2 = b"export default () => 2; // faster\n"
README = b"# Weather\n"


def tool_manifest(key: str, version: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": key,
        "version": version,
        "main": "index.js",
        "category": "utility",
        "type": "tool",
        **extra,
    }


def plugin_package(manifest: dict[str, Any], files: dict[str, bytes], prefix: str = "") -> bytes:
    members = [manifest_file(manifest, prefix + "manifest.json")]
    members += [file(prefix + name, data) for name, data in files.items()]
    return tar_gz(members)


def manifest_size(manifest: dict[str, Any]) -> int:
    return len(json.dumps(manifest).encode())  # as tarballs.manifest_file writes it


async def upload(
    client: httpx.AsyncClient,
    account: Account,
    plugin: dict[str, Any],
    version: str,
    data: bytes,
    *,
    admin: bool = False,
) -> dict[str, Any]:
    """A package upload: by the admin it is approved and current at once, else pending."""
    path = (
        f"/api/v1/admin/plugins/{plugin['id']}/upload"
        if admin
        else f"/api/v1/developer/plugins/{plugin['id']}/upload-version"
    )
    response = await client.post(
        path,
        data={"version": version},
        files={"file": ("plugin.tar.gz", data, "application/gzip")},
        headers=account.headers,
    )
    version_data: dict[str, Any] = ok(response, 201)
    return version_data


async def diff_of(
    client: httpx.AsyncClient, admin: Account, version_id: str, group: str = PLUGIN_VERSIONS
) -> dict[str, Any]:
    data: dict[str, Any] = ok(await client.get(f"{group}/{version_id}/diff", headers=admin.headers))
    return data


async def tool_plugin(client: httpx.AsyncClient, dev: Account) -> dict[str, Any]:
    return await publish_plugin(client, dev, type="tool", category="utility")


# ------------------------------------------------------------------------------ plugins


async def test_a_first_version_has_no_base_and_everything_is_added(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await tool_plugin(client, dev)
    manifest = tool_manifest(plugin["pluginKey"], "1.0.0", permissions=["network", "clipboard"])
    version = await upload(
        client, dev, plugin, "1.0.0", plugin_package(manifest, {"index.js": INDEX_V1})
    )
    diff = await diff_of(client, admin, version["id"])
    assert diff == {
        "base": None,
        "files": {
            "added": [
                {"path": "index.js", "size": len(INDEX_V1)},
                {"path": "manifest.json", "size": manifest_size(manifest)},
            ],
            "removed": [],
            "changed": [],
        },
        "manifest": {"added": manifest, "removed": {}, "changed": {}},
        "newPermissions": ["clipboard", "network"],
    }


async def test_a_new_version_shows_changed_added_and_removed_files_keys_and_permissions(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await tool_plugin(client, dev)
    key = plugin["pluginKey"]
    old = tool_manifest(key, "1.0.0", description="Weather", permissions=["network"])
    base = await upload(
        client,
        admin,
        plugin,
        "1.0.0",
        plugin_package(old, {"index.js": INDEX_V1, "old.js": b"legacy\n", "README.md": README}),
        admin=True,
    )
    new = tool_manifest(
        key, "1.1.0", description="Weather, faster", permissions=["network", "filesystem:write"]
    )
    # Wrapped in a top-level folder this time: paths are relative to the package root.
    head = await upload(
        client,
        dev,
        plugin,
        "1.1.0",
        plugin_package(
            new, {"index.js": INDEX_V2, "README.md": README, "lib/new.js": b"x\n"}, prefix="pkg/"
        ),
    )
    diff = await diff_of(client, admin, head["id"])
    assert diff["base"] == {"id": base["id"], "version": "1.0.0"}
    assert diff["files"] == {
        "added": [{"path": "lib/new.js", "size": 2}],
        "removed": [{"path": "old.js", "size": 7}],
        "changed": [
            {"path": "index.js", "sizeBefore": len(INDEX_V1), "sizeAfter": len(INDEX_V2)},
            {
                "path": "manifest.json",
                "sizeBefore": manifest_size(old),
                "sizeAfter": manifest_size(new),
            },
        ],
    }
    assert diff["manifest"] == {
        "added": {},
        "removed": {},
        "changed": {
            "description": {"before": "Weather", "after": "Weather, faster"},
            "permissions": {"before": ["network"], "after": ["network", "filesystem:write"]},
            "version": {"before": "1.0.0", "after": "1.1.0"},
        },
    }
    assert diff["newPermissions"] == ["filesystem:write"]
    # Reading a diff changes nothing.
    again = ok(await client.get(f"{PLUGIN_VERSIONS}/{head['id']}", headers=admin.headers))
    assert (again["reviewStatus"], again["isLatest"]) == ("pending", False)


async def test_a_config_only_version_against_a_tarball_base_has_no_files(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish_plugin(client, dev)  # an mcp plugin
    key = plugin["pluginKey"]
    old = config_manifest(key, "1.0.0", main="index.js")
    await upload(
        client, admin, plugin, "1.0.0", plugin_package(old, {"index.js": INDEX_V1}), admin=True
    )
    head = await create_version(client, dev, plugin, "1.1.0", permissions=["network"])
    assert head["distribution"] == "config_only"
    diff = await diff_of(client, admin, head["id"])
    assert diff["files"] == {
        "added": [],
        "removed": [
            {"path": "index.js", "size": len(INDEX_V1)},
            {"path": "manifest.json", "size": manifest_size(old)},
        ],
        "changed": [],
    }
    assert diff["manifest"]["changed"] == {
        "main": {"before": "index.js", "after": ""},
        "version": {"before": "1.0.0", "after": "1.1.0"},
    }
    assert diff["manifest"]["added"] == {"permissions": ["network"]}
    assert diff["newPermissions"] == ["network"]


async def test_the_base_is_the_current_version_else_the_newest_other_approved(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Any
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish_plugin(client, dev)

    async def released(version: str) -> dict[str, Any]:
        return await create_version(client, admin, plugin, version, admin=True)

    async def reviewed(version: str, approved: bool) -> dict[str, Any]:
        created = await create_version(client, dev, plugin, version)
        data: dict[str, Any] = ok(
            await review_version(client, admin, created["id"], approved=approved, reviewNote="n")
        )
        return data

    # Created first, approved last: the current version is not the newest created one.
    waiting = await create_version(client, dev, plugin, "3.0.0")
    first, second = await released("1.0.0"), await released("2.0.0")
    rejected = await reviewed("2.1.0", approved=False)
    taken_down = await released("0.9.0")
    current = ok(await review_version(client, admin, waiting["id"], approved=True))
    pending = await create_version(client, dev, plugin, "3.1.0")
    # The version takedown move is another change's: set the state directly. A taken-down
    # version is never a base (without this, 0.9.0 would be the newest other approved).
    async with sessionmaker() as session:
        await session.execute(
            update(PluginVersion)
            .where(PluginVersion.id == taken_down["id"])
            .values(review_status=ReviewStatus.TAKEN_DOWN.value)
        )
        await session.commit()

    async def base_of(version: dict[str, Any]) -> str | None:
        base = (await diff_of(client, admin, version["id"]))["base"]
        return None if base is None else str(base["version"])

    assert current["isLatest"] is True
    # What approving the version would replace: the current one.
    for version in (pending, rejected, first, second):
        assert await base_of(version) == "3.0.0"
    # The current version itself: the newest other approved one by creation.
    assert await base_of(current) == "2.0.0"


async def test_a_version_whose_package_is_gone_is_an_internal_error_in_the_envelope(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await tool_plugin(client, dev)
    manifest = tool_manifest(plugin["pluginKey"], "1.0.0")
    version = await upload(
        client, dev, plugin, "1.0.0", plugin_package(manifest, {"index.js": b"1"})
    )
    await app.state.blob_store.delete(
        f"{version['sha256'][:2]}/{version['sha256'][2:4]}/{version['sha256']}"
    )
    response = await client.get(f"{PLUGIN_VERSIONS}/{version['id']}/diff", headers=admin.headers)
    error = err(response, 500, "INTERNAL_ERROR")
    assert "cannot be read" in error["message"]
    assert "Traceback" not in response.text and version["sha256"] not in response.text


# ---------------------------------------------------------------------------- scenarios


async def test_a_first_scenario_version_without_a_package_shows_its_metadata(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await scenarios.publish(client, dev, nameZh=None, permissions=["fs:read", "a:b"])
    vid = await scenarios.version_id(client, admin, scenario["id"], "1.0.0")
    diff = await diff_of(client, admin, vid, SCENARIO_VERSIONS)
    assert diff == {
        "base": None,
        "files": {"added": [], "removed": [], "changed": []},
        "manifest": {
            "added": {
                "category": "development",
                "description": "Reviews a pull request",
                "descriptionZh": "评审合并请求",
                "name": "Code review",
                "permissions": ["fs:read", "a:b"],
                "type": "programmatic",
                "version": "1.0.0",
            },
            "removed": {},
            "changed": {},
        },
        "newPermissions": ["a:b", "fs:read"],
    }


async def test_a_scenario_version_with_a_package_against_one_with_a_package(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await scenarios.released(client, dev, admin)  # 1.0.0 with a package, approved
    sid = scenario["id"]
    await scenarios.publish(
        client, dev, id=sid, version="1.1.0", permissions=["filesystem:read", "network"]
    )
    package = scenarios.with_manifest(
        {"id": sid, "version": "1.1.0", "type": "programmatic", "steps": 2},
        file("scenario.yaml", b"steps: [one, two]\n"),
        file("extra.md", b"more\n"),
    )
    ok(await scenarios.upload(client, dev, sid, package, "1.1.0"))
    base_id = await scenarios.version_id(client, admin, sid, "1.0.0")
    head_id = await scenarios.version_id(client, admin, sid, "1.1.0")
    diff = await diff_of(client, admin, head_id, SCENARIO_VERSIONS)
    assert diff["base"] == {"id": base_id, "version": "1.0.0"}
    assert diff["files"]["added"] == [{"path": "extra.md", "size": 5}]
    assert diff["files"]["removed"] == []
    assert [c["path"] for c in diff["files"]["changed"]] == ["manifest.json", "scenario.yaml"]
    assert diff["manifest"]["changed"] == {
        "package.version": {"before": "1.0.0", "after": "1.1.0"},
        "permissions": {"before": ["filesystem:read"], "after": ["filesystem:read", "network"]},
        "version": {"before": "1.0.0", "after": "1.1.0"},
    }
    assert diff["manifest"]["added"] == {"package.steps": 2}
    assert diff["newPermissions"] == ["network"]


async def test_a_scenario_version_without_a_package_against_one_with_a_package(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    scenario = await scenarios.released(client, dev, admin)
    sid = scenario["id"]
    await scenarios.publish(client, dev, id=sid, version="2.0.0", description="Now bigger")
    head_id = await scenarios.version_id(client, admin, sid, "2.0.0")
    diff = await diff_of(client, admin, head_id, SCENARIO_VERSIONS)
    assert [f["path"] for f in diff["files"]["removed"]] == ["manifest.json", "scenario.yaml"]
    assert diff["files"]["added"] == [] and diff["files"]["changed"] == []
    assert diff["manifest"]["removed"] == {
        "package.id": sid,
        "package.type": "programmatic",
        "package.version": "1.0.0",
    }
    assert diff["manifest"]["changed"]["description"] == {
        "before": "Reviews a pull request",
        "after": "Now bigger",
    }
    assert diff["newPermissions"] == []


# ---------------------------------------------------------------- lookups and refusals


@pytest.mark.parametrize(
    ("group", "code"),
    [(PLUGIN_VERSIONS, "PLUGIN_VERSION_NOT_FOUND"), (SCENARIO_VERSIONS, "SCENARIO_NOT_FOUND")],
)
@pytest.mark.parametrize("suffix", ["/diff", ""])
async def test_an_unknown_version_is_404_in_the_kind_words(
    client: httpx.AsyncClient, factory: Factory, group: str, code: str, suffix: str
) -> None:
    admin = await factory.admin()
    for ref in (str(uuid.uuid4()), "not-an-id"):
        err(await client.get(f"{group}/{ref}{suffix}", headers=admin.headers), 404, code)


async def test_a_plugin_version_id_is_not_a_scenario_version(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish_plugin(client, dev)
    version = await create_version(client, dev, plugin, "1.0.0")
    url = f"{SCENARIO_VERSIONS}/{version['id']}/diff"
    err(await client.get(url, headers=admin.headers), 404, "SCENARIO_NOT_FOUND")


@pytest.mark.parametrize("group", [PLUGIN_VERSIONS, SCENARIO_VERSIONS])
@pytest.mark.parametrize("suffix", ["/diff", ""])
async def test_without_a_token_is_401_and_a_developer_is_403_even_for_unknown_ids(
    client: httpx.AsyncClient, factory: Factory, group: str, suffix: str
) -> None:
    dev = await factory.developer()
    url = f"{group}/{uuid.uuid4()}{suffix}"
    err(await client.get(url), 401, "UNAUTHORIZED")
    err(await client.get(url, headers={"Authorization": "Bearer nonsense"}), 401, "UNAUTHORIZED")
    err(await client.get(url, headers=dev.headers), 403, "FORBIDDEN")


async def test_a_developer_cannot_read_the_diff_of_their_own_version(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    plugin = await publish_plugin(client, dev)
    version = await create_version(client, dev, plugin, "1.0.0")
    url = f"{PLUGIN_VERSIONS}/{version['id']}/diff"
    err(await client.get(url, headers=dev.headers), 403, "FORBIDDEN")


async def test_a_super_admin_reads_one_version_in_its_kind_shape(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, boss = await factory.developer(), await factory.super_admin()
    plugin = await publish_plugin(client, dev)
    created = await create_version(client, dev, plugin, "1.0.0", description="hello")
    version = ok(await client.get(f"{PLUGIN_VERSIONS}/{created['id']}", headers=boss.headers))
    assert version == created
    scenario = await scenarios.publish(client, dev)
    vid = await scenarios.version_id(client, boss, scenario["id"], "1.0.0")
    data = ok(await client.get(f"{SCENARIO_VERSIONS}/{vid}", headers=boss.headers))
    assert (data["id"], data["scenarioId"], data["reviewStatus"]) == (
        vid,
        scenario["id"],
        "pending",
    )
    assert data["sha256"] is None  # no package yet
