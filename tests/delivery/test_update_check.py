"""The update check (CONTRACT 16): offers, sticky buckets, halts, revocations, prereleases,
a fixed number of queries, and a simulation of 10,000 installs."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from marketplace.catalog.cache import catalog_cache
from marketplace.delivery import updates
from marketplace.delivery.offers import Reason, bucket
from marketplace.models import Channel, Plugin, PluginVersion
from tests.factories import Factory
from tests.helpers import err, ok, recording_statements

UPDATES = "/api/v1/plugins/updates"
INSTALL_ID = "install-0001"


def contract_bucket(install_id: str, key: str, version: str) -> int:
    """The contract's formula, written out here independently of the service's."""
    return int(hashlib.sha256(f"{install_id}:{key}:{version}".encode()).hexdigest()[:8], 16) % 10000


async def check(
    client: httpx.AsyncClient,
    items: list[tuple[str, str]],
    *,
    install_id: str = INSTALL_ID,
    channel: str | None = None,
) -> list[dict[str, Any]]:
    body: dict[str, Any] = {
        "installId": install_id,
        "items": [{"pluginKey": key, "version": version} for key, version in items],
    }
    if channel is not None:
        body["channel"] = channel
    return list(ok(await client.post(UPDATES, json=body))["items"])


def offered(answer: dict[str, Any]) -> tuple[str | None, str]:
    return answer["offered"], answer["reason"]


async def rolling_plugin(
    factory: Factory, percent: int, plugin_key: str | None = None
) -> tuple[Plugin, PluginVersion]:
    """1.0.0 full, 1.1.0 approved and current but rolling at `percent`."""
    plugin = await factory.plugin(plugin_key=plugin_key)
    await factory.version(plugin, "1.0.0")
    rolling = await factory.version(
        plugin, "1.1.0", rollout_percent=percent, rollout_state="rolling"
    )
    return plugin, rolling


def install_ids(count: int) -> Iterator[str]:
    return (f"sim-{n:06d}-{'x' * 4}" for n in range(count))


async def test_an_install_behind_the_current_full_version_is_offered_it(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.2.0")
    answers = await check(client, [(plugin.plugin_key, "1.0.0"), (plugin.plugin_key, "1.2.0")])
    assert answers[0] == {
        "pluginKey": plugin.plugin_key,
        "current": "1.0.0",
        "offered": "1.2.0",
        "reason": "update",
    }
    assert offered(answers[1]) == (None, "up_to_date")


async def test_unknown_unlisted_and_taken_down_plugins_are_not_listed(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    hidden = await factory.plugin(review_status="pending")
    disabled = await factory.plugin(enabled=False)
    await factory.version(disabled, "1.0.0")
    answers = await check(
        client,
        [("no-such-plugin", "1.0.0"), (hidden.plugin_key, "1.0.0"), (disabled.plugin_key, "0.1.0")],
    )
    assert [offered(a) for a in answers] == [(None, "not_listed")] * 3


async def test_a_rolling_version_is_offered_to_the_installs_its_percent_selects(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin, _ = await rolling_plugin(factory, 30)
    for install_id in install_ids(60):
        selected = contract_bucket(install_id, plugin.plugin_key, "1.1.0") < 3000
        older = (await check(client, [(plugin.plugin_key, "0.9.0")], install_id=install_id))[0]
        on_full = (await check(client, [(plugin.plugin_key, "1.0.0")], install_id=install_id))[0]
        if selected:
            assert offered(older) == ("1.1.0", "update")
            assert offered(on_full) == ("1.1.0", "update")
        else:
            # Not selected: the newest full version below it, when newer than theirs.
            assert offered(older) == ("1.0.0", "update")
            assert offered(on_full) == (None, "rolling_not_selected")


async def test_growing_a_rollout_only_adds_installs(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin, rolling = await rolling_plugin(factory, 10)
    ids = list(install_ids(200))

    async def chosen() -> set[str]:
        picked = set()
        for install_id in ids:
            answer = (await check(client, [(plugin.plugin_key, "1.0.0")], install_id=install_id))[0]
            if answer["offered"] == "1.1.0":
                picked.add(install_id)
        return picked

    at_10 = await chosen()
    assert at_10 == await chosen()  # the same answer on every check
    async with factory.sessions() as session:
        await session.execute(
            update(PluginVersion).where(PluginVersion.id == rolling.id).values(rollout_percent=50)
        )
        await session.commit()
    at_50 = await chosen()
    assert at_10 < at_50
    expected = {i for i in ids if contract_bucket(i, plugin.plugin_key, "1.1.0") < 5000}
    assert at_50 == expected


async def test_a_halted_version_is_offered_to_nobody_and_its_installs_roll_back(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.1.0", is_latest=False)
    await factory.version(
        plugin,
        "1.2.0",
        rollout_percent=99,
        rollout_state="halted",
        rollout_halted_reason="crashes",
    )
    for install_id in install_ids(20):
        answers = await check(
            client,
            [
                (plugin.plugin_key, "1.2.0"),
                (plugin.plugin_key, "1.0.0"),
                (plugin.plugin_key, "1.1.0"),
            ],
            install_id=install_id,
        )
        assert offered(answers[0]) == ("1.1.0", "halted_rollback")
        assert offered(answers[1]) == ("1.1.0", "update")  # an older version newer than theirs
        assert offered(answers[2]) == (None, "up_to_date")


async def test_an_install_on_a_taken_down_version_is_offered_the_current_one(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.1.0", is_latest=False, review_status="taken_down")
    answers = await check(client, [(plugin.plugin_key, "1.1.0")])
    assert offered(answers[0]) == ("1.0.0", "revoked")


async def test_the_prerelease_channel_is_offered_only_when_newer_than_both(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "2.0.0-beta.1", is_latest=False, channel="prerelease")
    items = [(plugin.plugin_key, "1.0.0")]
    assert offered((await check(client, items))[0]) == (None, "up_to_date")
    assert offered((await check(client, items, channel="stable"))[0]) == (None, "up_to_date")
    answer = (await check(client, items, channel="prerelease"))[0]
    assert offered(answer) == ("2.0.0-beta.1", "update")
    await factory.version(plugin, "2.0.0")  # the release outranks its prerelease
    answer = (await check(client, items, channel="prerelease"))[0]
    assert offered(answer) == ("2.0.0", "update")


async def test_a_version_approved_or_halted_changes_the_answer_at_once(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """The per-plugin answers are cached per listing generation: every change moves it."""
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    items = [(plugin.plugin_key, "1.0.0")]
    assert offered((await check(client, items))[0]) == (None, "up_to_date")
    newer = await factory.version(plugin, "1.1.0")
    assert offered((await check(client, items))[0]) == ("1.1.0", "update")
    async with factory.sessions() as session:
        await session.execute(
            update(PluginVersion)
            .where(PluginVersion.id == newer.id)
            .values(rollout_state="halted", rollout_percent=50)
        )
        await session.commit()
    assert offered((await check(client, items))[0]) == (None, "up_to_date")


@pytest.fixture
def statements(app: FastAPI) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    with recording_statements(app, record):
        yield seen


async def test_a_check_of_many_plugins_costs_a_fixed_number_of_queries(
    client: httpx.AsyncClient, factory: Factory, statements: list[str]
) -> None:
    plugins = [await factory.plugin() for _ in range(30)]
    for plugin in plugins:
        await factory.version(plugin, "1.0.0")
        await factory.version(plugin, "1.1.0", rollout_percent=20, rollout_state="rolling")
    items = [(p.plugin_key, "1.0.0") for p in plugins]
    statements.clear()
    first = await check(client, items[:3])
    cold_small = [s for s in statements if "plugin_versions" in s]
    statements.clear()
    await check(client, items)
    cold_large = [s for s in statements if "plugin_versions" in s]
    assert len(cold_small) == len(cold_large) == 1  # one query, whatever the number
    statements.clear()
    again = await check(client, items[:3])
    assert [s for s in statements if "plugin_versions" in s] == []  # warm: none
    assert again == first


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"installId": "short", "items": []}, "installId"),
        ({"installId": "x" * 129, "items": []}, "installId"),
        ({"installId": INSTALL_ID}, "items"),
        ({"installId": INSTALL_ID, "items": [{"pluginKey": "a"}]}, "items"),
        ({"installId": INSTALL_ID, "items": [], "channel": "beta"}, "channel"),
        (
            {"installId": INSTALL_ID, "items": [{"pluginKey": "a", "version": "1"}] * 501},
            "items",
        ),
        ({"installId": INSTALL_ID, "items": [], "extra": 1}, "extra"),
        ({"installId": INSTALL_ID, "items": [{"pluginKey": "a", "version": "1", "x": 1}]}, "x"),
        ({"installId": INSTALL_ID, "items": [{"pluginKey": 5, "version": "1"}]}, "pluginKey"),
        ({"installId": INSTALL_ID, "items": [{"pluginKey": "a", "version": ""}]}, "version"),
        ({"installId": INSTALL_ID, "items": [{"pluginKey": "a" * 65, "version": "1"}]}, "items"),
    ],
)
async def test_a_bad_update_check_is_refused(
    client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    error = err(await client.post(UPDATES, json=body), 400, "VALIDATION_FAILED")
    assert field in str(error["details"])


async def test_an_empty_check_answers_no_items(client: httpx.AsyncClient) -> None:
    assert await check(client, []) == []


async def test_simulation_of_ten_thousand_installs_and_a_ten_percent_rollout(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    """10,000 installs on 1.0.0, 1.1.0 rolling at 10 %: 1,000 ± 60 are offered it (issue 28),
    each gets the same answer on every check; after a halt nobody is offered it and the
    installs on it roll back.

    The key and the install ids are fixed, so the count is the same on every run (1,034):
    with the factory's random keys, ±60 is two of the binomial's deviations and failed one
    run in twenty (it did, in CI, with 924). The test below checks the spread over keys."""
    plugin, rolling = await rolling_plugin(factory, 10, plugin_key="sim-rollout-plugin")
    key = plugin.plugin_key
    ids = list(install_ids(10_000))
    cache = catalog_cache(app)

    async def offers(version: str) -> dict[str, tuple[str | None, str]]:
        async with app.state.sessionmaker() as session:
            found = {}
            for install_id in ids:
                (answer,) = await updates.check(
                    session, cache, install_id, Channel.STABLE, [(key, version)]
                )
                found[install_id] = (answer.offered, answer.reason.value)
            return found

    first = await offers("1.0.0")
    chosen = {i for i, (version, _) in first.items() if version == "1.1.0"}
    assert 940 <= len(chosen) <= 1060
    assert all(first[i] == (None, Reason.ROLLING_NOT_SELECTED) for i in set(ids) - chosen)
    assert await offers("1.0.0") == first  # every install, the same answer
    # The service agrees with the contract's formula, and the HTTP route with the function.
    assert chosen == {i for i in ids if contract_bucket(i, key, "1.1.0") < 1000}
    for install_id in ids[:50]:
        answer = (await check(client, [(key, "1.0.0")], install_id=install_id))[0]
        assert offered(answer) == first[install_id]

    async with factory.sessions() as session:
        await session.execute(
            update(PluginVersion)
            .where(PluginVersion.id == rolling.id)
            .values(rollout_state="halted", rollout_halted_reason="simulated")
        )
        await session.commit()
    after = await offers("1.0.0")
    assert all(version is None for version, _ in after.values())
    on_halted = await offers("1.1.0")
    assert set(on_halted.values()) == {("1.0.0", Reason.HALTED_ROLLBACK)}


def test_the_ten_percent_bucket_spreads_like_a_binomial_over_plugin_keys() -> None:
    """The simulation above fixes one key; over 200 keys the service's buckets must spread
    as a fair 10 % draw would: a mean near 1,000 and about 95 % of keys within ±60 (two
    deviations). A bucket function biased by the key or the version fails this."""
    ids = list(install_ids(10_000))
    counts = [
        sum(1 for install_id in ids if bucket(install_id, f"spread-key-{n:03d}", "1.1.0") < 1000)
        for n in range(200)
    ]
    assert 985 <= sum(counts) / len(counts) <= 1015  # the mean's deviation is about 2.1
    within = sum(1 for count in counts if 940 <= count <= 1060)
    assert within >= 180  # 95 % expected; 90 % is about four deviations below


async def test_an_install_on_a_taken_down_version_is_never_offered_a_halted_current_one(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """A halted version is offered to nobody, even when it is current: an install on a
    taken-down version is then offered what any install would be offered."""
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    await factory.version(
        plugin, "1.1.0", rollout_percent=10, rollout_state="halted", rollout_halted_reason="x"
    )
    await factory.version(plugin, "1.2.0", is_latest=False, review_status="taken_down")
    answer = (await check(client, [(plugin.plugin_key, "1.2.0")]))[0]
    assert offered(answer) == ("1.0.0", "revoked")


async def test_a_read_scoped_publishing_token_may_check_for_updates(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    from tests.accounts.tokens import issue

    dev = await factory.developer()
    plugin = await factory.plugin(dev)
    await factory.version(plugin, "1.0.0")
    body = {
        "installId": INSTALL_ID,
        "items": [{"pluginKey": plugin.plugin_key, "version": "0.1.0"}],
    }
    for scopes in (["read"], ["publish", "read"]):
        pat = await issue(client, dev, scopes=scopes)
        headers = {"Authorization": f"Bearer {pat.token}"}
        answer = ok(await client.post(UPDATES, json=body, headers=headers))["items"][0]
        assert offered(answer) == ("1.0.0", "update")
    publish_only = await issue(client, dev, scopes=["publish"])
    headers = {"Authorization": f"Bearer {publish_only.token}"}
    err(await client.post(UPDATES, json=body, headers=headers), 403, "FORBIDDEN")


async def test_the_update_check_does_not_wait_for_the_write_lock(
    client: httpx.AsyncClient, factory: Factory, database_url: str
) -> None:
    """It only reads: on SQLite it must not queue for the one write lock (held here by
    another connection, as a long upload's commit or a migration would)."""
    if not database_url.startswith("sqlite"):
        pytest.skip("SQLite's single write lock")
    import sqlite3

    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    path = database_url.split("///", 1)[1]
    holder = sqlite3.connect(path, isolation_level=None, timeout=1)
    holder.execute("BEGIN IMMEDIATE")
    try:
        answer = (await check(client, [(plugin.plugin_key, "0.1.0")]))[0]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert offered(answer) == ("1.0.0", "update")
