"""The invariant checker used by the fault suite does see a broken invariant."""

from __future__ import annotations

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
