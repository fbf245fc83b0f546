"""The search index on disk (catalog.search_store): one writer per directory, readers that
reload its commits, a restart that catches up from the change notes instead of
rebuilding, and a rebuild when the files show a catalogue the database never had.

A second SearchIndex on the same directory in this process stands for another worker:
Tantivy's writer lock is a lock file, so it refuses the second writer exactly as it
refuses another process."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.catalog import search_index as search_index_module
from marketplace.catalog import search_store, service
from marketplace.catalog.cache import GENERATION_SQL
from marketplace.catalog.schemas import BrowseSort
from marketplace.catalog.search_index import SearchIndex, search_index
from marketplace.catalog.search_store import index_directory
from marketplace.kit.pagination import Page
from marketplace.models import Plugin
from tests.catalog.conftest import OpenIndex
from tests.catalog.listing_changes import change_listing
from tests.factories import Factory

PAGE = Page(1, 50)


def _query(q: str, sort: BrowseSort = BrowseSort.NAME) -> service.BrowseQuery:
    return service.BrowseQuery(q=q, category=None, type=None, is_free=None, sort=sort)


async def _generation(session: AsyncSession) -> int:
    row = (await session.execute(text(GENERATION_SQL))).first()
    assert row is not None
    return int(row[0])


async def _sql(session: AsyncSession, query: service.BrowseQuery) -> tuple[int, list[str]]:
    total = await service.count_listed(session, query)
    rows = await service.browse_page(session, query, PAGE)
    return total, [row.plugin.id for row in rows]


async def _found(
    index: SearchIndex, sessionmaker: async_sessionmaker[AsyncSession], q: str
) -> tuple[int, list[str]] | None:
    async with sessionmaker() as session:
        found = await index.find(session, await _generation(session), _query(q), PAGE)
    return None if found is None else (found.total, found.ids)


async def _expected(
    sessionmaker: async_sessionmaker[AsyncSession], q: str
) -> tuple[int, list[str]]:
    async with sessionmaker() as session:
        return await _sql(session, _query(q))


async def _catalogue(factory: Factory, count: int = 6) -> list[Plugin]:
    owner = await factory.developer()
    return [
        await factory.plugin(owner, name=f"Weather helper {n}", description=f"number {n}")
        for n in range(count)
    ]


async def _rename(
    sessionmaker: async_sessionmaker[AsyncSession], plugin: Plugin, name: str
) -> None:
    async with sessionmaker() as session:
        await session.execute(
            text("UPDATE plugins SET name = :name WHERE id = :id"), {"name": name, "id": plugin.id}
        )
        await session.commit()


async def _restored_under_the_files(
    factory: Factory, sessionmaker: async_sessionmaker[AsyncSession], open_index: OpenIndex
) -> list[Plugin]:
    """Files indexed, their process stopped, then an older copy of the database "restored":
    generation 1, no notes, and plugins[1] renamed Storm behind the index's back."""
    plugins = await _catalogue(factory)
    first = open_index()
    await _found(first, sessionmaker, "weather")
    first.close()
    async with sessionmaker() as session:
        await session.execute(
            text("UPDATE plugins SET name = 'Storm' WHERE id = :id"), {"id": plugins[1].id}
        )
        await session.execute(text("UPDATE catalog_generation SET generation = 1"))
        await session.execute(text("DELETE FROM plugin_search_changes"))
        await session.commit()
    return plugins


def _count_documents(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the documents the index makes from here on."""
    made: list[str] = []
    original = search_index_module.document

    def counting(row: Any) -> Any:
        made.append(row.id)
        return original(row)

    monkeypatch.setattr(search_index_module, "document", counting)
    return made


async def test_one_index_writes_and_another_reads_the_same_files(
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugins = await _catalogue(factory)
    writer = open_index()
    reader = open_index()
    monkeypatch.setattr(search_index_module, "READER_WAIT_SECONDS", 10.0)  # a slow machine
    assert await _found(writer, sessionmaker, "weather") == await _expected(sessionmaker, "weather")
    assert writer.writing and not reader.writing
    assert await _found(reader, sessionmaker, "weather") == (6, [p.id for p in plugins])

    # A change: the reader's request holds the new generation; the writer's follower (not
    # the reader) brings the files there, and the reader waits for that commit.
    committed = writer._store.view().generation
    await _rename(sessionmaker, plugins[2], "Storm chaser")
    await asyncio.sleep(5 * search_index_module.FOLLOW_SECONDS)
    assert writer._store.view().generation == committed  # nobody waits: no commit yet
    storm = await _found(reader, sessionmaker, "storm")
    assert storm == (1, [plugins[2].id]) == await _expected(sessionmaker, "storm")
    assert not reader.writing
    async with sessionmaker() as session:
        assert reader.generation >= await _generation(session)
    assert await _found(reader, sessionmaker, "weather") == await _expected(sessionmaker, "weather")


async def test_a_reader_answers_in_sql_until_the_writer_has_built(
    factory: Factory, sessionmaker: async_sessionmaker[AsyncSession], open_index: OpenIndex
) -> None:
    await _catalogue(factory)
    writer = open_index()
    reader = open_index()
    writer._claim()  # another worker holds the writer, and has not built yet
    assert await _found(reader, sessionmaker, "weather") is None
    assert not reader.ready and not reader.writing
    await _found(writer, sessionmaker, "weather")
    assert await _found(reader, sessionmaker, "weather") == await _expected(sessionmaker, "weather")


async def test_a_restart_opens_the_files_and_catches_up_from_the_notes(
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugins = await _catalogue(factory)
    first = open_index()
    await _found(first, sessionmaker, "weather")
    first.close()  # the process stops
    await _rename(sessionmaker, plugins[0], "Storm one")
    await _rename(sessionmaker, plugins[4], "Storm two")
    made = _count_documents(monkeypatch)

    restarted = open_index()
    assert await _found(restarted, sessionmaker, "storm") == await _expected(sessionmaker, "storm")
    assert await _found(restarted, sessionmaker, "weather") == (
        4,
        [p.id for p in plugins if p not in (plugins[0], plugins[4])],
    )
    # Only the two changed plugins were indexed again: no rebuild.
    assert sorted(made) == sorted([plugins[0].id, plugins[4].id])
    assert restarted.writing and restarted._build_task is None


async def test_files_ahead_of_the_database_are_rebuilt(
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An older copy of the database restored under the same files: the files show a
    generation the database has not reached, so nothing in them can be trusted."""
    plugins = await _restored_under_the_files(factory, sessionmaker, open_index)
    made = _count_documents(monkeypatch)

    restarted = open_index()
    assert await _found(restarted, sessionmaker, "storm") == (1, [plugins[1].id])
    assert sorted(made) == sorted(p.id for p in plugins)  # rebuilt from the rows
    async with sessionmaker() as session:
        assert restarted.generation == await _generation(session) < 10


async def test_a_reader_takes_the_writer_over_when_its_process_has_gone(
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugins = await _catalogue(factory)
    writer = open_index()
    reader = open_index()
    await _found(writer, sessionmaker, "weather")
    assert await _found(reader, sessionmaker, "weather") is not None
    writer.close()  # its process ends: the lock file is free, nobody follows
    await _rename(sessionmaker, plugins[3], "Storm")
    monkeypatch.setattr(search_index_module, "READER_WAIT_SECONDS", 0.05)
    reader._claim_after = float("inf")

    assert await _found(reader, sessionmaker, "storm") is None  # waited, then SQL
    assert not reader.writing and reader._claim_after == 0.0  # it will try at the next one
    assert await _found(reader, sessionmaker, "storm") == (1, [plugins[3].id])
    assert reader.writing


def test_the_directory_is_named_by_layout_and_database(tmp_path: Path) -> None:
    url = "postgresql+asyncpg://app:secret@db.internal:5432/market"
    same = index_directory(tmp_path, "postgresql+asyncpg://app:rotated@db.internal:5432/market")
    other = index_directory(tmp_path, "postgresql+asyncpg://app:secret@db.internal:5432/other")
    here = index_directory(tmp_path, url)
    assert here == same != other
    assert here.parent == tmp_path and here.name.startswith(search_store.LAYOUT + "-")
    assert "secret" not in here.name


async def test_the_writer_removes_directories_of_older_layouts_only(
    factory: Factory,
    app: FastAPI,
    sessionmaker: async_sessionmaker[AsyncSession],
    tmp_path: Path,
) -> None:
    root = tmp_path / "search-index"
    older = root / "layout-0-0123456789abcdef"
    another_database = root / f"{search_store.LAYOUT}-fedcba9876543210"
    for folder in (older, another_database):
        folder.mkdir(parents=True)
        (folder / "meta.json").write_text("{}")
    app.state.settings.search_index_dir = root
    await _catalogue(factory, 2)
    index = search_index(app)
    assert index is not None
    assert await _found(index, sessionmaker, "weather") is not None
    assert index.writing
    assert not older.exists() and another_database.exists()
    own = index_directory(root, app.state.settings.database_url)
    assert (own / "meta.json").exists()


async def test_closing_gives_the_writer_up(
    factory: Factory, sessionmaker: async_sessionmaker[AsyncSession], open_index: OpenIndex
) -> None:
    await _catalogue(factory, 2)
    first = open_index()
    await _found(first, sessionmaker, "weather")
    second = open_index()
    assert not second._store.claim_writer(search_index_module.HEAP_BYTES)
    first.close()
    assert second._store.claim_writer(search_index_module.HEAP_BYTES)


async def test_a_change_to_no_plugin_needs_no_commit(
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The generation moves without any plugin noted (a category changed): a reader finds
    that in the notes and answers at once, with no writer to wait for."""
    await _catalogue(factory)
    writer = open_index()
    reader = open_index()
    await _found(writer, sessionmaker, "weather")
    await _found(reader, sessionmaker, "weather")
    reader._claim_after = float("inf")  # it does not take the writer over here
    writer.close()  # nobody follows from here on
    monkeypatch.setattr(search_index_module, "READER_WAIT_SECONDS", 0.0)
    async with sessionmaker() as session:
        await change_listing(session)
        await session.commit()
    assert await _found(reader, sessionmaker, "weather") == await _expected(sessionmaker, "weather")
    assert not reader.writing
    async with sessionmaker() as session:
        assert reader.generation == await _generation(session)


async def test_prepare_opens_and_catches_up_before_any_search(
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugins = await _catalogue(factory)
    first = open_index()
    await _found(first, sessionmaker, "weather")
    first.close()
    await _rename(sessionmaker, plugins[0], "Storm")

    index = open_index()
    index.prepare()
    assert index._preparing is not None
    await index._preparing
    assert index.writing and index.ready
    async with sessionmaker() as session:
        assert index.generation == await _generation(session)
    made = _count_documents(monkeypatch)
    assert await _found(index, sessionmaker, "storm") == (1, [plugins[0].id])
    assert made == []  # the search found the work done


async def test_the_service_prepares_its_index_at_start(
    factory: Factory, own_app: FastAPI, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    await _catalogue(factory, 3)
    async with own_app.router.lifespan_context(own_app):
        index = own_app.state.search_index
        await index._preparing
        assert index.writing and index.ready
        async with sessionmaker() as session:
            assert index.generation == await _generation(session)
    assert not index.writing  # given up at shutdown


async def test_readers_never_answer_from_files_ahead_of_the_database(
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An older copy of the database restored under the files: a reader that opens them
    first (before any writer looked) sees a generation the database has not reached and
    answers in SQL; once the writer has rebuilt, it answers from the new build, at that
    build's lower generation."""
    plugins = await _restored_under_the_files(factory, sessionmaker, open_index)
    reader = open_index()
    reader._claim_after = float("inf")
    held = open_index()
    held._claim()  # a writer that has not looked yet
    assert held.writing and not reader.writing
    assert await _found(reader, sessionmaker, "storm") is None
    assert await _found(held, sessionmaker, "storm") == (1, [plugins[1].id])  # rebuilt
    assert await _found(reader, sessionmaker, "storm") == (1, [plugins[1].id])
    async with sessionmaker() as session:
        assert reader.generation == held.generation == await _generation(session)


async def test_a_stale_wanted_number_never_becomes_the_generation(
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
) -> None:
    """The wanted file only wakes the writer: it commits the database's own generation."""
    plugins = await _catalogue(factory)
    writer = open_index()
    await _found(writer, sessionmaker, "weather")
    await _rename(sessionmaker, plugins[0], "Storm")
    async with sessionmaker() as session:
        current = await _generation(session)
    assert writer._store.want(10**9)
    for _ in range(500):  # the follower wakes, commits the database's generation
        await asyncio.sleep(search_index_module.FOLLOW_SECONDS)
        if writer._store.view().generation == current:
            break
    assert writer._store.view().generation == current < 10**9
    await asyncio.sleep(5 * search_index_module.FOLLOW_SECONDS)
    assert writer._store.view().generation == current  # and nothing more
    restarted_files = writer._store.path / search_store.WANTED_FILE
    writer.close()
    again = open_index()
    await _found(again, sessionmaker, "weather")
    assert not restarted_files.exists()  # a new writer forgets what earlier readers wanted


async def test_an_unusable_directory_leaves_searches_to_sql(
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
    tmp_path: Path,
) -> None:
    await _catalogue(factory, 2)
    (tmp_path / "blocked").write_text("a file where the index's folder should be")
    index = open_index("blocked/index")
    assert await _found(index, sessionmaker, "weather") is None
    assert index.failures == 1 and not index.ready


async def test_a_reader_far_behind_does_not_trust_the_notes(
    factory: Factory,
    sessionmaker: async_sessionmaker[AsyncSession],
    open_index: OpenIndex,
) -> None:
    """Notes older than the kept window are deleted, so their absence proves nothing."""
    await _catalogue(factory, 2)
    writer = open_index()
    reader = open_index()
    reader._claim_after = float("inf")
    await _found(writer, sessionmaker, "weather")
    async with sessionmaker() as session:
        far = await _generation(session) + search_index_module.KEPT_GENERATIONS + 1
        found = await reader.find(session, far, _query("weather"), PAGE)
    assert found is None and reader.generation < far
