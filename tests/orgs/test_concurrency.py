"""Membership changes at the same moment (CONTRACT 17): the organization's row lock makes
them one after the other, so an organization always keeps an owner. On SQLite writers are
serialised already; on PostgreSQL these requests run in parallel transactions."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx

from marketplace.models import Organization, OrgRole
from tests.factories import Account, Factory
from tests.helpers import ok
from tests.orgs.helpers import Sessions, add, remove, roles

ROUNDS = 6


async def _pairs(factory: Factory) -> list[tuple[Organization, Account, Account]]:
    """Organizations with exactly two owners each."""
    found = []
    for _ in range(ROUNDS):
        first, second = await factory.developer(), await factory.developer()
        org = await factory.org(first, members={second.id: OrgRole.OWNER})
        found.append((org, first, second))
    return found


async def test_two_owners_removing_each_other_at_once_leave_one_owner(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    pairs = await _pairs(factory)
    calls = []
    for org, first, second in pairs:
        calls += [
            remove(client, first, org.slug, second.id),
            remove(client, second, org.slug, first.id),
        ]
    responses = await asyncio.gather(*calls)
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: ROUNDS, 403: ROUNDS}, [r.text for r in responses]
    for org, first, second in pairs:
        left = await roles(sessionmaker, org.id)
        assert list(left.values()) == ["owner"], left
        assert set(left) < {first.id, second.id}


async def test_two_owners_demoting_each_other_at_once_leave_one_owner(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    pairs = await _pairs(factory)
    calls = []
    for org, first, second in pairs:
        calls += [
            add(client, first, org.slug, second.email, "member"),
            add(client, second, org.slug, first.email, "member"),
        ]
    responses = await asyncio.gather(*calls)
    assert Counter(r.status_code for r in responses) == {200: ROUNDS, 403: ROUNDS}
    for org, _first, _second in pairs:
        assert sorted((await roles(sessionmaker, org.id)).values()) == ["member", "owner"]


async def test_two_owners_leaving_at_once_leave_one_owner(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    pairs = await _pairs(factory)
    calls = []
    for org, first, second in pairs:
        calls += [
            remove(client, first, org.slug, first.id),
            remove(client, second, org.slug, second.id),
        ]
    responses = await asyncio.gather(*calls)
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: ROUNDS, 409: ROUNDS}, [r.text for r in responses]
    for org, _first, _second in pairs:
        assert list((await roles(sessionmaker, org.id)).values()) == ["owner"]


async def test_one_account_added_twice_at_once_is_one_member(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, partner, newcomer = [await factory.developer() for _ in range(3)]
    org = await factory.org(owner, members={partner.id: OrgRole.OWNER})
    responses = await asyncio.gather(
        add(client, owner, org.slug, newcomer.email, "member"),
        add(client, partner, org.slug, newcomer.email, "member"),
    )
    assert sorted(r.status_code for r in responses) == [200, 201], [r.text for r in responses]
    assert (await roles(sessionmaker, org.id))[newcomer.id] == "member"
    members = ok(
        await client.get(f"/api/v1/developer/orgs/{org.slug}/members", headers=owner.headers)
    )
    assert len(members["items"]) == 3
