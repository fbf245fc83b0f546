"""Download info served from its per-generation cache (issue 14): every write that changes
what a download answers is seen at once; what depends on the caller is never cached."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from fastapi import FastAPI

from tests.factories import Factory
from tests.helpers import err, ok, recording_statements
from tests.plugins.helpers import create_version
from tests.takedown.helpers import ADMIN_PLUGINS, admin_takedown, released_plugin
from tests.trust.releases import open_release

API = "/api/v1/plugins/download"


@contextmanager
def plugin_reads(app: FastAPI) -> Iterator[list[str]]:
    """The statements that read the plugins or plugin_versions tables meanwhile."""
    seen: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        if "FROM plugins" in statement or "FROM plugin_versions" in statement:
            seen.append(statement)

    with recording_statements(app, record):
        yield seen


async def test_a_repeated_download_reads_no_plugin_row(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    r = await released_plugin(client, factory, ("1.0.0",))
    user = await factory.user()
    url = f"{API}/{r.key}/latest"
    with plugin_reads(app) as first:
        assert ok(await client.get(url, headers=user.headers))["release"]
    assert first, "the first download reads the plugin and its version"
    with plugin_reads(app) as again:
        ok(await client.get(url, headers=user.headers))
    assert again == []


async def test_a_new_current_version_is_downloaded_at_once(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    r = await released_plugin(client, factory, ("1.0.0",))
    user = await factory.user()
    url = f"{API}/{r.key}/latest"
    first = ok(await client.get(url, headers=user.headers))
    await create_version(client, r.admin, r.plugin, "1.1.0", admin=True)
    second = ok(await client.get(url, headers=user.headers))
    assert first["release"]["payload"] != second["release"]["payload"]
    assert open_release(app, second["release"])["version"] == "1.1.0"


async def test_a_takedown_is_seen_by_the_next_download(
    client: httpx.AsyncClient, factory: Factory, app: FastAPI
) -> None:
    r = await released_plugin(client, factory, ("1.0.0", "1.1.0"))
    user = await factory.user()
    for ref in ("latest", "1.1.0"):
        ok(await client.get(f"{API}/{r.key}/{ref}", headers=user.headers))
    ok(await admin_takedown(client, r.admin, r.ids["1.1.0"]))
    latest = ok(await client.get(f"{API}/{r.key}/latest", headers=user.headers))
    assert open_release(app, latest["release"])["version"] == "1.0.0"
    err(
        await client.get(f"{API}/{r.key}/1.1.0", headers=user.headers),
        403,
        "PLUGIN_VERSION_NOT_APPROVED",
    )


async def test_disabling_the_plugin_is_seen_by_the_next_download(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0",))
    user = await factory.user()
    ok(await client.get(f"{API}/{r.plugin['id']}/latest", headers=user.headers))
    changed = await client.put(
        f"{ADMIN_PLUGINS}/{r.plugin['id']}", json={"enabled": False}, headers=r.admin.headers
    )
    assert ok(changed)["enabled"] is False
    err(
        await client.get(f"{API}/{r.plugin['id']}/latest", headers=user.headers),
        403,
        "PLUGIN_VERSION_NOT_APPROVED",
    )


async def test_a_paid_plugin_is_decided_per_caller_after_a_refusal(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """A 402 rolls its request back after the target was cached: the next callers are still
    served from that entry, each by their own purchase."""
    owner = await factory.developer()
    plugin = await factory.plugin(owner, is_free=False, price=500)
    await factory.version(plugin, "1.0.0", distribution="config_only")
    buyer, stranger = await factory.user(), await factory.user()
    await factory.purchase(buyer, plugin)
    url = f"{API}/{plugin.id}/latest"
    err(await client.get(url, headers=stranger.headers), 402, "PLUGIN_NOT_PURCHASED")
    assert ok(await client.get(url, headers=buyer.headers))["configOnly"] is True
    assert ok(await client.get(url, headers=owner.headers))["configOnly"] is True
    err(await client.get(url, headers=stranger.headers), 402, "PLUGIN_NOT_PURCHASED")


async def test_the_token_is_checked_before_a_cached_target(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    r = await released_plugin(client, factory, ("1.0.0",))
    user = await factory.user()
    url = f"{API}/{r.key}/latest"
    ok(await client.get(url, headers=user.headers))
    err(await client.get(url), 401, "UNAUTHORIZED")
    err(await client.get(url, headers={"Authorization": "Bearer nope"}), 401, "UNAUTHORIZED")
    err(
        await client.get(f"{API}/no-such-plugin/latest", headers=user.headers),
        404,
        "PLUGIN_NOT_FOUND",
    )
