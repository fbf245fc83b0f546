"""Conditional GET, Cache-Control, and the generation that keeps every process truthful."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.app import create_app, shutdown
from marketplace.catalog.cache import (
    CachedBody,
    CatalogCache,
    Generation,
    catalog_cache,
    read_generation,
)
from marketplace.config import Settings
from tests.catalog.listing_changes import change_listing, count_a_download
from tests.factories import Factory
from tests.helpers import err, ok

API = "/api/v1/plugins"


@pytest.fixture
async def other_process(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A second app on the same database: another worker or host with its own cache."""
    app = create_app(settings)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test"
    ) as http:
        yield http
    await shutdown(app)


async def _paths(factory: Factory) -> list[str]:
    plugin = await factory.plugin(plugin_key="cached")
    await factory.version(plugin)
    return [
        f"{API}/browse",
        f"{API}/detail/{plugin.id}",
        f"{API}/versions/{plugin.id}",
        f"{API}/categories",
        f"{API}/featured",
        f"{API}/popular",
        f"{API}/reviews/{plugin.id}",
    ]


async def test_public_reads_answer_304_to_a_matching_etag(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    for path in await _paths(factory):
        first = await client.get(path)
        assert first.status_code == 200, path
        etag = first.headers["etag"]
        again = await client.get(path, headers={"If-None-Match": etag})
        assert again.status_code == 304, path
        assert again.content == b""
        assert again.headers["etag"] == etag


async def test_weak_and_listed_etags_match_too(client: httpx.AsyncClient, factory: Factory) -> None:
    await factory.plugin()
    etag = (await client.get(f"{API}/browse")).headers["etag"]
    listed = await client.get(f"{API}/browse", headers={"If-None-Match": f'"other", W/{etag}'})
    assert listed.status_code == 304


async def test_stale_etag_gets_the_full_response(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin()
    response = await client.get(f"{API}/browse", headers={"If-None-Match": '"stale"'})
    assert ok(response)["total"] == 1


async def test_anonymous_public_reads_are_publicly_cacheable(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    for path in await _paths(factory):
        response = await client.get(path)
        assert response.headers["cache-control"] == "public, no-cache", path
        assert response.headers["vary"] == "Authorization", path


async def test_responses_with_purchase_state_are_private(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    for path in (f"{API}/browse", f"{API}/detail/{plugin.id}", f"{API}/popular"):
        response = await client.get(path, headers=user.headers)
        assert response.headers["cache-control"] == "private, no-cache", path


async def test_logged_in_reads_without_purchase_state_stay_public(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    user = await factory.user()
    plugin = await factory.plugin()
    for path in (f"{API}/categories", f"{API}/versions/{plugin.id}"):
        response = await client.get(path, headers=user.headers)
        assert response.headers["cache-control"] == "public, no-cache", path


async def test_private_etag_differs_by_caller_state(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    buyer, browser = await factory.user(), await factory.user()
    plugin = await factory.plugin(is_free=False)
    await factory.purchase(buyer, plugin)
    bought = (await client.get(f"{API}/detail/{plugin.id}", headers=buyer.headers)).headers
    not_bought = (await client.get(f"{API}/detail/{plugin.id}", headers=browser.headers)).headers
    anonymous = (await client.get(f"{API}/detail/{plugin.id}")).headers
    assert len({bought["etag"], not_bought["etag"], anonymous["etag"]}) == 3


async def test_takedown_changes_etag_and_hides_the_plugin_at_once(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin()
    etag = (await client.get(f"{API}/detail/{plugin.id}")).headers["etag"]
    await factory.update_plugin(plugin, review_status="taken_down", enabled=False)
    err(
        await client.get(f"{API}/detail/{plugin.id}", headers={"If-None-Match": etag}),
        404,
        "PLUGIN_NOT_FOUND",
    )
    assert ok(await client.get(f"{API}/browse"))["total"] == 0


async def test_anonymous_cache_hit_runs_no_query_through_the_orm(
    client: httpx.AsyncClient, factory: Factory, statements: list[str]
) -> None:
    """A hit is one generation check on the reader's own connection, then cached bytes."""
    await factory.plugin()
    first = await client.get(f"{API}/browse")
    statements.clear()
    again = await client.get(f"{API}/browse")
    assert again.content == first.content
    assert statements == []


async def test_logged_in_cache_hit_queries_only_purchases(
    client: httpx.AsyncClient, factory: Factory, statements: list[str]
) -> None:
    user = await factory.user()
    await factory.plugin()
    await client.get(f"{API}/browse", headers=user.headers)
    statements.clear()
    await client.get(f"{API}/browse", headers=user.headers)
    queries = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    # One statement: the account's existence and its purchase states together.
    assert len(queries) == 1, queries
    assert "FROM users LEFT OUTER JOIN purchases" in queries[0]


async def test_generation_falls_back_to_the_session_when_the_reader_cannot_answer(
    factory: Factory,
) -> None:
    class Unavailable:
        async def read(self) -> Generation | None:
            return None

        def close(self) -> None:
            pass

    async with factory.sessions() as session:
        await change_listing(session)
        await session.commit()
    async with factory.sessions() as session:
        expected = await read_generation(session)
        assert await read_generation(session, Unavailable()) == expected
        assert expected.generation >= 1


async def test_a_write_in_one_process_is_seen_by_another_at_once(
    client: httpx.AsyncClient, other_process: httpx.AsyncClient, factory: Factory
) -> None:
    plugin = await factory.plugin(plugin_key="shared", name="Before")
    # Both processes cache the current answer...
    assert ok(await client.get(f"{API}/detail/shared"))["name"] == "Before"
    assert ok(await other_process.get(f"{API}/detail/shared"))["name"] == "Before"
    # ...and a write through either (here: neither, straight to the database) reaches both.
    await factory.update_plugin(plugin, name="After")
    assert ok(await client.get(f"{API}/detail/shared"))["name"] == "After"
    assert ok(await other_process.get(f"{API}/detail/shared"))["name"] == "After"


async def test_an_install_in_one_process_updates_counts_in_another(
    app: FastAPI,
    client: httpx.AsyncClient,
    other_process: httpx.AsyncClient,
    factory: Factory,
) -> None:
    from tests.commerce.helpers import FakeBlobStore

    app.state.blob_store = FakeBlobStore()
    user = await factory.user()
    plugin = await factory.plugin()
    await factory.version(plugin)
    assert ok(await other_process.get(f"{API}/detail/{plugin.id}"))["downloadCount"] == 0
    ok(
        await client.post(
            f"{API}/install/{plugin.id}", json={"version": "1.0.0"}, headers=user.headers
        ),
        201,
    )
    assert ok(await other_process.get(f"{API}/detail/{plugin.id}"))["downloadCount"] == 1


async def test_totals_survive_an_install_but_not_a_listing_change(
    client: httpx.AsyncClient, factory: Factory, statements: list[str]
) -> None:
    plugin = await factory.plugin()
    await client.get(f"{API}/browse")
    async with factory.sessions() as session:
        await count_a_download(session, plugin.id)
        await session.commit()
    statements.clear()
    await client.get(f"{API}/browse")
    # The total without q is read from the kept counts (migration 0010).
    assert not [s for s in statements if "catalog_listing_counts" in s]
    await factory.update_plugin(plugin, category="ai")
    statements.clear()
    await client.get(f"{API}/browse")
    assert [s for s in statements if "catalog_listing_counts" in s]


async def _numbers(factory: Factory) -> Generation:
    async with factory.sessions() as session:
        return await read_generation(session)


async def test_a_listing_change_moves_both_numbers_once_committed(factory: Factory) -> None:
    before = await _numbers(factory)
    async with factory.sessions() as session:
        await change_listing(session)
        await session.commit()
    after = await _numbers(factory)
    assert (after.generation, after.listing) == (before.generation + 1, before.listing + 1)


async def test_a_counters_change_leaves_the_listing_number(factory: Factory) -> None:
    plugin = await factory.plugin()
    before = await _numbers(factory)
    async with factory.sessions() as session:
        await count_a_download(session, plugin.id)
        await session.commit()
    after = await _numbers(factory)
    assert (after.generation, after.listing) == (before.generation + 1, before.listing)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE plugins SET name = 'Renamed' WHERE id = :id",
        "UPDATE plugins SET enabled = false WHERE id = :id",
        "UPDATE plugin_versions SET changelog = 'new' WHERE plugin_id = :id",
        "DELETE FROM plugin_versions WHERE plugin_id = :id",
        "DELETE FROM plugins WHERE id = :id",
    ],
)
async def test_any_writer_of_listed_data_moves_the_listing_number(
    factory: Factory, statement: str
) -> None:
    """Raw SQL too: the database moves the numbers, not the code that wrote."""
    plugin = await factory.plugin()
    await factory.version(plugin)
    before = await _numbers(factory)
    async with factory.sessions() as session:
        await session.execute(text(statement), {"id": plugin.id})
        await session.commit()
    after = await _numbers(factory)
    assert after.generation > before.generation
    assert after.listing > before.listing


async def test_a_write_that_changes_nothing_moves_nothing(factory: Factory) -> None:
    plugin = await factory.plugin()
    before = await _numbers(factory)
    async with factory.sessions() as session:
        await session.execute(
            text("UPDATE plugins SET name = name, download_count = download_count WHERE id = :id"),
            {"id": plugin.id},
        )
        await session.commit()
    assert await _numbers(factory) == before


async def test_a_transaction_of_many_changes_moves_the_generation_at_least_once(
    factory: Factory, is_postgres: bool
) -> None:
    """PostgreSQL moves it once, at commit (after every row lock: one lock order); SQLite
    moves it by each row, under its single writer lock."""
    plugins = [await factory.plugin() for _ in range(3)]
    before = await _numbers(factory)
    async with factory.sessions() as session:
        for plugin in plugins:
            await count_a_download(session, plugin.id)
        await change_listing(session)
        await session.commit()
    after = await _numbers(factory)
    moved = (after.generation - before.generation, after.listing - before.listing)
    assert moved == ((1, 1) if is_postgres else (4, 1))


async def test_a_change_rolled_back_moves_nothing(factory: Factory) -> None:
    plugin = await factory.plugin()
    before = await _numbers(factory)
    async with factory.sessions() as session:
        await change_listing(session)
        await count_a_download(session, plugin.id)
        await session.rollback()
    assert await _numbers(factory) == before


def test_cache_drops_entries_of_an_older_generation() -> None:
    cache = CatalogCache()
    old, new = Generation(1, 1), Generation(2, 1)
    cache.store_response(old, "k", _body(b"old"))
    assert cache.response(old, "k") is not None
    assert cache.response(new, "k") is None
    # A reader still holding the older generation neither reads nor fills the newer cache.
    cache.store_response(old, "k", _body(b"old"))
    assert cache.response(new, "k") is None
    assert cache.response(old, "k") is None


def test_cache_evicts_least_recently_used_beyond_its_byte_budget() -> None:
    # Each entry counts twice its body plus 256 bytes: three of these fit, not four.
    cache = CatalogCache(max_entries=100, max_bytes=2600)
    gen = Generation(1, 1)
    for key in ("a", "b", "c"):
        cache.store_response(gen, key, _body(b"x" * 300))
    cache.response(gen, "a")  # a is now the most recent
    cache.store_response(gen, "d", _body(b"x" * 300))
    assert cache.response(gen, "b") is None
    assert cache.response(gen, "a") is not None
    assert cache.response(gen, "d") is not None


def _body(body: bytes) -> CachedBody:
    return CachedBody(body=body, etag='"e"', plugin_ids=(), shape="none")


async def test_invalid_token_is_401_even_when_the_answer_is_cached(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin()
    ok(await client.get(f"{API}/browse"))
    err(
        await client.get(f"{API}/browse", headers={"Authorization": "Bearer expired.or.forged"}),
        401,
        "UNAUTHORIZED",
    )


async def test_invalid_parameters_are_400_even_when_other_pages_are_cached(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin()
    ok(await client.get(f"{API}/browse"))
    err(await client.get(f"{API}/browse", params={"page": 0}), 400, "VALIDATION_FAILED")


async def test_coalesced_reads_never_return_a_value_read_before_the_caller_arrived() -> None:
    import asyncio

    from marketplace.catalog.cache import PostgresGenerationReader

    class Counting(PostgresGenerationReader):
        def __init__(self) -> None:
            super().__init__(engine=None)  # type: ignore[arg-type]
            self.reads = 0
            self.gate = asyncio.Event()

        async def _read_once(self) -> Generation | None:
            self.reads += 1
            number = self.reads
            await self.gate.wait()
            return Generation(number, number)

    reader = Counting()
    first = asyncio.create_task(reader.read())
    await asyncio.sleep(0)  # the first read is now in flight
    later = [asyncio.create_task(reader.read()) for _ in range(5)]
    await asyncio.sleep(0)
    reader.gate.set()
    assert (await first).generation == 1
    # All five arrived during read 1, so they share read 2, which started after them.
    assert {(await task).generation for task in later} == {2}
    assert reader.reads == 2


async def test_a_session_in_a_transaction_reads_the_generation_its_rows_belong_to(
    app: FastAPI, factory: Factory
) -> None:
    """On SQLite a read transaction keeps its snapshot: a generation read on another
    connection after a write could be newer than the rows the session goes on to read, and
    an answer built from those older rows would be cached under the newer number."""
    cache = catalog_cache(app)
    async with app.state.sessionmaker() as session:
        await read_generation(session)  # the transaction (and on SQLite its snapshot) begins
        async with factory.sessions() as writer:
            await change_listing(writer)
            await writer.commit()
        own = await read_generation(session)  # what the session's own reads see
        assert await read_generation(session, cache.reader) == own


WATCHED_TABLES = {
    "plugins",
    "plugin_versions",
    "categories",
    "ratings",
    "developer_profiles",
    "users",
}


async def test_the_triggers_watch_every_table_and_plugin_column(
    sessionmaker: async_sessionmaker[AsyncSession], is_postgres: bool
) -> None:
    """The triggers as installed (a migration that rebuilds a table on SQLite drops its
    triggers): on SQLite, the plugin UPDATE trigger names every column of the table, so a
    column added later cannot change a plugin unseen."""
    async with sessionmaker() as session:
        if is_postgres:
            rows = await session.execute(
                text(
                    "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                    "WHERE t.tgname = c.relname || '_catalog_changed'"
                )
            )
            assert {name for (name,) in rows} == WATCHED_TABLES
            return
        triggers = dict(
            (
                await session.execute(
                    text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
                )
            ).all()
        )
        columns = [row[1] for row in await session.execute(text("PRAGMA table_info(plugins)"))]
    watched = {name.rsplit("_changed_", 1)[0] for name in triggers if "_changed_" in name}
    assert watched == WATCHED_TABLES
    update = triggers["plugins_changed_update"]
    assert columns and all(f"OLD.{column} IS NOT NEW.{column}" in update for column in columns)
