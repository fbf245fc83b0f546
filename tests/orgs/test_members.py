"""Organizations and their members through the API (CONTRACT 17): every flow and every
refusal, with the state read back afterwards."""

from __future__ import annotations

import httpx
import pytest

from marketplace.models import OrgRole, Role
from tests.accounts.tokens import issue
from tests.factories import Factory
from tests.helpers import err, field_names, ok
from tests.orgs.helpers import (
    ORGS,
    Sessions,
    add,
    audit,
    create,
    members,
    org_row,
    remove,
    roles,
)

# ---------------------------------------------------------------- create


async def test_create_answers_201_with_the_caller_as_owner(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    dev = await factory.developer()
    data = ok(await create(client, dev, "acme-tools", "Acme Tools"), 201)
    assert set(data) == {"id", "slug", "name", "role", "createdAt"}
    assert (data["slug"], data["name"], data["role"]) == ("acme-tools", "Acme Tools", "owner")
    row = await org_row(sessionmaker, "acme-tools")
    assert row is not None
    assert (row.id, row.created_by) == (data["id"], dev.id)
    assert await roles(sessionmaker, row.id) == {dev.id: "owner"}
    [record] = await audit(sessionmaker, row.id)
    assert (record.action, record.actor_id, record.resource_type) == (
        "ORG_CREATE",
        dev.id,
        "organization",
    )
    assert (record.outcome, record.trigger) == ("owner", "developer")


async def test_a_slug_in_use_is_409_and_changes_nothing(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    first, second = await factory.developer(), await factory.developer()
    ok(await create(client, first, "acme-taken", "First"), 201)
    err(await create(client, second, "acme-taken", "Second"), 409, "INVALID_STATE")
    row = await org_row(sessionmaker, "acme-taken")
    assert row is not None
    assert row.name == "First"
    assert await roles(sessionmaker, row.id) == {first.id: "owner"}
    assert ok(await client.get(ORGS, headers=second.headers))["items"] == []


@pytest.mark.parametrize(
    "slug", ["Acme", "ab", "1acme", "acme_tools", "acme tools", "a" * 65, "publish"]
)
async def test_a_slug_off_the_plugin_key_pattern_is_400(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions, slug: str
) -> None:
    dev = await factory.developer()
    error = err(await create(client, dev, slug), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"slug"}
    assert await org_row(sessionmaker, slug) is None


async def test_a_uuid_shaped_slug_is_400(client: httpx.AsyncClient, factory: Factory) -> None:
    dev = await factory.developer()
    slug = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert field_names(err(await create(client, dev, slug), 400, "VALIDATION_FAILED")) == {"slug"}


async def test_create_refuses_unknown_fields_and_a_blank_name(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    body = {"slug": "acme-extra", "name": "Acme", "owner": "x"}
    error = err(await client.post(ORGS, json=body, headers=dev.headers), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"owner"}
    error = err(await create(client, dev, "acme-blank", "   "), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"name"}


async def test_create_needs_a_verified_developer(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    err(await client.post(ORGS, json={"slug": "acme-anon", "name": "A"}), 401, "UNAUTHORIZED")
    user = await factory.user(Role.USER)
    err(await create(client, user, "acme-user"), 403, "FORBIDDEN")
    unverified = await factory.developer(verified=False)
    err(await create(client, unverified, "acme-unverified"), 403, "DEVELOPER_NOT_VERIFIED")
    for slug in ("acme-anon", "acme-user", "acme-unverified"):
        assert await org_row(sessionmaker, slug) is None


# ---------------------------------------------------------------- list mine


async def test_list_shows_the_callers_organizations_with_its_role(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, other = await factory.developer(), await factory.developer()
    owned = await factory.org(dev, slug="acme-mine", name="Mine")
    joined = await factory.org(other, slug="acme-joined", name="Joined")
    await factory.member(joined, dev)
    await factory.org(other, slug="acme-not-mine")
    items = ok(await client.get(ORGS, headers=dev.headers))["items"]
    assert [(i["slug"], i["name"], i["role"]) for i in items] == [
        ("acme-mine", "Mine", "owner"),
        ("acme-joined", "Joined", "member"),
    ]
    assert items[0]["id"] == owned.id
    assert set(items[0]) == {"id", "slug", "name", "role", "createdAt"}


async def test_an_unverified_developer_may_list_its_organizations(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    unverified = await factory.developer(verified=False)
    org = await factory.org()
    await factory.member(org, unverified)
    items = ok(await client.get(ORGS, headers=unverified.headers))["items"]
    assert [(i["slug"], i["role"]) for i in items] == [(org.slug, "member")]


async def test_listing_organizations_needs_the_developer_role(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    err(await client.get(ORGS), 401, "UNAUTHORIZED")
    err(await client.get(ORGS, headers=(await factory.user()).headers), 403, "FORBIDDEN")


# ---------------------------------------------------------------- members: read


async def test_members_see_the_member_list_owners_first(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={member.id: OrgRole.MEMBER})
    for reader in (owner, member):
        items = ok(await members(client, reader, org.slug))["items"]
        assert [(i["userId"], i["email"], i["name"], i["role"]) for i in items] == [
            (owner.id, owner.email, owner.name, "owner"),
            (member.id, member.email, member.name, "member"),
        ]
        assert set(items[0]) == {"userId", "email", "name", "role", "addedAt"}


async def test_a_non_member_reading_members_is_403(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    org = await factory.org()
    outsider = await factory.developer()
    err(await members(client, outsider, org.slug), 403, "FORBIDDEN")


async def test_an_unknown_slug_is_404_not_found(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev = await factory.developer()
    error = err(await members(client, dev, "acme-nowhere"), 404, "NOT_FOUND")
    assert error["details"] == {"org": "acme-nowhere"}
    err(await add(client, dev, "acme-nowhere", dev.email), 404, "NOT_FOUND")
    err(await remove(client, dev, "acme-nowhere", dev.id), 404, "NOT_FOUND")


async def test_the_unknown_slug_is_found_before_the_body_is_read(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """CONTRACT 1: 404 before 400."""
    dev = await factory.developer()
    response = await client.post(
        f"{ORGS}/acme-nowhere/members", json={"email": "nope"}, headers=dev.headers
    )
    err(response, 404, "NOT_FOUND")
    org = await factory.org()
    response = await client.post(
        f"{ORGS}/{org.slug}/members", json={"email": "nope"}, headers=dev.headers
    )
    err(response, 403, "FORBIDDEN")


# ---------------------------------------------------------------- members: add


async def test_an_owner_adds_a_member_by_email(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, newcomer = await factory.developer(), await factory.developer()
    org = await factory.org(owner)
    data = ok(await add(client, owner, org.slug, newcomer.email.upper(), "member"), 201)
    assert (data["userId"], data["email"], data["role"]) == (newcomer.id, newcomer.email, "member")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner", newcomer.id: "member"}
    [record] = [r for r in await audit(sessionmaker, org.id) if r.action == "ORG_MEMBER_ADD"]
    assert (record.actor_id, record.outcome, record.trigger) == (owner.id, "member", "developer")
    assert record.note is not None
    assert newcomer.email in record.note
    # The newcomer sees the organization at once.
    items = ok(await client.get(ORGS, headers=newcomer.headers))["items"]
    assert [(i["slug"], i["role"]) for i in items] == [(org.slug, "member")]


async def test_an_owner_adds_another_owner(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, partner = await factory.developer(), await factory.developer()
    org = await factory.org(owner)
    assert ok(await add(client, owner, org.slug, partner.email, "owner"), 201)["role"] == "owner"
    assert await roles(sessionmaker, org.id) == {owner.id: "owner", partner.id: "owner"}


async def test_any_account_may_be_added_even_a_user(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner = await factory.developer()
    user = await factory.user(Role.USER)
    org = await factory.org(owner)
    ok(await add(client, owner, org.slug, user.email), 201)
    assert (await roles(sessionmaker, org.id))[user.id] == "member"


async def test_adding_a_member_again_sets_its_role_with_200(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={member.id: OrgRole.MEMBER})
    data = ok(await add(client, owner, org.slug, member.email, "owner"))
    assert (data["userId"], data["role"]) == (member.id, "owner")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner", member.id: "owner"}
    data = ok(await add(client, owner, org.slug, member.email, "member"))
    assert data["role"] == "member"
    assert (await roles(sessionmaker, org.id))[member.id] == "member"
    changes = [r for r in await audit(sessionmaker, org.id) if r.action == "ORG_MEMBER_ROLE"]
    assert sorted(r.outcome for r in changes) == ["member", "owner"]


async def test_adding_a_member_with_its_own_role_changes_and_audits_nothing(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={member.id: OrgRole.MEMBER})
    data = ok(await add(client, owner, org.slug, member.email, "member"))
    assert data["role"] == "member"
    assert await audit(sessionmaker, org.id) == []


async def test_an_unknown_email_is_404_user_not_found(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner = await factory.developer()
    org = await factory.org(owner)
    err(await add(client, owner, org.slug, "nobody@example.com"), 404, "USER_NOT_FOUND")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner"}
    assert await audit(sessionmaker, org.id) == []


async def test_a_member_who_is_not_an_owner_cannot_add_members(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, member, newcomer = [await factory.developer() for _ in range(3)]
    org = await factory.org(owner, members={member.id: OrgRole.MEMBER})
    err(await add(client, member, org.slug, newcomer.email), 403, "FORBIDDEN")
    err(await add(client, member, org.slug, member.email, "owner"), 403, "FORBIDDEN")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner", member.id: "member"}


async def test_a_non_member_cannot_add_members(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, outsider = await factory.developer(), await factory.developer()
    org = await factory.org(owner)
    err(await add(client, outsider, org.slug, outsider.email, "owner"), 403, "FORBIDDEN")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner"}


async def test_an_unverified_owner_cannot_change_members(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner = await factory.developer(verified=False)
    newcomer = await factory.developer()
    org = await factory.org(owner)
    err(await add(client, owner, org.slug, newcomer.email), 403, "DEVELOPER_NOT_VERIFIED")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"email": "not-an-email", "role": "member"}, "email"),
        ({"email": "a@example.com", "role": "admin"}, "role"),
        ({"email": "a@example.com"}, "role"),
        ({"role": "member"}, "email"),
    ],
)
async def test_a_member_body_that_does_not_validate_is_400(
    client: httpx.AsyncClient, factory: Factory, body: dict[str, str], field: str
) -> None:
    owner = await factory.developer()
    org = await factory.org(owner)
    response = await client.post(f"{ORGS}/{org.slug}/members", json=body, headers=owner.headers)
    assert field_names(err(response, 400, "VALIDATION_FAILED")) == {field}


async def test_demoting_the_last_owner_is_409(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={member.id: OrgRole.MEMBER})
    err(await add(client, owner, org.slug, owner.email, "member"), 409, "INVALID_STATE")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner", member.id: "member"}


async def test_an_owner_may_step_down_while_another_owner_remains(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, partner = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={partner.id: OrgRole.OWNER})
    assert ok(await add(client, owner, org.slug, owner.email, "member"))["role"] == "member"
    assert await roles(sessionmaker, org.id) == {owner.id: "member", partner.id: "owner"}
    # Not an owner any more: no further changes.
    err(await add(client, owner, org.slug, owner.email, "owner"), 403, "FORBIDDEN")


# ---------------------------------------------------------------- members: remove


async def test_an_owner_removes_a_member(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={member.id: OrgRole.MEMBER})
    items = ok(await remove(client, owner, org.slug, member.id))["items"]
    assert [(i["userId"], i["role"]) for i in items] == [(owner.id, "owner")]
    assert await roles(sessionmaker, org.id) == {owner.id: "owner"}
    [record] = await audit(sessionmaker, org.id)
    assert (record.action, record.actor_id, record.outcome) == (
        "ORG_MEMBER_REMOVE",
        owner.id,
        "removed",
    )
    assert record.note is not None
    assert member.email in record.note
    # The removed member no longer sees the organization nor its members.
    assert ok(await client.get(ORGS, headers=member.headers))["items"] == []
    err(await members(client, member, org.slug), 403, "FORBIDDEN")


async def test_the_last_owner_cannot_leave(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, member = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={member.id: OrgRole.MEMBER})
    err(await remove(client, owner, org.slug, owner.id), 409, "INVALID_STATE")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner", member.id: "member"}
    assert await audit(sessionmaker, org.id) == []


async def test_an_owner_may_leave_while_another_owner_remains(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, partner = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={partner.id: OrgRole.OWNER})
    items = ok(await remove(client, owner, org.slug, owner.id))["items"]
    assert [i["userId"] for i in items] == [partner.id]
    assert await roles(sessionmaker, org.id) == {partner.id: "owner"}
    # The other owner is now the last one.
    err(await remove(client, partner, org.slug, partner.id), 409, "INVALID_STATE")


async def test_an_owner_removes_another_owner(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, partner = await factory.developer(), await factory.developer()
    org = await factory.org(owner, members={partner.id: OrgRole.OWNER})
    ok(await remove(client, owner, org.slug, partner.id))
    assert await roles(sessionmaker, org.id) == {owner.id: "owner"}


async def test_a_member_who_is_not_an_owner_cannot_remove_anyone(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, member, other = [await factory.developer() for _ in range(3)]
    org = await factory.org(owner, members={member.id: OrgRole.MEMBER, other.id: OrgRole.MEMBER})
    for target in (other, owner, member):
        err(await remove(client, member, org.slug, target.id), 403, "FORBIDDEN")
    assert await roles(sessionmaker, org.id) == {
        owner.id: "owner",
        member.id: "member",
        other.id: "member",
    }


async def test_a_non_member_cannot_remove_anyone(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, outsider = await factory.developer(), await factory.developer()
    org = await factory.org(owner)
    err(await remove(client, outsider, org.slug, owner.id), 403, "FORBIDDEN")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner"}


async def test_removing_someone_who_is_not_a_member_is_404_user_not_found(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, outsider = await factory.developer(), await factory.developer()
    org = await factory.org(owner)
    err(await remove(client, owner, org.slug, outsider.id), 404, "USER_NOT_FOUND")
    err(await remove(client, owner, org.slug, "no-such-user"), 404, "USER_NOT_FOUND")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner"}


async def test_a_removed_owner_loses_its_rights_at_once(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    owner, partner, newcomer = [await factory.developer() for _ in range(3)]
    org = await factory.org(owner, members={partner.id: OrgRole.OWNER})
    ok(await remove(client, owner, org.slug, partner.id))
    err(await add(client, partner, org.slug, newcomer.email), 403, "FORBIDDEN")
    err(await remove(client, partner, org.slug, owner.id), 403, "FORBIDDEN")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner"}


# ---------------------------------------------------------------- publishing tokens


async def test_a_publishing_token_reads_organizations_but_cannot_change_them(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: Sessions
) -> None:
    """Membership is the account's business: the token policy (auth.pat) lets a token write
    the plugin group only."""
    owner, newcomer = await factory.developer(), await factory.developer()
    org = await factory.org(owner)
    pat = await issue(client, owner)
    items = ok(await client.get(ORGS, headers=pat.headers))["items"]
    assert [i["slug"] for i in items] == [org.slug]
    response = await client.post(
        f"{ORGS}/{org.slug}/members",
        json={"email": newcomer.email, "role": "member"},
        headers=pat.headers,
    )
    err(response, 403, "FORBIDDEN")
    response = await client.post(
        ORGS, json={"slug": "acme-by-token", "name": "A"}, headers=pat.headers
    )
    err(response, 403, "FORBIDDEN")
    assert await roles(sessionmaker, org.id) == {owner.id: "owner"}
    assert await org_row(sessionmaker, "acme-by-token") is None
