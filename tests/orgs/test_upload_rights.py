"""Rights are read again once an upload's body has arrived: a member removed from the
organization while its package or icon streams in creates nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from marketplace.models import OrgRole, Plugin, PluginVersion
from tests.factories import Account, Factory
from tests.helpers import err, ok
from tests.orgs.helpers import remove
from tests.plugins.test_upload import PNG, tool_package


def _streamed(
    path: str, account: Account, files: dict[str, tuple[str, bytes, str]], data: dict[str, str]
) -> tuple[httpx.Request, bytes]:
    built = httpx.Request("POST", f"http://test{path}", files=files, data=data)
    return built, built.read()


async def _upload_while_removed(
    app: FastAPI,
    client: httpx.AsyncClient,
    owner: Account,
    member: Account,
    slug: str,
    path: str,
    files: dict[str, tuple[str, bytes, str]],
    data: dict[str, str],
) -> httpx.Response:
    """POST the multipart body in two halves; between them, the owner removes the member."""
    built, body = _streamed(path, member, files, data)
    half = len(body) // 2

    async def chunks() -> AsyncIterator[bytes]:
        yield body[:half]
        ok(await remove(client, owner, slug, member.id))  # while the body streams in
        yield body[half:]

    headers = {**member.headers, "Content-Type": built.headers["Content-Type"]}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as uploader:
        return await uploader.post(path, content=chunks(), headers=headers)


async def test_a_member_removed_during_a_version_upload_creates_no_version(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner)
    await factory.member(org, member, OrgRole.MEMBER)
    plugin = await factory.plugin(owner, org_id=org.id)
    response = await _upload_while_removed(
        app,
        client,
        owner,
        member,
        org.slug,
        f"/api/v1/developer/plugins/{plugin.id}/upload-version",
        {"file": ("plugin.tar.gz", tool_package(plugin.plugin_key, "2.0.0"), "application/gzip")},
        {"version": "2.0.0", "changelog": "late"},
    )
    err(response, 403, "PLUGIN_NOT_OWNED")
    async with factory.sessions() as session:
        count = await session.scalar(
            select(func.count()).where(
                PluginVersion.plugin_id == plugin.id, PluginVersion.version == "2.0.0"
            )
        )
    assert count == 0


async def test_a_member_removed_during_an_icon_upload_changes_no_icon(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner)
    await factory.member(org, member, OrgRole.MEMBER)
    plugin = await factory.plugin(owner, org_id=org.id)
    response = await _upload_while_removed(
        app,
        client,
        owner,
        member,
        org.slug,
        f"/api/v1/developer/plugins/{plugin.id}/icon",
        {"file": ("icon.png", PNG, "image/png")},
        {},
    )
    err(response, 403, "PLUGIN_NOT_OWNED")
    async with factory.sessions() as session:
        row = await session.get(Plugin, plugin.id)
        assert row is not None and row.icon == plugin.icon
