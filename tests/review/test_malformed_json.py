"""Every JSON operation in the OpenAPI document refuses a body that is not a JSON object.

FastAPI validates bodies with from_attributes=True, so an undecodable body once passed as a
model whose fields are all optional: a garbage PUT resubmitted a rejected plugin, and a
truncated purchase lost its idempotencyKey. Each operation here gets a caller that passes
every check before the body (token, role, existence, ownership), so the body is what is
judged; the answer must be 400 and no row of any table may change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import Base, IdentityStatus, Purchase, ReviewStatus, Role
from tests.factories import Account, Factory
from tests.helpers import err
from tests.plugins.helpers import create_version, publish
from tests.scenarios import helpers as sc

pytestmark = pytest.mark.fault

BAD_BODIES: dict[str, bytes] = {
    "not-json": b"not json",
    "truncated": b'{"name": ',
    "not-utf8": b'{"name": "\xff\xfe"}',
    "array": b"[]",
    "string": b'"text"',
    "number": b"42",
    "null": b"null",
}
JSON = {"content-type": "application/json"}


@dataclass
class World:
    """One of everything a path parameter can name, with who may call each group."""

    super_admin: Account
    developer: Account
    user: Account
    params: dict[str, dict[str, str]]  # group -> parameter name -> value

    def caller(self, path: str) -> dict[str, str]:
        if path.startswith("/api/v1/auth/tokens"):  # publishing tokens need a login
            return self.developer.headers
        if path.startswith("/api/v1/auth/"):
            return {}
        if path.startswith("/api/v1/admin/"):
            return self.super_admin.headers
        if path.startswith("/api/v1/plugins/"):
            return self.user.headers
        return self.developer.headers

    def fill(self, path: str) -> str:
        group = "scenarios" if "/scenarios/" in path or "/marketplace/" in path else "plugins"
        values = self.params[group] | self.params["common"]
        return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)


async def _world(client: httpx.AsyncClient, factory: Factory) -> World:
    super_admin = await factory.super_admin()
    developer = await factory.developer()
    user = await factory.user()
    applicant = await factory.user(Role.DEVELOPER, identity=IdentityStatus.PENDING)
    plugin = await publish(client, developer)
    # A version of that same plugin: nested routes (.../{plugin_id}/versions/{version_id}/...)
    # find the version through its plugin.
    pending = await create_version(client, developer, plugin, "1.0.0")
    scenario = await sc.publish(client, developer)
    scenario_version = await sc.version_id(client, super_admin, scenario["id"], "1.0.0")
    listed = await factory.plugin(developer)
    await factory.version(listed, "1.0.0")
    org = await factory.org(developer)  # its owner manages its members
    return World(
        super_admin,
        developer,
        user,
        {
            "common": {"user_id": applicant.id, "key": "productivity", "slug": org.slug},
            # The user group acts on a listed plugin; the developer group on its own one.
            "plugins": {"plugin_id": plugin["id"], "version_id": pending["id"]},
            "scenarios": {"scenario_id": scenario["id"], "version_id": scenario_version},
        },
    )


def _json_operations(app: FastAPI) -> list[tuple[str, str]]:
    operations = []
    for path, methods in app.openapi()["paths"].items():
        for method, operation in methods.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                operations.append((method.upper(), path))
    return operations


async def _snapshot(sessions: async_sessionmaker[AsyncSession]) -> dict[str, list[str]]:
    """Every row of every table, as text, in a stable order."""
    async with sessions() as session:
        tables = {}
        for table in Base.metadata.sorted_tables:
            rows = (await session.execute(select(table))).all()
            tables[table.name] = sorted(repr(tuple(row)) for row in rows)
        return tables


def _user_group_plugin(world: World, path: str, listed_id: str) -> str:
    return path.replace(world.params["plugins"]["plugin_id"], listed_id)


async def test_every_json_operation_is_listed(app: FastAPI) -> None:
    # The sweep below must not go quietly empty if the document changes shape.
    operations = _json_operations(app)
    assert len(operations) >= 25
    assert ("PUT", "/api/v1/developer/plugins/{plugin_id}") in operations
    assert ("POST", "/api/v1/plugins/purchase/{plugin_id}") in operations


@pytest.mark.parametrize("label", sorted(BAD_BODIES))
async def test_bad_body_is_400_on_every_json_operation_and_changes_nothing(
    app: FastAPI,
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    label: str,
) -> None:
    world = await _world(client, factory)
    listed = await factory.plugin(world.developer)
    await factory.version(listed, "1.0.0")
    before = await _snapshot(sessionmaker)
    answers: dict[str, int] = {}
    for method, template in _json_operations(app):
        path = world.fill(template)
        if template.startswith("/api/v1/plugins/"):
            path = _user_group_plugin(world, path, listed.id)
        response = await client.request(
            method, path, content=BAD_BODIES[label], headers={**JSON, **world.caller(template)}
        )
        answers[f"{method} {template}"] = response.status_code
        scenario_group = "/marketplace/" in template or "/scenarios/" in template
        code = "SCENARIO_VALIDATION_FAILED" if scenario_group else "VALIDATION_FAILED"
        body = err(response, 400, code)
        assert body["details"]["fields"][0]["field"] == "body", (template, body)
    assert set(answers.values()) == {400}
    assert await _snapshot(sessionmaker) == before


async def test_garbage_put_does_not_resubmit_a_rejected_plugin(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer = await factory.developer()
    plugin = await factory.plugin(developer, review_status=ReviewStatus.REJECTED)
    response = await client.put(
        f"/api/v1/developer/plugins/{plugin.id}",
        content=b"not json",
        headers={**JSON, **developer.headers},
    )
    err(response, 400, "VALIDATION_FAILED")
    detail = await client.get(f"/api/v1/developer/plugins/{plugin.id}", headers=developer.headers)
    assert detail.json()["data"]["reviewStatus"] == "rejected"


async def test_truncated_purchase_body_charges_nothing(
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    buyer = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.version(plugin, "1.0.0")
    for _ in range(2):
        response = await client.post(
            f"/api/v1/plugins/purchase/{plugin.id}",
            content=b'{"idempotencyKey": "k-1", ',
            headers={**JSON, **buyer.headers},
        )
        err(response, 400, "VALIDATION_FAILED")
    async with sessionmaker() as session:
        bought = await session.scalars(select(Purchase).where(Purchase.user_id == buyer.id))
        assert bought.all() == []


def test_world_has_a_value_for_every_path_parameter(app: FastAPI) -> None:
    names = {
        name for _method, path in _json_operations(app) for name in re.findall(r"\{(\w+)\}", path)
    }
    assert names <= {"user_id", "key", "plugin_id", "version_id", "scenario_id", "slug"}, names
