"""GET /api/v1/developer/plugins/{pluginId}/stats (CONTRACT 16): daily counts of installs,
uninstalls, downloads, crash reports, purchases and revenue, and all-time counts per
version, read from counters that must equal the events behind them."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from marketplace.commerce.payments import ChargeRequest, ChargeResult, ChargeStatus
from marketplace.commerce.purchases import confirm_purchase
from marketplace.delivery import counters
from marketplace.delivery.downloads import download_counts
from marketplace.models import PluginDailyStats, Purchase, ReviewStatus
from tests.delivery.signal_helpers import (
    API,
    Sessions,
    daily_rows,
    download,
    install,
    report,
    signal_rows,
    stats,
    uninstall,
    users,
    version_stat_rows,
)
from tests.factories import Account, Factory
from tests.helpers import err, field_names, ok

DAY_KEYS = {"date", "installs", "uninstalls", "downloads", "crashReports", "purchases", "revenue"}
VERSION_KEYS = {"version", "activeInstalls", "installs", "uninstalls", "crashReports"}


def today() -> date:
    return datetime.now(UTC).date()


def zero_day(day: date) -> dict[str, Any]:
    return {
        "date": day.isoformat(),
        "installs": 0,
        "uninstalls": 0,
        "downloads": 0,
        "crashReports": 0,
        "purchases": 0,
        "revenue": 0,
    }


async def buy(
    client: httpx.AsyncClient, user: Account, plugin_id: str, key: str | None = None
) -> httpx.Response:
    body = {"idempotencyKey": key} if key is not None else {}
    return await client.post(f"{API}/purchase/{plugin_id}", json=body, headers=user.headers)


def by_version(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["version"]: item for item in data["versions"]}


async def add_day(sessions: Sessions, plugin_id: str, day: date, **counts: Any) -> None:
    async with sessions() as session, session.begin():
        session.add(PluginDailyStats(plugin_id=plugin_id, day=day, **counts))


# ---------------------------------------------------------------- the shape


async def test_stats_default_to_30_days_ending_today(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    await factory.version(plugin)
    data = ok(await stats(client, owner, plugin.id))
    assert set(data) == {"days", "versions"}
    expected = [today() - timedelta(days=29 - n) for n in range(30)]
    assert data["days"] == [zero_day(day) for day in expected]
    assert data["versions"] == []


@pytest.mark.parametrize("days", [1, 7, 365])
async def test_stats_cover_the_days_asked_every_day_present_oldest_first(
    client: httpx.AsyncClient, factory: Factory, days: int
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    data = ok(await stats(client, owner, plugin.id, days))
    dates = [date.fromisoformat(day["date"]) for day in data["days"]]
    assert len(dates) == days
    assert dates[-1] == today()
    assert dates == [today() - timedelta(days=days - 1 - n) for n in range(days)]
    assert all(set(day) == DAY_KEYS for day in data["days"])


async def test_stats_dates_are_plain_utc_dates(client: httpx.AsyncClient, factory: Factory) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    data = ok(await stats(client, owner, plugin.id, 2))
    assert [day["date"] for day in data["days"]] == [
        (today() - timedelta(days=1)).strftime("%Y-%m-%d"),
        today().strftime("%Y-%m-%d"),
    ]


async def test_stats_place_counted_days_and_leave_out_older_ones(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    await add_day(sessionmaker, plugin.id, today() - timedelta(days=3), installs=4, downloads=9)
    await add_day(
        sessionmaker,
        plugin.id,
        today() - timedelta(days=29),
        purchases=2,
        revenue=Decimal("19.80"),
        crash_reports=1,
    )
    await add_day(sessionmaker, plugin.id, today() - timedelta(days=30), installs=100)
    await add_day(sessionmaker, plugin.id, today() + timedelta(days=1), installs=50)
    data = ok(await stats(client, owner, plugin.id))
    days = data["days"]
    assert len(days) == 30
    assert days[-1]["date"] == today().isoformat()
    assert days[-4] == {**zero_day(today() - timedelta(days=3)), "installs": 4, "downloads": 9}
    assert days[0] == {
        **zero_day(today() - timedelta(days=29)),
        "purchases": 2,
        "revenue": 19.8,
        "crashReports": 1,
    }
    assert sum(day["installs"] for day in days) == 4
    thirty_one = ok(await stats(client, owner, plugin.id, 31))["days"]
    assert thirty_one[0] == {**zero_day(today() - timedelta(days=30)), "installs": 100}


# ---------------------------------------------------------------- who may read them


async def test_stats_of_another_developers_plugin_are_403(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, other = await factory.developer(), await factory.developer()
    plugin = await factory.plugin(owner)
    err(await stats(client, other, plugin.id), 403, "PLUGIN_NOT_OWNED")
    err(await stats(client, other, plugin.plugin_key), 403, "PLUGIN_NOT_OWNED")
    err(await stats(client, await factory.admin(), plugin.id), 403, "PLUGIN_NOT_OWNED")


async def test_stats_of_a_plugin_named_by_its_key(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    assert len(ok(await stats(client, owner, plugin.plugin_key, 3))["days"]) == 3


async def test_stats_need_login(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin()
    response = await client.get(f"/api/v1/developer/plugins/{plugin.id}/stats")
    err(response, 401, "UNAUTHORIZED")


async def test_stats_need_the_developer_role(client: httpx.AsyncClient, factory: Factory) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    err(await stats(client, user, plugin.id), 403, "FORBIDDEN")


async def test_stats_of_an_unknown_plugin_are_404(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    err(await stats(client, owner, "no-such-plugin"), 404, "PLUGIN_NOT_FOUND")


async def test_stats_of_an_unlisted_own_plugin_are_shown(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer(verified=False)
    plugin = await factory.plugin(owner, review_status=ReviewStatus.PENDING)
    assert len(ok(await stats(client, owner, plugin.id))["days"]) == 30


@pytest.mark.parametrize("days", [0, -1, 366, "x", "", "1.5"])
async def test_stats_days_outside_1_to_365_are_400(
    client: httpx.AsyncClient, factory: Factory, days: Any
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    error = err(await stats(client, owner, plugin.id, days), 400, "VALIDATION_FAILED")
    assert "days" in field_names(error)


# ---------------------------------------------------------------- what they count


async def test_stats_count_today_s_signals_and_versions(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.1.0")
    a, b, c = await users(factory, 3)
    for person in (a, b, c):
        ok(await install(client, person, plugin.id, "1.0.0"), 201)
    ok(await install(client, a, plugin.id, "1.0.0"), 200)  # repeated: counted once
    ok(await install(client, a, plugin.id, "1.1.0"), 200)  # another version: counted
    ok(await uninstall(client, b, plugin.id, "1.0.0"), 201)
    ok(await uninstall(client, b, plugin.id, "1.0.0"), 200)
    ok(await report(client, c, plugin.id, "1.0.0", "crash"), 201)
    ok(await report(client, c, plugin.id, "1.0.0", "crash"), 200)
    ok(await report(client, a, plugin.id, "1.1.0", "crash"), 201)
    ok(await report(client, a, plugin.id, "1.1.0", "abuse"), 201)  # not a crash
    data = ok(await stats(client, owner, plugin.id, 7))
    assert data["days"][-1] == {
        **zero_day(today()),
        "installs": 4,
        "uninstalls": 1,
        "crashReports": 2,
    }
    assert data["days"][:-1] == [zero_day(today() - timedelta(days=6 - n)) for n in range(6)]
    assert all(set(item) == VERSION_KEYS for item in data["versions"])
    assert by_version(data) == {
        "1.0.0": {
            "version": "1.0.0",
            "activeInstalls": 2,
            "installs": 3,
            "uninstalls": 1,
            "crashReports": 1,
        },
        "1.1.0": {
            "version": "1.1.0",
            "activeInstalls": 1,
            "installs": 1,
            "uninstalls": 0,
            "crashReports": 1,
        },
    }


async def test_stats_count_only_their_own_plugin(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    mine = await factory.plugin(owner)
    other = await factory.plugin(owner)
    for plugin in (mine, other):
        await factory.version(plugin)
    user = await factory.user()
    ok(await install(client, user, other.id), 201)
    ok(await download(client, user, other.id), 200)
    ok(await report(client, user, other.id), 201)
    data = ok(await stats(client, owner, mine.id, 1))
    assert data == {"days": [zero_day(today())], "versions": []}


async def test_each_download_answer_counts(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.1.0")
    await factory.version(plugin, "2.0.0", review_status=ReviewStatus.PENDING)
    one, two = await users(factory, 2)
    for _ in range(3):
        ok(await download(client, one, plugin.id, "1.0.0"))  # the same user again: counts
    ok(await download(client, two, plugin.id, "latest"))
    ok(await download(client, two, plugin.plugin_key, "1.1.0"))
    ok(await download(client, owner, plugin.id, "1.0.0"))
    # Refusals are not answers with download information: not counted.
    err(await download(client, one, plugin.id, "9.9.9"), 404, "PLUGIN_VERSION_NOT_FOUND")
    err(await download(client, one, plugin.id, "2.0.0"), 403, "PLUGIN_VERSION_NOT_APPROVED")
    response = await client.get(f"{API}/download/{plugin.id}/1.0.0")
    err(response, 401, "UNAUTHORIZED")
    data = ok(await stats(client, owner, plugin.id, 1))
    assert data["days"] == [{**zero_day(today()), "downloads": 6}]
    assert data["versions"] == []  # downloads are not installs
    assert (await daily_rows(sessionmaker, plugin.id))[today()].downloads == 6


async def test_downloads_refused_for_want_of_a_purchase_are_not_counted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner, is_free=False)
    await factory.version(plugin)
    buyer, stranger = await users(factory, 2)
    ok(await buy(client, buyer, plugin.id), 201)
    err(await download(client, stranger, plugin.id), 402, "PLUGIN_NOT_PURCHASED")
    ok(await download(client, buyer, plugin.id))
    data = ok(await stats(client, owner, plugin.id, 1))
    assert data["days"][-1]["downloads"] == 1


async def test_more_concurrent_downloads_than_pooled_connections_all_answer_and_count(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    # The pool holds 15 connections on SQLite and 20 on PostgreSQL; each download answer
    # is counted in a transaction of its own, beside the request's.
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    await factory.version(plugin)
    people = await users(factory, 6)
    responses = await asyncio.gather(
        *(download(client, person, plugin.id) for person in people for _ in range(4))
    )
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: 24}, statuses
    assert ok(await stats(client, owner, plugin.id, 1))["days"][-1]["downloads"] == 24


async def test_purchases_count_with_their_revenue(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner, is_free=False, price="0.10", validity_days=30)
    a, b, c = await users(factory, 3)
    ok(await buy(client, a, plugin.id, key="a-1"), 201)
    ok(await buy(client, a, plugin.id, key="a-1"), 200)  # the same purchase: not counted
    ok(await buy(client, a, plugin.id, key="a-2"), 201)  # extends the subscription: counted
    ok(await buy(client, b, plugin.id), 201)
    await factory.update_plugin(plugin, price=Decimal("12.34"))
    ok(await buy(client, c, plugin.id), 201)
    err(await buy(client, owner, plugin.id), 409, "INVALID_STATE")
    day = ok(await stats(client, owner, plugin.id, 1))["days"][-1]
    # Money is exact: 0.10 three times is 0.30, never 0.30000000000000004.
    assert (day["purchases"], day["revenue"]) == (4, 12.64)


class PendingProvider:
    """A gateway that confirms later."""

    name = "test-gateway"

    async def charge(self, request: ChargeRequest) -> ChargeResult:
        return ChargeResult(ChargeStatus.PENDING, reference="gw-1")


class DecliningProvider:
    name = "declining"

    async def charge(self, request: ChargeRequest) -> ChargeResult:
        return ChargeResult(ChargeStatus.FAILED)


async def test_a_purchase_counts_when_it_is_paid(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner, is_free=False, price="5.00")
    buyer = await factory.user()
    app.state.payment_provider = PendingProvider()
    pending = ok(await buy(client, buyer, plugin.id), 201)
    assert pending["status"] == "pending"
    day = ok(await stats(client, owner, plugin.id, 1))["days"][-1]
    assert (day["purchases"], day["revenue"]) == (0, 0)
    for _ in range(2):  # a repeated confirmation changes nothing
        async with sessionmaker() as session, session.begin():
            await confirm_purchase(session, pending["id"], paid=True)
    day = ok(await stats(client, owner, plugin.id, 1))["days"][-1]
    assert (day["purchases"], day["revenue"]) == (1, 5.0)


async def test_a_declined_purchase_is_not_counted(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner, is_free=False)
    buyer = await factory.user()
    app.state.payment_provider = DecliningProvider()
    err(await buy(client, buyer, plugin.id), 402, "PLUGIN_NOT_PURCHASED")
    day = ok(await stats(client, owner, plugin.id, 1))["days"][-1]
    assert (day["purchases"], day["revenue"]) == (0, 0)


async def test_version_counts_are_all_time_and_count_distinct_users(
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: Sessions,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    await factory.version(plugin)
    a, b = await users(factory, 2)
    yesterday = today() - timedelta(days=1)
    with monkeypatch.context() as patched:
        patched.setattr(counters, "today", lambda: yesterday)
        ok(await install(client, a, plugin.id), 201)
        ok(await report(client, a, plugin.id, kind="crash"), 201)
        ok(await uninstall(client, a, plugin.id), 201)
        ok(await download(client, a, plugin.id))
    # A new day: the same user's signals are new signals, yet the same user.
    ok(await install(client, a, plugin.id), 200)
    ok(await report(client, a, plugin.id, kind="crash"), 201)
    ok(await uninstall(client, a, plugin.id), 201)
    ok(await install(client, b, plugin.id), 201)
    data = ok(await stats(client, owner, plugin.id, 3))
    assert data["days"] == [
        zero_day(today() - timedelta(days=2)),
        {
            **zero_day(yesterday),
            "installs": 1,
            "uninstalls": 1,
            "crashReports": 1,
            "downloads": 1,
        },
        {**zero_day(today()), "installs": 2, "uninstalls": 1, "crashReports": 1},
    ]
    assert data["versions"] == [
        {"version": "1.0.0", "activeInstalls": 1, "installs": 2, "uninstalls": 1, "crashReports": 2}
    ]
    row = (await version_stat_rows(sessionmaker, plugin.id))["1.0.0"]
    assert (row.crash_reports, row.crash_users) == (2, 1)


# ---------------------------------------------------------------- counters equal events


Call = Callable[[], Awaitable[httpx.Response]]
CONCURRENT_CALLS = 24


class Events:
    """A plan of calls with what each one should leave behind, run concurrently."""

    def __init__(self, client: httpx.AsyncClient, plugin_id: str) -> None:
        self.client = client
        self.plugin_id = plugin_id
        self.calls: list[tuple[Call, set[int]]] = []
        self.install_calls: list[tuple[Call, set[int]]] = []
        self.signals: set[tuple[str, str, str, date]] = set()
        self.downloads: Counter[date] = Counter()

    def install(self, user: Account, version: str, day: date, *, allowed: bool = True) -> None:
        self.install_calls.append(
            (
                lambda: install(self.client, user, self.plugin_id, version),
                {200, 201} if allowed else {402},
            )
        )
        if allowed:
            self.signals.add((user.id, version, "install", day))

    def uninstall(self, user: Account, version: str, day: date) -> None:
        self.calls.append(
            (lambda: uninstall(self.client, user, self.plugin_id, version), {200, 201})
        )
        self.signals.add((user.id, version, "uninstall", day))

    def report(self, user: Account, version: str, kind: str, day: date) -> None:
        self.calls.append(
            (lambda: report(self.client, user, self.plugin_id, version, kind), {200, 201})
        )
        self.signals.add((user.id, version, kind, day))

    def download(self, user: Account, version: str, day: date, *, allowed: bool = True) -> None:
        self.calls.append(
            (
                lambda: download(self.client, user, self.plugin_id, version),
                {200 if allowed else 402},
            )
        )
        if allowed:
            self.downloads[day] += 1

    async def run(self, rng: random.Random) -> None:
        """The day's installs, then its other calls, each in a random order and several at
        a time (so which user had installed a version before signalling is known)."""
        for phase in ("install_calls", "calls"):
            calls = getattr(self, phase)
            setattr(self, phase, [])
            rng.shuffle(calls)
            gate = asyncio.Semaphore(CONCURRENT_CALLS)

            async def gated(call: Call, gate: asyncio.Semaphore = gate) -> httpx.Response:
                async with gate:
                    return await call()

            responses = await asyncio.gather(*(gated(call) for call, _ in calls))
            for (_, expected), response in zip(calls, responses, strict=True):
                assert response.status_code in expected, response.text


def _plan_day(
    events: Events,
    rng: random.Random,
    people: list[Account],
    installers: list[Account],
    day: date,
) -> None:
    """Installs (repeats included) and downloads by `installers`, who bought the plugin;
    uninstalls and reports by anyone; refused downloads and installs by those who did not."""
    versions = ["1.0.0", "1.1.0", "2.0.0"]
    buyers = people[:8]
    for person in installers:
        for _ in range(rng.randint(1, 3)):  # repeats included
            events.install(person, rng.choice(versions), day)
        for _ in range(rng.randint(0, 3)):
            events.download(person, rng.choice([*versions, "latest"]), day)
    for person in people:
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 2)):
                events.uninstall(person, rng.choice(versions), day)
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 2)):
                events.report(person, rng.choice(versions), "crash", day)
        if rng.random() < 0.3:
            events.report(person, rng.choice(versions), "abuse", day)
        if person not in buyers and rng.random() < 0.3:
            events.download(person, "1.0.0", day, allowed=False)
        if person not in buyers and rng.random() < 0.3:
            events.install(person, "1.1.0", day, allowed=False)


async def test_counters_equal_the_events(
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: Sessions,
    monkeypatch: pytest.MonkeyPatch,
    app: FastAPI,
) -> None:
    rng = random.Random(16)  # noqa: S311 - reproducible test data, not a secret
    owner = await factory.developer()
    plugin = await factory.plugin(owner, is_free=False, price="3.30", validity_days=30)
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.1.0")
    await factory.version(plugin, "2.0.0")
    people = await users(factory, 12)
    buyers = people[:8]
    yesterday = today() - timedelta(days=1)
    # Purchases (today), some repeated with their key, one renewing a subscription.
    purchases = await asyncio.gather(
        *(buy(client, person, plugin.id, key=f"order-{n}") for n, person in enumerate(buyers)),
        buy(client, buyers[0], plugin.id, key="order-0"),
        buy(client, buyers[1], plugin.id, key="renewal"),
    )
    assert sorted(r.status_code for r in purchases) == [200] + [201] * 9

    events = Events(client, plugin.id)
    with monkeypatch.context() as patched:
        patched.setattr(counters, "today", lambda: yesterday)
        _plan_day(events, rng, people, buyers[:4], yesterday)
        await events.run(rng)
    _plan_day(events, rng, people, buyers, today())
    await events.run(rng)

    # The raw rows are the events planned, each once.
    signals = await signal_rows(sessionmaker, plugin.id)
    assert {(s.user_id, s.version, s.kind, s.day) for s in signals} == events.signals
    assert len(signals) == len(events.signals)
    async with sessionmaker() as session:
        paid = list(
            await session.scalars(
                select(Purchase).where(Purchase.plugin_id == plugin.id, Purchase.status == "paid")
            )
        )
    assert len(paid) == 9

    # Daily counters equal the raw rows (download answers are written within a second:
    # this process's pending ones now).
    await download_counts(app).flush()
    daily = await daily_rows(sessionmaker, plugin.id)
    assert set(daily) == {yesterday, today()}
    for day, row in daily.items():
        kinds = Counter(s.kind for s in signals if s.day == day)
        assert (row.installs, row.uninstalls, row.crash_reports, row.abuse_reports) == (
            kinds["install"],
            kinds["uninstall"],
            kinds["crash"],
            kinds["abuse"],
        ), day
        assert row.downloads == events.downloads[day], day
    assert (daily[yesterday].purchases, daily[yesterday].revenue) == (0, 0)
    assert daily[today()].purchases == len(paid)
    assert daily[today()].revenue == sum((p.price for p in paid), Decimal("0"))

    # Per-version counters equal the raw rows, all time.
    versions = await version_stat_rows(sessionmaker, plugin.id)
    assert set(versions) == {s.version for s in signals}
    for version, row in versions.items():
        mine = [s for s in signals if s.version == version]

        def users_of(kind: str, rows: list[Any] = mine) -> int:
            return len({s.user_id for s in rows if s.kind == kind})

        def installers_of(kind: str, rows: list[Any] = mine) -> int:
            """Users whose first signal of `kind` came when they had installed it (a day's
            installs run before its other calls)."""
            first: dict[str, date] = {}
            for s in rows:
                if s.kind == kind:
                    first[s.user_id] = min(first.get(s.user_id, s.day), s.day)
            installed = [(s.user_id, s.day) for s in rows if s.kind == "install"]
            return sum(
                any(user == u and day <= at for u, day in installed) for user, at in first.items()
            )

        assert (row.installs, row.uninstalls, row.crash_users) == (
            users_of("install"),
            installers_of("uninstall"),
            installers_of("crash"),
        ), version
        assert row.crash_reports == sum(1 for s in mine if s.kind == "crash"), version
        assert row.abuse_reports == sum(1 for s in mine if s.kind == "abuse"), version

    # And the statistics say the same.
    data = ok(await stats(client, owner, plugin.id, 2))
    for entry in data["days"]:
        row = daily[date.fromisoformat(entry["date"])]
        assert entry == {
            "date": row.day.isoformat(),
            "installs": row.installs,
            "uninstalls": row.uninstalls,
            "downloads": row.downloads,
            "crashReports": row.crash_reports,
            "purchases": row.purchases,
            "revenue": float(row.revenue),
        }
    assert by_version(data) == {
        version: {
            "version": version,
            "activeInstalls": row.installs - row.uninstalls,
            "installs": row.installs,
            "uninstalls": row.uninstalls,
            "crashReports": row.crash_reports,
        }
        for version, row in versions.items()
    }


async def test_active_installs_counts_only_the_installers_uninstalls(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """An uninstall needs no install first (CONTRACT 16); the day counts it, the version's
    distinct uninstalling users only among those who installed it, so activeInstalls
    (installs minus uninstalls) never goes below zero."""
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    await factory.version(plugin)
    a, b = await users(factory, 2)
    ok(await install(client, a, plugin.id), 201)
    ok(await uninstall(client, a, plugin.id), 201)
    ok(await uninstall(client, b, plugin.id), 201)
    data = ok(await stats(client, owner, plugin.id, 1))
    assert data["versions"] == [
        {
            "version": "1.0.0",
            "activeInstalls": 0,
            "installs": 1,
            "uninstalls": 1,
            "crashReports": 0,
        }
    ]
    assert data["days"][-1]["uninstalls"] == 2
