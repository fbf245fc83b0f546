"""Plugin developer and admin groups (seed 4.2, 4.5, part 3; CONTRACT 3, 4, 5)."""

from __future__ import annotations

import httpx

from tests.factories import Factory
from tests.helpers import err, field_names, ok
from tests.plugins.helpers import (
    publish_body,
)

DEV = "/api/v1/developer/plugins"
ADMIN = "/api/v1/admin/plugins"


async def test_plugin_key_of_32_hex_digits_is_refused_or_addressable(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    # CONTRACT 3: a UUID-shaped key is refused at publish so that :pluginId takes the id or
    # the pluginKey. uuid.UUID() also reads 32 hex digits without hyphens as a UUID.
    dev, admin = await factory.developer(), await factory.admin()
    key = "deadbeef" * 4
    response = await client.post(
        f"{DEV}/publish", json=publish_body(pluginKey=key), headers=dev.headers
    )
    if response.status_code == 400:
        assert "pluginKey" in field_names(err(response, 400, "VALIDATION_FAILED"))
        return
    plugin = ok(response, 201)
    assert ok(await client.get(f"{DEV}/{key}", headers=dev.headers))["id"] == plugin["id"]
    assert ok(await client.get(f"{ADMIN}/{key}", headers=admin.headers))["id"] == plugin["id"]
