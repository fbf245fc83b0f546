"""Signals (CONTRACT 16): POST /api/v1/plugins/uninstall/{pluginId} and
POST /api/v1/plugins/report/{pluginId}; one per user, plugin, version and kind a day; and
the automatic halt of a rolling version its users turn away from."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from marketplace.models import AuditLog, PluginSignal, ReviewStatus
from tests.delivery.signal_helpers import (
    API,
    Sessions,
    daily_rows,
    halt_records,
    install,
    report,
    rolling_version,
    rollout_of,
    set_halt_settings,
    signal_rows,
    uninstall,
    users,
    version_row,
    version_stat_rows,
)
from tests.factories import Account, Factory
from tests.helpers import err, field_names, ok


def today() -> Any:
    return datetime.now(UTC).date()


async def _signal(
    client: httpx.AsyncClient, kind: str, user: Account, plugin_id: str, version: str = "1.0.0"
) -> httpx.Response:
    if kind == "uninstall":
        return await uninstall(client, user, plugin_id, version)
    return await report(client, user, plugin_id, version, kind)


async def _nothing_written(sessionmaker: Sessions, plugin_id: str) -> None:
    assert await signal_rows(sessionmaker, plugin_id) == []
    assert await daily_rows(sessionmaker, plugin_id) == {}
    assert await version_stat_rows(sessionmaker, plugin_id) == {}


async def _audit_count(sessionmaker: Sessions, version_id: str, action: str) -> int:
    async with sessionmaker() as session:
        count = await session.scalar(
            select(func.count())
            .select_from(AuditLog)
            .where(AuditLog.resource_id == version_id, AuditLog.action == action)
        )
    return int(count or 0)


async def _signals_of(sessions: Sessions, plugin_id: str, kind: str) -> list[Any]:
    return [row for row in await signal_rows(sessions, plugin_id) if row.kind == kind]


# ---------------------------------------------------------------- one a day


async def test_first_uninstall_is_201_and_recorded(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    ok(await install(client, user, plugin.id), 201)
    data = ok(await uninstall(client, user, plugin.id), 201)
    assert set(data) == {"id", "pluginId", "version", "kind", "day"}
    assert (data["pluginId"], data["version"], data["kind"]) == (plugin.id, "1.0.0", "uninstall")
    assert data["day"] == today().isoformat()
    [row] = await _signals_of(sessionmaker, plugin.id, "uninstall")
    assert (row.id, row.user_id, row.kind, row.day) == (data["id"], user.id, "uninstall", today())
    assert (await daily_rows(sessionmaker, plugin.id))[today()].uninstalls == 1
    assert (await version_stat_rows(sessionmaker, plugin.id))["1.0.0"].uninstalls == 1


async def test_first_crash_report_is_201_and_keeps_its_message(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    ok(await install(client, user, plugin.id), 201)
    data = ok(await report(client, user, plugin.id, message="崩溃 on start"), 201)
    assert data["kind"] == "crash"
    [row] = await _signals_of(sessionmaker, plugin.id, "crash")
    assert (row.kind, row.message) == ("crash", "崩溃 on start")
    daily = (await daily_rows(sessionmaker, plugin.id))[today()]
    assert (daily.crash_reports, daily.abuse_reports) == (1, 0)
    version = (await version_stat_rows(sessionmaker, plugin.id))["1.0.0"]
    assert (version.crash_reports, version.crash_users, version.abuse_reports) == (1, 1, 0)


@pytest.mark.parametrize("kind", ["uninstall", "crash", "abuse"])
async def test_repeat_signal_the_same_day_is_200_and_counts_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions, kind: str
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    ok(await install(client, user, plugin.id), 201)
    first = ok(await _signal(client, kind, user, plugin.id), 201)
    for _ in range(2):
        again = ok(await _signal(client, kind, user, plugin.id), 200)
        assert again == first
    assert len(await _signals_of(sessionmaker, plugin.id, kind)) == 1
    daily = (await daily_rows(sessionmaker, plugin.id))[today()]
    counted = {"uninstall": daily.uninstalls, "crash": daily.crash_reports}
    counted["abuse"] = daily.abuse_reports
    assert counted[kind] == 1
    version = (await version_stat_rows(sessionmaker, plugin.id))["1.0.0"]
    by_version = {
        "uninstall": version.uninstalls,
        "crash": version.crash_reports,
        "abuse": version.abuse_reports,
    }
    assert by_version[kind] == 1


async def test_concurrent_repeats_of_one_signal_count_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    ok(await install(client, user, plugin.id), 201)
    responses = await asyncio.gather(*(report(client, user, plugin.id) for _ in range(8)))
    assert sorted(r.status_code for r in responses) == [200] * 7 + [201]
    assert len({r.json()["data"]["id"] for r in responses}) == 1
    assert len(await _signals_of(sessionmaker, plugin.id, "crash")) == 1
    assert (await daily_rows(sessionmaker, plugin.id))[today()].crash_reports == 1
    version = (await version_stat_rows(sessionmaker, plugin.id))["1.0.0"]
    assert (version.crash_reports, version.crash_users) == (1, 1)


async def test_each_kind_and_version_counts_separately(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.1.0")
    for version in ("1.0.0", "1.1.0"):
        ok(await install(client, user, plugin.id, version), 201 if version == "1.0.0" else 200)
        ok(await report(client, user, plugin.id, version, "crash"), 201)
        ok(await report(client, user, plugin.id, version, "abuse"), 201)
        ok(await uninstall(client, user, plugin.id, version), 201)
    rows = await signal_rows(sessionmaker, plugin.id)
    assert sorted((r.version, r.kind) for r in rows) == [
        ("1.0.0", "abuse"),
        ("1.0.0", "crash"),
        ("1.0.0", "install"),
        ("1.0.0", "uninstall"),
        ("1.1.0", "abuse"),
        ("1.1.0", "crash"),
        ("1.1.0", "install"),
        ("1.1.0", "uninstall"),
    ]
    daily = (await daily_rows(sessionmaker, plugin.id))[today()]
    assert (daily.uninstalls, daily.crash_reports, daily.abuse_reports) == (2, 2, 2)
    assert daily.installs == 2
    versions = await version_stat_rows(sessionmaker, plugin.id)
    for version in ("1.0.0", "1.1.0"):
        row = versions[version]
        assert (row.uninstalls, row.crash_reports, row.crash_users, row.abuse_reports) == (
            1,
            1,
            1,
            1,
        )
        assert row.installs == 1


async def test_other_users_signals_count_separately(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    one, two = await users(factory, 2)
    plugin = await factory.plugin()
    await factory.version(plugin)
    for user in (one, two):
        ok(await install(client, user, plugin.id), 201)
    ok(await uninstall(client, one, plugin.id), 201)
    ok(await uninstall(client, two, plugin.id), 201)
    assert (await daily_rows(sessionmaker, plugin.id))[today()].uninstalls == 2
    assert (await version_stat_rows(sessionmaker, plugin.id))["1.0.0"].uninstalls == 2


async def test_only_installers_uninstalls_and_crashes_count_against_the_version(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    """Accounts that never reported installing a version are counted in the day's totals,
    never in the version's distinct users, which the automatic halt judges: they cannot
    halt a rollout."""
    installer, stranger = await users(factory, 2)
    plugin = await factory.plugin()
    await factory.version(plugin)
    ok(await install(client, installer, plugin.id), 201)
    for user in (installer, stranger):
        ok(await uninstall(client, user, plugin.id), 201)
        ok(await report(client, user, plugin.id, kind="crash"), 201)
    daily = (await daily_rows(sessionmaker, plugin.id))[today()]
    assert (daily.installs, daily.uninstalls, daily.crash_reports) == (1, 2, 2)
    row = (await version_stat_rows(sessionmaker, plugin.id))["1.0.0"]
    assert (row.installs, row.uninstalls, row.crash_reports, row.crash_users) == (1, 1, 2, 1)


async def test_signals_need_no_install_first(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)  # never bought, never installed
    await factory.version(plugin)
    ok(await uninstall(client, user, plugin.id), 201)
    ok(await report(client, user, plugin.id, kind="abuse"), 201)
    assert len(await signal_rows(sessionmaker, plugin.id)) == 2


async def test_a_signal_names_the_plugin_by_its_key(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    data = ok(await report(client, user, plugin.plugin_key, kind="abuse"), 201)
    assert data["pluginId"] == plugin.id
    [row] = await signal_rows(sessionmaker, plugin.id)
    assert row.kind == "abuse"


async def test_an_unlisted_plugin_still_takes_signals(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(enabled=False)
    await factory.version(plugin)
    ok(await uninstall(client, user, plugin.id), 201)
    assert len(await signal_rows(sessionmaker, plugin.id)) == 1


async def test_a_taken_down_version_still_takes_signals(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    # It was distributed: its users still uninstall it and report it.
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0", review_status=ReviewStatus.TAKEN_DOWN)
    ok(await uninstall(client, user, plugin.id), 201)
    assert len(await signal_rows(sessionmaker, plugin.id)) == 1


async def test_database_refuses_a_second_signal_of_the_same_day(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    ok(await report(client, user, plugin.id), 201)
    with pytest.raises(IntegrityError):
        async with sessionmaker() as session, session.begin():
            session.add(
                PluginSignal(
                    user_id=user.id,
                    plugin_id=plugin.id,
                    version="1.0.0",
                    kind="crash",
                    day=today(),
                )
            )
    assert len(await signal_rows(sessionmaker, plugin.id)) == 1


async def test_database_refuses_an_unknown_signal_kind(
    factory: Factory, sessionmaker: Sessions
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    with pytest.raises(IntegrityError):
        async with sessionmaker() as session, session.begin():
            session.add(
                PluginSignal(
                    user_id=user.id, plugin_id=plugin.id, version="1.0.0", kind="hang", day=today()
                )
            )
    assert await signal_rows(sessionmaker, plugin.id) == []


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("kind", ["uninstall", "crash"])
async def test_signal_needs_login(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions, kind: str
) -> None:
    plugin = await factory.plugin()
    await factory.version(plugin)
    path = "uninstall" if kind == "uninstall" else "report"
    body = {"version": "1.0.0", "kind": kind} if kind != "uninstall" else {"version": "1.0.0"}
    err(await client.post(f"{API}/{path}/{plugin.id}", json=body), 401, "UNAUTHORIZED")
    bad = {"Authorization": "Bearer not-a-token"}
    err(await client.post(f"{API}/{path}/{plugin.id}", json=body, headers=bad), 401, "UNAUTHORIZED")
    await _nothing_written(sessionmaker, plugin.id)


async def test_signal_checks_the_token_before_the_plugin(client: httpx.AsyncClient) -> None:
    response = await client.post(f"{API}/uninstall/no-such-plugin", json={"version": "1.0.0"})
    err(response, 401, "UNAUTHORIZED")


@pytest.mark.parametrize("kind", ["uninstall", "crash", "abuse"])
async def test_signal_about_unknown_plugin_is_404(
    client: httpx.AsyncClient, factory: Factory, kind: str
) -> None:
    user = await factory.user()
    err(await _signal(client, kind, user, "no-such-plugin"), 404, "PLUGIN_NOT_FOUND")
    err(
        await _signal(client, kind, user, "00000000-0000-0000-0000-000000000000"),
        404,
        "PLUGIN_NOT_FOUND",
    )


async def test_unknown_plugin_is_404_before_the_body_is_checked(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    response = await client.post(
        f"{API}/report/no-such-plugin", json={"kind": "hang"}, headers=user.headers
    )
    err(response, 404, "PLUGIN_NOT_FOUND")


@pytest.mark.parametrize("kind", ["uninstall", "crash", "abuse"])
async def test_signal_about_unknown_version_is_404(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions, kind: str
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    response = await _signal(client, kind, user, plugin.id, "9.9.9")
    err(response, 404, "PLUGIN_VERSION_NOT_FOUND")
    await _nothing_written(sessionmaker, plugin.id)


@pytest.mark.parametrize("status", [ReviewStatus.PENDING, ReviewStatus.REJECTED])
@pytest.mark.parametrize("kind", ["uninstall", "crash", "abuse"])
async def test_signal_about_a_version_never_distributed_is_403(
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: Sessions,
    status: ReviewStatus,
    kind: str,
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    await factory.version(plugin, "1.1.0", review_status=status)
    response = await _signal(client, kind, user, plugin.id, "1.1.0")
    err(response, 403, "PLUGIN_VERSION_NOT_APPROVED")
    await _nothing_written(sessionmaker, plugin.id)


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("report", {"version": "1.0.0", "kind": "hang"}, "kind"),
        ("report", {"version": "1.0.0", "kind": "uninstall"}, "kind"),
        ("report", {"version": "1.0.0", "kind": "CRASH"}, "kind"),
        ("report", {"version": "1.0.0"}, "kind"),
        ("report", {"kind": "crash"}, "version"),
        ("report", {"version": "", "kind": "crash"}, "version"),
        ("report", {"version": "1.0.0", "kind": "crash", "message": "x" * 2001}, "message"),
        ("report", {"version": "1.0.0", "kind": "crash", "message": 5}, "message"),
        ("report", {"version": "1.0.0", "kind": "crash", "extra": 1}, "extra"),
        ("uninstall", {}, "version"),
        ("uninstall", {"version": None}, "version"),
        ("uninstall", {"version": 1}, "version"),
        ("uninstall", {"version": "1" * 101}, "version"),
        ("uninstall", {"version": "1.0.0", "kind": "crash"}, "kind"),
    ],
)
async def test_invalid_signal_body_is_400_and_writes_nothing(
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: Sessions,
    path: str,
    body: dict[str, Any],
    field: str,
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    response = await client.post(f"{API}/{path}/{plugin.id}", json=body, headers=user.headers)
    error = err(response, 400, "VALIDATION_FAILED")
    assert field in field_names(error)
    await _nothing_written(sessionmaker, plugin.id)


async def test_signal_body_that_is_not_json_is_400(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    response = await client.post(
        f"{API}/uninstall/{plugin.id}",
        content=b"not json",
        headers={**user.headers, "Content-Type": "application/json"},
    )
    err(response, 400, "VALIDATION_FAILED")
    await _nothing_written(sessionmaker, plugin.id)


async def test_report_message_of_2000_characters_is_accepted(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    ok(await report(client, user, plugin.id, message="x" * 2000), 201)
    [row] = await signal_rows(sessionmaker, plugin.id)
    assert row.message == "x" * 2000


# ---------------------------------------------------------------- the automatic halt


async def _installed_by(
    client: httpx.AsyncClient, factory: Factory, plugin_id: str, count: int
) -> list[Account]:
    people = await users(factory, count)
    for person in people:
        ok(await install(client, person, plugin_id, "1.1.0"), 201)
    return people


@pytest.mark.parametrize("kind", ["uninstall", "crash"])
async def test_rolling_version_halts_itself_past_20_percent(
    client: httpx.AsyncClient,
    factory: Factory,
    sessionmaker: Sessions,
    kind: str,
) -> None:
    admin = await factory.admin()
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 20)
    for person in people[:4]:  # 20 %: not more than 20 %
        ok(await _signal(client, kind, person, plugin.id, "1.1.0"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"
    assert await halt_records(client, admin, version.id) == []
    ok(await _signal(client, kind, people[4], plugin.id, "1.1.0"), 201)  # 25 %
    row = await version_row(sessionmaker, version.id)
    assert row.rollout_state == "halted"
    assert row.rollout_percent == 10
    assert row.rollout_halted_reason is not None
    assert row.rollout_halted_reason.startswith("automatic:")
    rollout = await rollout_of(client, admin, plugin.id, "1.1.0")
    assert rollout["state"] == "halted"
    assert rollout["percent"] == 10
    assert rollout["haltedReason"].startswith("automatic:")
    [record] = await halt_records(client, admin, version.id)
    assert record["action"] == "ROLLOUT_HALT"
    assert record["actorId"] is None
    assert record["detail"]["trigger"] == "automatic"
    assert record["detail"]["resourceType"] == "plugin_version"
    assert record["detail"]["resourceId"] == version.id
    # Approval still made it current (seed 9.5): the halt only changes who is offered it.
    assert row.is_latest is True


async def test_exactly_20_percent_does_not_halt(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    admin = await factory.admin()
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 20)
    for person in people[:4]:
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
        ok(await report(client, person, plugin.id, "1.1.0", "crash"), 201)
    row = await version_row(sessionmaker, version.id)
    assert (row.rollout_state, row.rollout_halted_reason) == ("rolling", None)
    assert await halt_records(client, admin, version.id) == []


async def test_uninstalls_and_crashes_are_judged_apart(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    # 4 users uninstalled and 4 others reported a crash: 40 % turned away, yet neither
    # share is over 20 %.
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 20)
    for person in people[:4]:
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
    for person in people[4:8]:
        ok(await report(client, person, plugin.id, "1.1.0", "crash"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"


async def test_below_20_installs_never_halts(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    admin = await factory.admin()
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 19)
    for person in people:
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
        ok(await report(client, person, plugin.id, "1.1.0", "crash"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"
    assert await halt_records(client, admin, version.id) == []


async def test_signals_of_users_who_never_installed_it_do_not_make_up_the_20(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    plugin, version = await rolling_version(factory)
    await _installed_by(client, factory, plugin.id, 10)
    for person in await users(factory, 15):
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"


async def test_a_repeated_install_of_one_user_counts_once_toward_the_20(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 19)
    ok(await install(client, people[0], plugin.id, "1.1.0"), 200)
    ok(await install(client, people[0], plugin.id, "1.0.0"), 200)
    ok(await install(client, people[0], plugin.id, "1.1.0"), 200)
    for person in people[:10]:
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
    assert (await version_stat_rows(sessionmaker, plugin.id))["1.1.0"].installs == 19
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"


async def test_the_twentieth_install_is_judged_too(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    # Judged at each signal: 5 uninstalls among 19 installs wait for the 20th install.
    admin = await factory.admin()
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 19)
    for person in people[:5]:
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"
    await _installed_by(client, factory, plugin.id, 1)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "halted"
    [record] = await halt_records(client, admin, version.id)
    assert record["detail"]["trigger"] == "automatic"


async def test_abuse_reports_never_halt(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 20)
    for person in people:
        ok(await report(client, person, plugin.id, "1.1.0", "abuse"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"


async def test_repeated_crash_reports_of_one_user_count_as_one_user(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 20)
    for person in people[:4]:
        ok(await report(client, person, plugin.id, "1.1.0", "crash"), 201)
        ok(await report(client, person, plugin.id, "1.1.0", "crash"), 200)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"


async def test_crash_reports_of_another_version_do_not_halt_it(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 20)
    for person in people:
        ok(await report(client, person, plugin.id, "1.0.0", "crash"), 201)
        ok(await uninstall(client, person, plugin.id, "1.0.0"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"


async def test_a_full_version_never_halts(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    admin = await factory.admin()
    plugin = await factory.plugin()
    version = await factory.version(plugin, "1.1.0")
    people = await _installed_by(client, factory, plugin.id, 20)
    for person in people:
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
        ok(await report(client, person, plugin.id, "1.1.0", "crash"), 201)
    row = await version_row(sessionmaker, version.id)
    assert (row.rollout_state, row.rollout_percent, row.rollout_halted_reason) == (
        "full",
        100,
        None,
    )
    assert await halt_records(client, admin, version.id) == []


async def test_a_halted_version_takes_signals_without_halting_again(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    admin = await factory.admin()
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 20)
    for person in people:
        ok(await report(client, person, plugin.id, "1.1.0", "crash"), 201)
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "halted"
    assert len(await halt_records(client, admin, version.id)) == 1
    stats = (await version_stat_rows(sessionmaker, plugin.id))["1.1.0"]
    assert (stats.installs, stats.uninstalls, stats.crash_users) == (20, 20, 20)


async def test_a_version_resumed_after_an_automatic_halt_is_judged_again(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    admin = await factory.admin()
    owner = await factory.developer()
    plugin, version = await rolling_version(factory, owner)
    people = await _installed_by(client, factory, plugin.id, 20)
    for person in people[:5]:
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "halted"
    path = f"/api/v1/developer/plugins/{plugin.id}/versions/{version.id}/rollout/resume"
    ok(await client.post(path, headers=owner.headers))
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"
    # Judged afresh: the signals before the resume no longer count (all-time it is still
    # 25 %, which would halt it again at once and undo the owner's decision).
    ok(await report(client, people[0], plugin.id, "1.1.0", "abuse"), 201)
    ok(await uninstall(client, people[5], plugin.id, "1.1.0"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"
    assert len(await halt_records(client, admin, version.id)) == 1
    # What comes after the resume is judged as before: 20 new installs, and 4 of them
    # uninstalling it beside the one above is 5 of 20, over 20 %.
    newcomers = await _installed_by(client, factory, plugin.id, 20)
    for person in newcomers[:3]:
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"  # 4 of 20
    ok(await uninstall(client, newcomers[3], plugin.id, "1.1.0"), 201)  # 5 of 20
    row = await version_row(sessionmaker, version.id)
    assert row.rollout_state == "halted"
    assert row.rollout_halted_reason is not None
    assert row.rollout_halted_reason.startswith("automatic:")
    assert len(await halt_records(client, admin, version.id)) == 2


async def test_halt_thresholds_follow_the_settings(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions, app: FastAPI
) -> None:
    set_halt_settings(app, min_installs=5, uninstall_percent=50.0, crash_percent=90.0)
    admin = await factory.admin()
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 5)
    for person in people[:4]:  # 80 % crashed: not over 90 %
        ok(await report(client, person, plugin.id, "1.1.0", "crash"), 201)
    for person in people[:2]:  # 40 % uninstalled: not over 50 %
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"
    ok(await uninstall(client, people[2], plugin.id, "1.1.0"), 201)  # 60 %
    row = await version_row(sessionmaker, version.id)
    assert row.rollout_state == "halted"
    assert row.rollout_halted_reason is not None
    assert row.rollout_halted_reason.startswith("automatic:")
    [record] = await halt_records(client, admin, version.id)
    assert record["detail"]["trigger"] == "automatic"


async def test_crash_threshold_follows_the_settings(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions, app: FastAPI
) -> None:
    set_halt_settings(app, min_installs=4, crash_percent=25.0)
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 4)
    ok(await report(client, people[0], plugin.id, "1.1.0", "crash"), 201)  # 25 %
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"
    ok(await report(client, people[1], plugin.id, "1.1.0", "crash"), 201)  # 50 %
    assert (await version_row(sessionmaker, version.id)).rollout_state == "halted"


async def test_a_higher_minimum_of_installs_holds_the_halt_back(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions, app: FastAPI
) -> None:
    set_halt_settings(app, min_installs=25)
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 24)
    for person in people[:12]:
        ok(await uninstall(client, person, plugin.id, "1.1.0"), 201)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"
    await _installed_by(client, factory, plugin.id, 1)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "halted"


# ---------------------------------------------------------------- concurrency


async def test_concurrent_crash_reports_halt_exactly_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    admin = await factory.admin()
    plugin, version = await rolling_version(factory)
    people = await _installed_by(client, factory, plugin.id, 20)
    responses = await asyncio.gather(
        *(report(client, person, plugin.id, "1.1.0", "crash") for person in people)
    )
    assert [r.status_code for r in responses] == [201] * 20, [r.text for r in responses]
    row = await version_row(sessionmaker, version.id)
    assert row.rollout_state == "halted"
    assert row.rollout_halted_reason is not None
    assert row.rollout_halted_reason.startswith("automatic:")
    [record] = await halt_records(client, admin, version.id)
    assert record["detail"]["trigger"] == "automatic"
    assert await _audit_count(sessionmaker, version.id, "ROLLOUT_HALT") == 1
    stats = (await version_stat_rows(sessionmaker, plugin.id))["1.1.0"]
    assert (stats.installs, stats.crash_reports, stats.crash_users) == (20, 20, 20)
    assert (await daily_rows(sessionmaker, plugin.id))[today()].crash_reports == 20
    assert len([s for s in await signal_rows(sessionmaker, plugin.id) if s.kind == "crash"]) == 20


async def test_concurrent_installs_uninstalls_and_crashes_halt_exactly_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions, app: FastAPI
) -> None:
    set_halt_settings(app, min_installs=10)
    plugin, version = await rolling_version(factory)
    people = await users(factory, 10)
    # Everyone installs at once; then everyone uninstalls and reports a crash at once:
    # the version crosses a threshold once, and halts once.
    installs = await asyncio.gather(*(install(client, p, plugin.id, "1.1.0") for p in people))
    calls = [uninstall(client, person, plugin.id, "1.1.0") for person in people]
    calls += [report(client, person, plugin.id, "1.1.0", "crash") for person in people]
    responses = [*installs, *await asyncio.gather(*calls)]
    assert [r.status_code for r in responses] == [201] * 30, Counter(r.text for r in responses)
    assert (await version_row(sessionmaker, version.id)).rollout_state == "halted"
    assert await _audit_count(sessionmaker, version.id, "ROLLOUT_HALT") == 1
    stats = (await version_stat_rows(sessionmaker, plugin.id))["1.1.0"]
    assert (stats.installs, stats.uninstalls, stats.crash_users) == (10, 10, 10)


async def test_concurrent_first_installs_of_a_rolling_version_all_count(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    plugin, version = await rolling_version(factory)
    people = await users(factory, 20)
    responses = await asyncio.gather(
        *(install(client, person, plugin.id, "1.1.0") for person in people)
    )
    assert [r.status_code for r in responses] == [201] * 20, Counter(r.text for r in responses)
    stats = (await version_stat_rows(sessionmaker, plugin.id))["1.1.0"]
    assert stats.installs == 20
    assert (await daily_rows(sessionmaker, plugin.id))[today()].installs == 20
    assert (await version_row(sessionmaker, version.id)).rollout_state == "rolling"
