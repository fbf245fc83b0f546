from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.market import Market, running_market
from tests.e2e.topology import EMBEDDED, Topology, scaled_out, scaled_out_wanted


@pytest.fixture(scope="session")
def topology() -> Iterator[Topology]:
    """The PostgreSQL run serves the end-to-end tests from the scaled-out topology
    (4 workers, PostgreSQL, S3, Redis); the SQLite run from the embedded default."""
    if not scaled_out_wanted():
        yield EMBEDDED
        return
    with scaled_out() as scaled:
        yield scaled


@pytest.fixture(scope="session")
def market(tmp_path_factory: pytest.TempPathFactory, topology: Topology) -> Iterator[Market]:
    """One live server per test session (and worker), shared by every e2e module: tests use
    plugin keys, user names and folders no other e2e test uses."""
    with running_market(tmp_path_factory.mktemp("market"), topology) as live:
        yield live
        # Whatever the e2e tests did to it, DESIGN.md's invariants still hold.
        assert live.broken_invariants() == []
