"""Portal test helpers: a developer logged in to /portal, and its forms posted as the
pages post them (with the page's CSRF token)."""

from __future__ import annotations

import httpx

from tests.admin_console.helpers import csrf_of
from tests.factories import PASSWORD, Account


async def portal_login(
    client: httpx.AsyncClient, email: str, password: str = PASSWORD
) -> httpx.Response:
    form_page = await client.get("/portal/login")
    assert form_page.status_code == 200, form_page.text
    data = {"email": email, "password": password, "csrf_token": csrf_of(form_page.text)}
    return await client.post("/portal/login", data=data)


async def in_portal(client: httpx.AsyncClient, account: Account) -> None:
    response = await portal_login(client, account.email)
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/portal"


async def post_from(
    client: httpx.AsyncClient, page_path: str, action: str, data: dict[str, str]
) -> httpx.Response:
    """POST `data` to `action` with the CSRF token of the page at `page_path`."""
    page = await client.get(page_path)
    assert page.status_code == 200, page.text
    return await client.post(action, data={**data, "csrf_token": csrf_of(page.text)})
