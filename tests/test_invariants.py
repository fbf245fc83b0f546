"""The invariant checker used by the fault suite does see a broken invariant."""

from __future__ import annotations

import pytest
from sqlalchemy import Connection, text

from tests.factories import Factory
from tests.invariants import broken_invariants
from tests.migrations import run_on


async def test_a_row_without_its_blob_and_a_decision_without_audit_are_reported(
    factory: Factory, database_url: str
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    version = await factory.version(plugin)  # approved straight into the table: no audit
    assert version.blob_key is not None

    broken = await run_on(database_url, broken_invariants(blob_keys=set()))
    assert f"3: plugin_versions {version.id} points at missing blob {version.blob_key}" in broken
    assert f"6: plugin_versions {version.id} was decided without an audit record" in broken
    assert f"10: plugin_versions {version.id} is approved without a release" in broken

    with_blob = await run_on(database_url, broken_invariants(blob_keys={version.blob_key}))
    assert not [line for line in with_blob if line.startswith("3:")]


async def test_listing_counts_follow_every_change_of_a_listed_plugin(
    factory: Factory, database_url: str
) -> None:
    owner = await factory.developer()
    moved = await factory.plugin(owner, category="productivity", type="mcp")
    retyped = await factory.plugin(owner, category="utility", type="tool")
    hidden = await factory.plugin(owner, category="utility")
    gone = await factory.plugin(owner, category="productivity")
    pending = await factory.plugin(owner, review_status="pending")

    def change(connection: Connection) -> None:
        for sql, plugin_id in (
            ("UPDATE plugins SET category = 'utility' WHERE id = :id", moved.id),
            ("UPDATE plugins SET type = 'skill' WHERE id = :id", retyped.id),
            ("UPDATE plugins SET enabled = false WHERE id = :id", hidden.id),
            ("DELETE FROM plugins WHERE id = :id", gone.id),
            (
                "UPDATE plugins SET review_status = 'approved', enabled = true WHERE id = :id",
                pending.id,
            ),
            ("UPDATE plugins SET category = category WHERE id = :id", moved.id),
        ):
            connection.execute(text(sql), {"id": plugin_id})

    await run_on(database_url, change)

    assert not [
        line
        for line in await run_on(database_url, broken_invariants(blob_keys=set()))
        if line.startswith(("11:", "12:"))
    ]


async def test_a_listing_count_that_drifted_is_reported(
    factory: Factory, database_url: str
) -> None:
    await factory.plugin(await factory.developer(), category="utility", type="hook")

    def drift_and_check(connection: Connection) -> list[str]:
        connection.execute(
            text(
                "UPDATE catalog_listing_counts SET listed = listed + 5 "
                "WHERE category = 'utility' AND type = 'hook'"
            )
        )
        found = broken_invariants(blob_keys=set())(connection)
        connection.execute(
            text(
                "UPDATE catalog_listing_counts SET listed = listed - 5 "
                "WHERE category = 'utility' AND type = 'hook'"
            )
        )
        return found

    broken = [
        line for line in await run_on(database_url, drift_and_check) if line.startswith("11:")
    ]
    assert len(broken) == 1
    assert "('utility', 'hook', True) counts" in broken[0]


async def test_search_facets_that_drifted_are_reported(
    factory: Factory, database_url: str, is_postgres: bool
) -> None:
    if is_postgres:
        pytest.skip("plugin_search_rowids is SQLite's (migration 0011)")
    plugin = await factory.plugin(await factory.developer(), category="utility")

    def drift_and_check(connection: Connection) -> list[str]:
        connection.execute(
            text("UPDATE plugin_search_rowids SET listed = 0 WHERE plugin_id = :id"),
            {"id": plugin.id},
        )
        found = broken_invariants(blob_keys=set())(connection)
        connection.execute(
            text("UPDATE plugin_search_rowids SET listed = 1 WHERE plugin_id = :id"),
            {"id": plugin.id},
        )
        return found

    broken = [
        line for line in await run_on(database_url, drift_and_check) if line.startswith("12:")
    ]
    assert broken == [f"12: plugin {plugin.id} has other search facets than its row"]
