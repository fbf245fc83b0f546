"""CONTRACT 6: listed = approved and enabled, everywhere in the public group, through caches."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marketplace.models import ReviewStatus
from tests.factories import Factory
from tests.helpers import ok

API = "/api/v1/plugins"
POOL = 4

states = st.tuples(st.sampled_from(list(ReviewStatus)), st.booleans(), st.booleans())
steps = st.lists(st.tuples(st.integers(0, POOL - 1), states), min_size=1, max_size=8)
# Earlier examples' pools stay in the database, so each pool outranks the ones before it
# (popular sort): otherwise, past ten featured plugins, /featured may leave this pool out.
DOWNLOAD_RANKS = itertools.count(10**9)


async def all_ids(client: httpx.AsyncClient, params: dict[str, Any]) -> set[str]:
    """Every page's ids: past 100 listed plugins one page no longer holds this pool."""
    ids: set[str] = set()
    page = 1
    while True:
        body = ok(
            await client.get(f"{API}/browse", params={**params, "page": page, "pageSize": 100})
        )
        ids |= {item["id"] for item in body["items"]}
        if not body["items"] or page * 100 >= body["total"]:
            return ids
        page += 1


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=steps)
async def test_public_group_agrees_with_listing_rule_after_any_state_sequence(
    client: httpx.AsyncClient, factory: Factory, steps: list[tuple[int, tuple]]
) -> None:
    """Reads between the changes fill the caches; every read must still follow the rule."""
    rank = next(DOWNLOAD_RANKS)
    pool = [
        await factory.plugin(name="Pooled", category="ai", download_count=rank) for _ in range(POOL)
    ]
    state = {p.id: (ReviewStatus.APPROVED, True, False) for p in pool}
    for index, (status, enabled, featured) in steps:
        plugin = pool[index]
        await factory.update_plugin(
            plugin, review_status=status.value, enabled=enabled, featured=featured
        )
        state[plugin.id] = (status, enabled, featured)
        listed = {pid for pid, (s, e, _) in state.items() if s == ReviewStatus.APPROVED and e}

        assert await all_ids(client, {"category": "ai"}) & set(state) == listed
        assert await all_ids(client, {"q": "pooled"}) & set(state) == listed
        featured_ids = {item["id"] for item in ok(await client.get(f"{API}/featured"))["items"]}
        assert featured_ids & set(state) == {pid for pid in listed if state[pid][2]}
        for pid in state:
            response = await client.get(f"{API}/detail/{pid}")
            assert response.status_code == (200 if pid in listed else 404)

    # Earlier examples' pools are still in the database: compare totals with the rule too.
    all_browsed = ok(await client.get(f"{API}/browse", params={"category": "ai"}))
    counts = {c["key"]: c["count"] for c in ok(await client.get(f"{API}/categories"))["items"]}
    assert counts["ai"] == all_browsed["total"]
