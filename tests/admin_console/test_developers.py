"""Developer identity review in the console: the API's identity review."""

from __future__ import annotations

import httpx

from marketplace.models import IdentityStatus, Role
from tests.admin_console.helpers import logged_in, post_form
from tests.factories import Account, Factory
from tests.helpers import ok


async def _status(client: httpx.AsyncClient, developer: Account) -> dict[str, object]:
    data: dict[str, object] = ok(
        await client.get("/api/v1/developer/identity/status", headers=developer.headers)
    )
    return data


async def test_approving_an_identity_verifies_the_developer(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    developer = await factory.user(Role.DEVELOPER, identity=IdentityStatus.PENDING)
    await logged_in(client, admin)
    page = await client.get(f"/console/developers/{developer.id}")
    assert page.status_code == 200 and developer.email in page.text
    response = await post_form(
        client, f"/console/developers/{developer.id}", {"decision": "approve"}
    )
    assert response.status_code == 303
    assert (await _status(client, developer))["status"] == "verified"


async def test_rejecting_an_identity_needs_a_note(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    developer = await factory.user(Role.DEVELOPER, identity=IdentityStatus.PENDING)
    await logged_in(client, admin)
    url = f"/console/developers/{developer.id}"
    refused = await post_form(client, url, {"decision": "reject"})
    assert refused.status_code == 400
    assert (await _status(client, developer))["status"] == "pending"
    response = await post_form(client, url, {"decision": "reject", "note": "name mismatch"})
    assert response.status_code == 303
    status = await _status(client, developer)
    assert (status["status"], status["reviewNote"]) == ("rejected", "name mismatch")


async def test_approving_an_unsubmitted_identity_shows_the_services_refusal(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    developer = await factory.developer(verified=False)
    await logged_in(client, admin)
    page = await client.get(f"/console/developers/{developer.id}")
    assert 'value="approve"' not in page.text  # nothing to decide
    response = await post_form(
        client, f"/console/developers/{developer.id}", {"decision": "approve"}
    )
    assert response.status_code == 409
    assert "Cannot review an identity that is unverified" in response.text
    assert (await _status(client, developer))["status"] == "unverified"


async def test_unknown_developers_are_a_404_page(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    user = await factory.user(Role.USER)  # an account, but no developer profile
    await logged_in(client, admin)
    for ref in ("00000000-0000-0000-0000-000000000000", "nope", user.id):
        response = await client.get(f"/console/developers/{ref}")
        assert response.status_code == 404
        assert "Developer does not exist" in response.text
