from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from marketplace.catalog.search_index import SearchIndex
from tests.helpers import recording_statements


@pytest.fixture
def statements(app: FastAPI) -> Iterator[list[str]]:
    """Every SQL statement the app sends while the test runs."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    with recording_statements(app, record):
        yield seen


OpenIndex = Callable[..., SearchIndex]


@pytest.fixture
def open_index(app: FastAPI, tmp_path: Path) -> Iterator[OpenIndex]:
    """Opens an index in this test's folder (a second one on the same files is a reader,
    as another worker's would be); each is closed after the test."""
    opened: list[SearchIndex] = []

    def open_(name: str = "index", **options: Any) -> SearchIndex:
        index = SearchIndex(app.state.sessionmaker, tmp_path / name, **options)
        opened.append(index)
        return index

    yield open_
    for index in opened:
        index.close()
