"""A search answered in SQL (the index off, building, or declining) asks its counts and
ids on aiosqlite's thread on SQLite, where read sessions run on the event loop's
(catalog.search_engines.DatabaseEngine, db.make_read_engine); the page's rows and the
answer are those of any browse."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import event

from tests.factories import Factory
from tests.helpers import app_engines, ok


async def test_a_search_in_sql_runs_off_the_loop_and_answers_as_before(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    app.state.settings = app.state.settings.model_copy(update={"search_index": False})
    match = await factory.plugin(name="Thunderstorm Radar")
    await factory.plugin(name="Calendar Sync")
    by_engine: dict[str, list[str]] = {"threaded": [], "inline": []}

    def recorder(name: str) -> Any:
        def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            by_engine[name].append(statement)

        return record

    listeners = [(engine, recorder(name)) for name, engine in app_engines(app).items()]
    for engine, record in listeners:
        event.listen(engine, "before_cursor_execute", record)
    try:
        data = ok(await client.get("/api/v1/plugins/browse", params={"q": "thunderstorm"}))
    finally:
        for engine, record in listeners:
            event.remove(engine, "before_cursor_execute", record)
    assert data["total"] == 1
    assert [item["id"] for item in data["items"]] == [match.id]
    if app.state.read_engine is None:  # PostgreSQL: one engine, nothing to move
        assert app.state.search_sessionmaker is None
        return
    searches = [s for s in by_engine["threaded"] if "plugin_search" in s]
    assert searches, by_engine["threaded"]  # the FTS statements, on the thread's engine
    assert not [s for s in by_engine["inline"] if "plugin_search" in s]
    # The page's rows, in the request's own (inline) session.
    assert [s for s in by_engine["inline"] if "FROM plugins" in s]
