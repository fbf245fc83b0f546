from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.market import Market, running_market


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Market]:
    """One live server per test module (and worker); tests use distinct plugin keys."""
    with running_market(tmp_path_factory.mktemp("market")) as live:
        yield live
