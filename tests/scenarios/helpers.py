"""API-level helpers for scenario tests: publish, upload, review, all through HTTP."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.factories import Account
from tests.helpers import ok
from tests.packages.tarballs import file, manifest_file, package, tar_gz

DEV = "/api/v1/marketplace/developer"
ADMIN = "/api/v1/admin/scenarios"
PUBLIC = "/api/v1/marketplace/scenarios"


def unique_id(prefix: str = "scen") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def publish_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": unique_id(),
        "version": "1.0.0",
        "name": "Code review",
        "nameZh": "代码评审",
        "description": "Reviews a pull request",
        "descriptionZh": "评审合并请求",
        "type": "programmatic",
        "category": "development",
        "permissions": ["filesystem:read"],
        "changelog": "first",
    }
    body.update(overrides)
    return body


async def publish(client: httpx.AsyncClient, dev: Account, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = ok(
        await client.post(f"{DEV}/publish", json=publish_body(**overrides), headers=dev.headers),
        201,
    )
    return data


def scenario_package(scenario_id: str, version: str, *, with_manifest: bool = True) -> bytes:
    if not with_manifest:
        return tar_gz([file("scenario.yaml", b"steps: []\n"), file("README.md", b"# demo\n")])
    return package(
        {"id": scenario_id, "version": version, "type": "programmatic"},
        {"scenario.yaml": b"steps: []\n"},
    )


def with_manifest(manifest: dict[str, Any], *members: Any) -> bytes:
    return tar_gz([manifest_file(manifest), *members])


async def upload(
    client: httpx.AsyncClient,
    account: Account,
    scenario_id: str,
    data: bytes | None,
    version: str | None = None,
    *,
    extra: dict[str, str] | None = None,
) -> httpx.Response:
    url = f"{DEV}/{scenario_id}/upload-package"
    fields = ({"version": version} if version is not None else {}) | (extra or {})
    if data is None:
        # Still multipart, just without the file part.
        parts = {name: (None, value) for name, value in (fields or {"version": "1.0.0"}).items()}
        return await client.post(url, files=parts, headers=account.headers)
    return await client.post(
        url,
        data=fields,
        files={"file": ("scenario.tar.gz", data, "application/gzip")},
        headers=account.headers,
    )


async def review(
    client: httpx.AsyncClient, admin: Account, version_id: str, **body: Any
) -> httpx.Response:
    return await client.post(
        f"{ADMIN}/versions/{version_id}/review", json=body, headers=admin.headers
    )


async def admin_versions(
    client: httpx.AsyncClient, admin: Account, scenario_id: str
) -> list[dict[str, Any]]:
    data = ok(await client.get(f"{ADMIN}/{scenario_id}/versions", headers=admin.headers))
    items: list[dict[str, Any]] = data["items"]
    return items


async def version_id(
    client: httpx.AsyncClient, admin: Account, scenario_id: str, version: str
) -> str:
    for item in await admin_versions(client, admin, scenario_id):
        if item["version"] == version:
            return str(item["id"])
    raise AssertionError(f"no version {version} of {scenario_id}")


async def approve(
    client: httpx.AsyncClient, admin: Account, scenario_id: str, version: str = "1.0.0"
) -> dict[str, Any]:
    vid = await version_id(client, admin, scenario_id, version)
    data: dict[str, Any] = ok(await review(client, admin, vid, approved=True))
    return data


async def released(
    client: httpx.AsyncClient, dev: Account, admin: Account, **overrides: Any
) -> dict[str, Any]:
    """A published scenario whose 1.0.0 has a package and is approved: public."""
    scenario = await publish(client, dev, **overrides)
    data = scenario_package(scenario["id"], scenario["version"])
    ok(await upload(client, dev, scenario["id"], data))
    await approve(client, admin, scenario["id"], scenario["version"])
    return scenario
