"""POST /api/v1/plugins/rate/{pluginId}: one rating per user, aggregates kept exact."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import Plugin, Rating
from tests.factories import Account, Factory
from tests.helpers import err, field_names, ok

API = "/api/v1/plugins"


async def rate(
    client: httpx.AsyncClient, user: Account, plugin_id: str, **body: Any
) -> httpx.Response:
    return await client.post(f"{API}/rate/{plugin_id}", json=body, headers=user.headers)


async def aggregates(
    sessionmaker: async_sessionmaker[AsyncSession], plugin_id: str
) -> tuple[int, int]:
    async with sessionmaker() as session:
        plugin = await session.get(Plugin, plugin_id)
        assert plugin is not None
        return plugin.rating_sum, plugin.rating_count


async def installed_user(factory: Factory, plugin: Plugin) -> Account:
    user = await factory.user()
    await factory.install(user, plugin)
    return user


async def test_first_rating_is_201_and_counts(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    plugin = await factory.plugin()
    user = await installed_user(factory, plugin)
    data = ok(await rate(client, user, plugin.plugin_key, score=4, comment="Useful"), 201)
    assert (data["pluginId"], data["score"], data["comment"]) == (plugin.id, 4, "Useful")
    assert (data["ratingAverage"], data["ratingCount"]) == (4.0, 1)
    assert await aggregates(sessionmaker, plugin.id) == (4, 1)
    detail = ok(await client.get(f"{API}/detail/{plugin.id}"))
    assert (detail["ratingAverage"], detail["ratingCount"]) == (4.0, 1)


async def test_rating_again_is_200_and_replaces_the_first(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    plugin = await factory.plugin()
    user = await installed_user(factory, plugin)
    first = ok(await rate(client, user, plugin.id, score=2, comment="meh"), 201)
    second = ok(await rate(client, user, plugin.id, score=5), 200)
    assert second["id"] == first["id"]
    assert (second["score"], second["comment"]) == (5, None)
    assert (second["ratingAverage"], second["ratingCount"]) == (5.0, 1)
    assert await aggregates(sessionmaker, plugin.id) == (5, 1)
    async with sessionmaker() as session:
        rows = (await session.scalars(select(Rating).where(Rating.plugin_id == plugin.id))).all()
    assert [(r.score, r.comment) for r in rows] == [(5, None)]


async def test_average_of_several_users_is_rounded(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    for score in (5, 4, 4):
        ok(await rate(client, await installed_user(factory, plugin), plugin.id, score=score), 201)
    detail = ok(await client.get(f"{API}/detail/{plugin.id}"))
    assert (detail["ratingAverage"], detail["ratingCount"]) == (4.33, 3)


async def test_rating_appears_in_reviews(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin()
    user = await installed_user(factory, plugin)
    rating = ok(await rate(client, user, plugin.id, score=3, comment="ok"), 201)
    reviews = ok(await client.get(f"{API}/reviews/{plugin.id}"))
    assert reviews["items"] == [
        {
            "id": rating["id"],
            "userName": user.name,
            "score": 3,
            "comment": "ok",
            "createdAt": rating["createdAt"],
        }
    ]
    assert (reviews["average"], reviews["count"]) == (3.0, 1)


async def test_rating_after_purchase_without_install_is_allowed(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.purchase(user, plugin)
    ok(await rate(client, user, plugin.id, score=5), 201)


async def test_rating_without_install_or_purchase_is_403(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    err(await rate(client, user, plugin.id, score=5), 403, "RATING_NOT_ALLOWED")
    assert await aggregates(sessionmaker, plugin.id) == (0, 0)


async def test_rating_with_only_a_pending_purchase_is_403(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.purchase(user, plugin, status="pending")
    err(await rate(client, user, plugin.id, score=5), 403, "RATING_NOT_ALLOWED")


async def test_rating_own_plugin_is_403(client: httpx.AsyncClient, factory: Factory) -> None:
    owner = await factory.developer()
    plugin = await factory.plugin(owner)
    await factory.install(owner, plugin)
    err(await rate(client, owner, plugin.id, score=5), 403, "RATING_NOT_ALLOWED")


async def test_rating_unlisted_plugin_is_404(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin()
    user = await installed_user(factory, plugin)
    await factory.update_plugin(plugin, review_status="taken_down", enabled=False)
    err(await rate(client, user, plugin.id, score=5), 404, "PLUGIN_NOT_FOUND")


async def test_rating_unknown_plugin_is_404_before_the_body_is_checked(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    err(await rate(client, user, "no-such-plugin", score=9), 404, "PLUGIN_NOT_FOUND")


async def test_rating_needs_login(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin()
    err(await client.post(f"{API}/rate/{plugin.id}", json={"score": 5}), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("score", [0, 6, 4.5, "5", None])
async def test_rating_score_must_be_an_integer_from_1_to_5(
    client: httpx.AsyncClient, factory: Factory, score: Any
) -> None:
    plugin = await factory.plugin()
    user = await installed_user(factory, plugin)
    error = err(await rate(client, user, plugin.id, score=score), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"score"}


async def test_rating_comment_of_2000_characters_is_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    user = await installed_user(factory, plugin)
    data = ok(await rate(client, user, plugin.id, score=4, comment="好" * 2000), 201)
    assert len(data["comment"]) == 2000


async def test_rating_comment_over_2000_characters_is_400(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    plugin = await factory.plugin()
    user = await installed_user(factory, plugin)
    error = err(
        await rate(client, user, plugin.id, score=4, comment="x" * 2001), 400, "VALIDATION_FAILED"
    )
    assert field_names(error) == {"comment"}
    assert await aggregates(sessionmaker, plugin.id) == (0, 0)


async def test_rating_with_unknown_field_is_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    user = await installed_user(factory, plugin)
    error = err(await rate(client, user, plugin.id, score=4, stars=4), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"stars"}


async def test_concurrent_ratings_of_many_users_are_all_counted(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    plugin = await factory.plugin()
    users = [await installed_user(factory, plugin) for _ in range(10)]
    scores = [1, 2, 3, 4, 5, 5, 4, 3, 2, 1]
    responses = await asyncio.gather(
        *(rate(client, u, plugin.id, score=s) for u, s in zip(users, scores, strict=True))
    )
    assert [r.status_code for r in responses] == [201] * 10
    assert await aggregates(sessionmaker, plugin.id) == (sum(scores), 10)
    detail = ok(await client.get(f"{API}/detail/{plugin.id}"))
    assert (detail["ratingAverage"], detail["ratingCount"]) == (3.0, 10)


async def test_concurrent_ratings_of_one_user_keep_one_rating(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    plugin = await factory.plugin()
    user = await installed_user(factory, plugin)
    responses = await asyncio.gather(
        *(rate(client, user, plugin.id, score=s) for s in (1, 5, 3, 2))
    )
    assert sorted(r.status_code for r in responses) == [200, 200, 200, 201]
    async with sessionmaker() as session:
        rows = (await session.scalars(select(Rating).where(Rating.plugin_id == plugin.id))).all()
    assert len(rows) == 1
    # Whichever update committed last, the aggregate holds exactly that one score.
    assert await aggregates(sessionmaker, plugin.id) == (rows[0].score, 1)


async def test_a_new_comment_with_the_same_score_reaches_the_cached_reviews(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """The plugin's counters do not change, the rating row does: its trigger moves the
    catalogue generation (migration 0016), so the cached page is not served again."""
    plugin = await factory.plugin()
    user = await installed_user(factory, plugin)
    ok(await rate(client, user, plugin.id, score=3, comment="old"), 201)
    first = ok(await client.get(f"{API}/reviews/{plugin.id}"))
    assert [item["comment"] for item in first["items"]] == ["old"]

    ok(await rate(client, user, plugin.id, score=3, comment="new"), 200)

    again = ok(await client.get(f"{API}/reviews/{plugin.id}"))
    assert [item["comment"] for item in again["items"]] == ["new"]


async def test_a_developer_renamed_is_shown_renamed_on_cached_pages(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    from sqlalchemy import text

    plugin = await factory.plugin()
    before = ok(await client.get(f"{API}/detail/{plugin.id}"))
    async with sessionmaker() as session:
        await session.execute(
            text("UPDATE users SET name = 'Renamed Developer' WHERE id = :id"),
            {"id": plugin.owner_id},
        )
        await session.execute(
            text(
                "UPDATE developer_profiles SET display_name = 'Renamed Developer' "
                "WHERE user_id = :id"
            ),
            {"id": plugin.owner_id},
        )
        await session.commit()

    after = ok(await client.get(f"{API}/detail/{plugin.id}"))
    assert before["developer"]["name"] != "Renamed Developer"
    assert after["developer"]["name"] == "Renamed Developer"
