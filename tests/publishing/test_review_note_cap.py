"""The automatic rejection note stays within a reviewer's note cap, however many findings.

A 1,256-byte package whose manifest held 500,000 bad config items once answered with a
17 MB reviewNote and left a 17.9 MB audit record behind.
"""

from __future__ import annotations

import httpx
import pytest

from marketplace.publishing.review import auto_rejection_note
from marketplace.publishing.schemas import NOTE_MAX_CHARS
from tests.factories import Factory
from tests.helpers import ok
from tests.plugins.helpers import create_version, publish

pytestmark = pytest.mark.fault


def test_a_short_list_is_listed_whole() -> None:
    note = auto_rejection_note(["main names index.js, which is not in the package", "two"])
    assert note == (
        "Automatic validation failed:\n- main names index.js, which is not in the package\n- two"
    )


def test_a_long_list_is_cut_with_a_count_of_the_rest() -> None:
    findings = [f"config[{i}] must be an object" for i in range(100_000)]
    note = auto_rejection_note(findings)
    assert len(note) <= NOTE_MAX_CHARS
    listed = note.count("\n- config[")
    assert listed > 50
    assert note.endswith(
        f"\n- ... and {100_000 - listed} more (every finding is listed with the version)"
    )


def test_a_very_long_finding_is_shortened() -> None:
    note = auto_rejection_note(["x" * 10_000])
    assert len(note) < 400
    assert note.endswith("…")


async def test_many_bad_config_items_give_a_capped_note_and_audit_record(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    developer, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, developer)
    version = await create_version(client, developer, plugin, "1.0.0", config=[1] * 50_000)
    assert version["reviewStatus"] == "rejected"
    assert len(version["reviewNote"]) <= NOTE_MAX_CHARS
    assert "more (every finding is listed with the version)" in version["reviewNote"]
    audit = ok(
        await client.get(
            "/api/v1/admin/audit-logs",
            params={"resourceId": version["id"]},
            headers=admin.headers,
        )
    )
    [record] = audit["items"]
    assert record["action"] == "REVIEW_REJECT"
    assert record["detail"]["note"] == version["reviewNote"]
