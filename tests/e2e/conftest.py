from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.market import Market, running_market


@pytest.fixture(scope="session")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Market]:
    """One live server per test session (and worker), shared by every e2e module: tests use
    plugin keys, user names and folders no other e2e test uses."""
    with running_market(tmp_path_factory.mktemp("market")) as live:
        yield live
