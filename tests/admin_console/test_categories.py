"""Categories in the console: the admin API's category service."""

from __future__ import annotations

import httpx

from tests.admin_console.helpers import logged_in, post_form, text_of
from tests.factories import Account, Factory
from tests.helpers import ok

PATH = "/console/categories"


async def _categories(client: httpx.AsyncClient, admin: Account) -> dict[str, dict[str, object]]:
    data = ok(await client.get("/api/v1/admin/plugins/categories", headers=admin.headers))
    return {c["key"]: c for c in data["items"]}


async def test_the_page_lists_every_category_with_its_use(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    await factory.plugin(category="design")
    await logged_in(client, admin)
    page = await client.get(PATH)
    assert page.status_code == 200
    for key in ("productivity", "design", "channel"):
        assert f'<td class="mono">{key}</td>' in page.text


async def test_add_a_category(client: httpx.AsyncClient, factory: Factory) -> None:
    admin = await factory.admin()
    await logged_in(client, admin)
    response = await post_form(
        client,
        PATH,
        {
            "action": "add",
            "key": "finance",
            "name": "Finance",
            "name_zh": "金融",
            "sort_order": "5",
        },
    )
    assert response.status_code == 303
    added = (await _categories(client, admin))["finance"]
    assert added == {"key": "finance", "name": "Finance", "nameZh": "金融", "sortOrder": 5}
    assert "Category added" in (await client.get(response.headers["location"])).text


async def test_a_category_key_the_api_refuses_is_refused_here(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    await logged_in(client, admin)
    response = await post_form(
        client, PATH, {"action": "add", "key": "Bad Key", "name": "X", "name_zh": "X"}
    )
    assert response.status_code == 400
    assert "Key:" in text_of(response.text)
    assert 'value="Bad Key"' in response.text  # what was typed stays in the form
    assert "Bad Key" not in await _categories(client, admin)


async def test_a_sort_order_that_is_not_a_number_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    await logged_in(client, admin)
    response = await post_form(
        client,
        PATH,
        {"action": "add", "key": "finance", "name": "F", "name_zh": "F", "sort_order": "top"},
    )
    assert response.status_code == 400
    assert "Sort order: must be a whole number" in response.text
    assert "finance" not in await _categories(client, admin)


async def test_rename_a_category(client: httpx.AsyncClient, factory: Factory) -> None:
    admin = await factory.admin()
    await logged_in(client, admin)
    response = await post_form(
        client,
        PATH,
        {"action": "rename", "key": "ai", "name": "Artificial Intelligence", "name_zh": "AI"},
    )
    assert response.status_code == 303
    renamed = (await _categories(client, admin))["ai"]
    assert (renamed["name"], renamed["nameZh"]) == ("Artificial Intelligence", "AI")


async def test_delete_an_unused_category(client: httpx.AsyncClient, factory: Factory) -> None:
    admin = await factory.admin()
    await logged_in(client, admin)
    response = await post_form(client, PATH, {"action": "delete", "key": "office"})
    assert response.status_code == 303
    assert "office" not in await _categories(client, admin)


async def test_deleting_a_used_category_is_refused_with_the_services_message(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    await factory.plugin(category="design")
    await logged_in(client, admin)
    response = await post_form(client, PATH, {"action": "delete", "key": "design"})
    assert response.status_code == 409
    assert 'Category "design" is used by 1 plugin(s)' in text_of(response.text)
    assert "design" in await _categories(client, admin)


async def test_renaming_an_unknown_category_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    await logged_in(client, admin)
    response = await post_form(client, PATH, {"action": "rename", "key": "nope", "name": "N"})
    assert response.status_code == 404
    assert 'Category "nope" does not exist' in text_of(response.text)


async def test_category_forms_need_the_csrf_token(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    await logged_in(client, admin)
    response = await client.post(PATH, data={"action": "delete", "key": "office"})
    assert response.status_code == 403
    assert "office" in await _categories(client, admin)
